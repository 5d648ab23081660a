"""corral attach: show a tmux job's window to the person at this terminal."""

from __future__ import annotations

import argparse

from corral.errors import CorralError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", help="the job's id (a unique prefix will do)")


def main(args: argparse.Namespace) -> int:
    from corral.adapters import tmux
    from corral.service.jobs import resolve

    record = resolve(args.id)
    pane = record.extra.get("tmux_pane")
    if record.backend != "tmux" or not pane:
        raise CorralError(
            f"job {record.id[:8]} does not run in tmux (backend {record.backend}); "
            "start it with `corral run --backend tmux` to attach to it"
        )
    if record.final:
        raise CorralError(f"job {record.id[:8]} has ended; its window is closed")
    socket = record.extra.get("tmux_socket") or None
    server = tmux.Server(path=socket) if socket else tmux.Server.from_env()
    return tmux.attach(str(pane), server)
