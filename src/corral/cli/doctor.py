"""corral doctor: check corral's state folders, ledger, database, reservations, daemon
socket and Claude Code installs; say what is wrong and what `--fix` does; `--fix` does it.

Exit status 0 when nothing is wrong (or `--fix` fixed all of it), 1 otherwise."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from corral.errors import EXIT_FAILURE


def configure(parser: argparse.ArgumentParser) -> None:
    parser.usage = "corral doctor [--fix] [--cwd DIR] [--json]"
    parser.add_argument("--fix", action="store_true", help="do every fix listed as safe to do")
    parser.add_argument(
        "--cwd",
        metavar="DIR",
        help="the project whose Claude Code settings to check (default: here)",
    )
    parser.add_argument("--json", action="store_true", help="print the versioned JSON envelope")


def main(args: argparse.Namespace) -> int:
    from corral.core.text import printable
    from corral.service.doctor import diagnose
    from corral.surfaces.claude import checkup

    project = Path(args.cwd or os.getcwd()).resolve()
    home = Path(os.path.expanduser("~"))
    findings = diagnose(apply=args.fix, extra=(checkup.check(project, home),))
    left = [f for f in findings if f.problem and not f.fixed]
    if args.json:
        from corral.core.envelope import dumps

        print(dumps({"ok": not left, "findings": [f.to_json() for f in findings]}))
        return EXIT_FAILURE if left else 0
    for f in findings:
        label = "ok" if not f.problem else "fixed" if f.fixed else "PROBLEM"
        print(printable(f"{label:<8} {f.check}: {f.text}"))
        if f.problem and not f.fixed and f.fix:
            how = f"fix failed: {f.error}" if f.error else f"--fix would {f.fix}"
            print(printable(f"{'':<8} {how}"))
    if left:
        fixable = sum(1 for f in left if f.fix and not f.error)
        tail = f"; `corral doctor --fix` fixes {fixable}" if fixable and not args.fix else ""
        print(f"{len(left)} problem(s){tail}")
    else:
        print("nothing wrong" if not any(f.fixed for f in findings) else "all fixed")
    return EXIT_FAILURE if left else 0
