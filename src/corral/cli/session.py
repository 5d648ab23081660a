"""corral session: end an agent session, keeping or terminating the processes it started."""

from __future__ import annotations

import argparse

from corral.errors import EXIT_FAILURE
from corral.service.sessions import ProcessView, Termination


def configure(parser: argparse.ArgumentParser) -> None:
    parser.usage = "corral session end SESSION [--keep | --terminate] [--json]"
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    end = sub.add_parser("end", help="end a session: keep (default) or terminate its processes")
    end.add_argument("session", metavar="SESSION")
    policy = end.add_mutually_exclusive_group()
    policy.add_argument("--keep", dest="policy", action="store_const", const="keep")
    policy.add_argument("--terminate", dest="policy", action="store_const", const="terminate")
    end.add_argument("--json", action="store_true", help="print the versioned JSON envelope")
    end.set_defaults(policy="keep")


def render_processes(views: list[ProcessView], empty: str) -> None:
    import sys

    from rich.console import Console
    from rich.table import Table

    from corral.cli.show import cell
    from corral.core.human import human_age, human_bytes, short_path

    console = Console(width=None if sys.stdout.isatty() else 200)
    if not views:
        console.print(cell(empty))
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    heads = ("PID", "BY", "SESSION", "JOB", "PORTS", "AGE", "CPU", "MEM", "FOLDER", "COMMAND")
    for name in heads:
        table.add_column(name, no_wrap=True, overflow="ellipsis", max_width=60)
    for v in views:
        row = (
            str(v.pid) + ("" if v.own else " (other user)"),
            v.attribution,
            (v.session or "-")[:12] + (" (agent gone)" if v.agent == "gone" else ""),
            (v.job or "-")[:8],
            " ".join(f":{p}" for p in v.ports) or "-",
            human_age(v.age_seconds),
            f"{v.cpu_percent:.1f}%",
            human_bytes(v.rss_bytes) if v.rss_bytes else "-",
            short_path(v.cwd) if v.cwd else "-",
            v.command or v.name,
        )
        table.add_row(*(cell(text) for text in row))
    console.print(table)


def report(result: Termination) -> None:
    import sys

    from corral.core.text import printable

    if not result.targets:
        print(printable(f"session {result.session}: nothing stopped"))
    for t in result.targets:
        detail = f" ({t.detail})" if t.detail else ""
        print(printable(f"  {t.role} pid {t.pid} [{t.attribution}]: {t.result.value}{detail}"))
    for error in result.errors:
        sys.stderr.write(f"corral session: {printable(error)}\n")


def main(args: argparse.Namespace) -> int:
    from corral.service.sessions import end_session

    result = end_session(args.session, args.policy)
    if args.json:
        from corral.core.envelope import dumps

        print(dumps(result.to_json(), result.errors))
    else:
        report(result)
    return 0 if result.ok else EXIT_FAILURE


def list_orphans(args: argparse.Namespace) -> int:
    """`corral ls --orphaned [--all-projects]`."""
    import sys

    from corral.errors import UsageError
    from corral.service.projects import project_root
    from corral.service.sessions import list_processes

    if not args.orphaned:
        raise UsageError("--all-projects goes with --orphaned")
    project = None if args.all_projects else project_root()
    listing = list_processes(args.session, orphaned=True, project=project)
    from corral.core.text import printable

    for warning in listing.warnings:
        sys.stderr.write(f"corral ls: warning: {printable(warning)}\n")
    if args.json:
        from corral.core.envelope import dumps

        print(dumps([v.to_json() for v in listing.processes], listing.warnings))
    else:
        where = "any project" if project is None else str(project)
        render_processes(listing.processes, f"no orphaned processes in {where}")
    return 0
