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
    from corral.adapters import ledger
    from corral.service import jobs

    chosen = sum([bool(args.ids), args.all, args.pid is not None])
    if chosen != 1:
        raise UsageError("name jobs by ID, or use --all, or --pid with --started-at")
    if args.session and not args.all:
        raise UsageError("--session goes with --all")
    if (args.pid is None) != (args.started_at is None):
        raise UsageError("--pid and --started-at go together")
    if args.pid is not None:
        from corral.service import sessions

        outcomes, errors = sessions.stop_identity(args.pid, args.started_at)
    else:
        records = ledger.read_all().records
        if args.all:
            targets = [
                r
                for r in records
                if not r.final and (args.session is None or r.session == args.session)
            ]
        else:
            targets = [jobs.resolve(ref, records) for ref in dict.fromkeys(args.ids)]
        outcomes, errors = jobs.stop_records(targets)
    if args.json:
        from corral.core.envelope import dumps

        print(dumps([o.to_json() for o in outcomes], errors))
    else:
        report(outcomes, errors, nothing="no running jobs" if args.all else "nothing to stop")
    return 0 if all(o.ok for o in outcomes) and not errors else EXIT_FAILURE


def report(outcomes: list[StopOutcome], errors: list[str], nothing: str) -> None:
    import sys

    from corral.core.text import printable

    if not outcomes:
        print(nothing)
    for o in outcomes:
        head = f"{o.job[:8]}  {o.state}"
        print(printable(f"{head}  {o.command}" if o.command else head))
        for t in o.targets:
            extra = f" ({t.detail})" if t.detail else ""
            print(printable(f"  {t.role} pid {t.pid}: {t.result.value}{extra}"))
        if o.note:
            print(printable(f"  {o.note}"))
    for error in errors:
        sys.stderr.write(f"corral stop: {printable(error)}\n")
