"""corral tui: the control room for people (also plain `corral` on a terminal).

corral tui [--session S] [--no-daemon]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--session", help="the agent session shown first (default: from the environment)"
    )
    parser.add_argument(
        "--no-daemon",
        action="store_true",
        help="take snapshots here instead of asking the daemon (which is started if needed)",
    )


def main(args: argparse.Namespace) -> int:
    from corral.cli.procs import current_session
    from corral.surfaces.tui.feed import LiveFeed

    folder = Path(os.getcwd())
    feed = LiveFeed(folder, use_daemon=not args.no_daemon)
    feed.prefetch()  # the first board is read while Textual loads
    from corral.surfaces.tui.app import ControlRoom

    ControlRoom(feed, folder=folder, session=current_session(args.session)).run()
    return 0
