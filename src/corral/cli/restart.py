"""corral restart: stop a job (verified, as `stop`) and start the same line again."""

from __future__ import annotations

import argparse
import os
import sys

from corral.errors import EXIT_FAILURE, UsageError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.usage = "corral restart ID|NAME [--ready SPEC] [--ready-timeout S] [--json]"
    parser.add_argument("ref", metavar="ID|NAME", help="the job: its name or id (a prefix will do)")
    parser.add_argument("--ready", metavar="SPEC", help="as for `corral run -d`")
    parser.add_argument("--ready-timeout", type=float, metavar="S", help="default 30")
    parser.add_argument("--json", action="store_true", help="print the versioned JSON envelope")


def main(args: argparse.Namespace) -> int:
    from corral.cli.run import print_started, report_readiness
    from corral.service import jobs
    from corral.service.readiness import DEFAULT_TIMEOUT, parse_spec
    from corral.service.restart import restart

    spec = parse_spec(args.ready) if args.ready is not None else None
    timeout = DEFAULT_TIMEOUT if args.ready_timeout is None else args.ready_timeout
    if not 0 < timeout <= 3600:
        raise UsageError("--ready-timeout takes seconds from 0 to 3600")
    record = jobs.resolve(args.ref)
    from corral.lowlevel.record import session_from

    session = session_from(os.environ)
    result = restart(record, session=session, ready=spec, ready_timeout=timeout)
    if args.json:
        from corral.core.envelope import dumps

        errors = [result.start.refusal] if result.start.refusal else []
        print(dumps(result.to_json(), errors))
        return 0 if result.ok else EXIT_FAILURE
    from corral.cli.stop import report

    report([result.stop], [], nothing="")
    if result.note:
        print(result.note)
    start = result.start
    if start.started is None:
        sys.stderr.write(f"corral restart: {start.refusal}\n")
        return EXIT_FAILURE
    print_started(start.started)
    if start.readiness is not None:
        return report_readiness(start.started.id, start.readiness, start.started.log)
    return 0
