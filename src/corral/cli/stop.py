"""corral stop: stop jobs, checking each process's identity before any signal."""

from __future__ import annotations

import argparse

from corral.errors import EXIT_FAILURE, UsageError
from corral.service.jobs import StopOutcome


def configure(parser: argparse.ArgumentParser) -> None:
    parser.usage = "corral stop ID... | --all [--session S] | --pid P --started-at T [--json]"
    parser.add_argument("ids", nargs="*", metavar="ID", help="job ids (a unique prefix will do)")
    parser.add_argument("--all", action="store_true", help="stop every running job")
    parser.add_argument("--session", help="with --all: only this agent session's jobs")
    parser.add_argument("--pid", type=int, help="stop by identity: the process id ...")
    parser.add_argument("--started-at", help="... and its start time, as `corral ls --json` shows")
    parser.add_argument("--json", action="store_true", help="print the versioned JSON envelope")


def main(args: argparse.Namespace) -> int:
    from corral.service import stopping

    if args.pid is not None or args.started_at is not None:
        if args.ids or args.all or args.session:
            raise UsageError("--pid and --started-at name one process: no ID, --all or --session")
        if args.pid is None or args.started_at is None:
            raise UsageError("--pid and --started-at go together")
        done = stopping.stop_identity(args.pid, args.started_at)
    else:
        done = stopping.stop(args.ids, every=args.all, session=args.session)
    if args.json:
        from corral.core.envelope import dumps

        print(dumps([o.to_json() for o in done.outcomes], done.errors))
    else:
        report(done.outcomes, done.errors, nothing=done.nothing)
    return 0 if done.ok else EXIT_FAILURE


def report(outcomes: list[StopOutcome], errors: list[str], nothing: str) -> None:
    import sys

    from corral.core.text import printable
    from corral.service.stopping import describe

    if not outcomes:
        print(nothing)
    for line in describe(outcomes):
        print(printable(line))
    for error in errors:
        sys.stderr.write(f"corral stop: {printable(error)}\n")
