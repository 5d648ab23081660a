"""corral statusline: the Claude Code status line band for a folder.

Claude Code's settings run the fast entry point (surfaces/claude/run_statusline.py);
this command is the same band for people and scripts: `corral statusline --cwd .`.
"""

from __future__ import annotations

import argparse
import os
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    parser.usage = "corral statusline [--cwd DIR] [--hint TEXT] [--then COMMAND] < STATUS_JSON"
    parser.add_argument(
        "--cwd", metavar="DIR", help="the session's folder (default: from the JSON on stdin)"
    )
    parser.add_argument("--hint", default="/procs", help="the command named at the end")
    parser.add_argument(
        "--then", metavar="COMMAND", help="another status line command, run after ours"
    )


def main(args: argparse.Namespace) -> int:
    from corral import paths
    from corral.surfaces.claude import statusline

    data = b""
    folder = os.path.abspath(args.cwd) if args.cwd else None
    if folder is None and not sys.stdin.isatty():
        import json

        data = sys.stdin.buffer.read()
        try:
            folder = statusline.session_folder(json.loads(data)) if data.strip() else None
        except ValueError:
            folder = None
    if folder is None:
        folder = os.getcwd()
    text = statusline.band(folder, str(paths.ledger_dir()), args.hint)
    if text:
        sys.stdout.write(text + "\n")
    sys.stdout.flush()
    if args.then:
        statusline.run_theirs(args.then, data)
    return 0
