"""corral ls: jobs with ports, age, process count, CPU, memory and folder."""

from __future__ import annotations

import argparse
import sys

from corral.core.human import human_age, human_bytes, job_state, short_path
from corral.core.outcomes import LIVE_STATES
from corral.core.text import printable
from corral.service.jobs import JobView


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--all", "-a", action="store_true", help="include finished jobs")
    parser.add_argument("--session", help="only jobs of this agent session")
    parser.add_argument("--json", action="store_true", help="print the versioned JSON envelope")
    parser.add_argument(
        "--orphaned", action="store_true", help="processes whose session's agent is gone"
    )
    parser.add_argument(
        "--all-projects", action="store_true", help="with --orphaned: not only this project"
    )


def render(jobs: list[JobView]) -> None:
    import sys

    from rich.console import Console
    from rich.table import Table

    from corral.cli.show import cell

    # A pipe gets whole lines (no wrapping at 80 columns); a terminal gets its width.
    console = Console(width=None if sys.stdout.isatty() else 200)
    if not jobs:
        console.print("no jobs. Start one with: corral run -d -- <command>")
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    for name in ("ID", "STATE", "PORTS", "AGE", "PROCS", "CPU", "MEM", "FOLDER", "COMMAND"):
        table.add_column(name, no_wrap=True, overflow="ellipsis", max_width=60)
    for job in jobs:
        state = job_state(job.state, job.exit_code, job.signal, job.failed)
        row = (
            f"{job.id[:8]} {job.name}" if job.name else job.id[:8],
            state,
            " ".join(f":{p}" for p in job.ports) or "-",
            human_age(job.age_seconds),
            str(job.processes) if job.state in LIVE_STATES else "-",
            f"{job.cpu_percent:.1f}%" if job.state in LIVE_STATES else "-",
            human_bytes(job.rss_bytes) if job.rss_bytes else "-",
            short_path(job.cwd),
            job.command,
        )
        table.add_row(*(cell(text) for text in row))
    console.print(table)
    for job in jobs:
        if job.tmux and job.state in LIVE_STATES:
            session, _, window = job.tmux.partition(":")
            text = f"{job.id[:8]}: tmux attach -t {session}  (window {window})"
            console.print(printable(text), markup=False, highlight=False)
        if job.note:
            console.print(cell(f"{job.id[:8]}: {job.note}", style="yellow"), highlight=False)


def main(args: argparse.Namespace) -> int:
    if args.orphaned or args.all_projects:
        from corral.cli.session import list_orphans

        return list_orphans(args)
    from corral.service.listing import list_rows
    from corral.service.projects import project_root

    project = None if args.session else project_root()
    rows = list_rows(session=args.session, project=project, include_finished=args.all)
    for warning in rows.warnings:
        sys.stderr.write(f"corral ls: warning: {printable(warning)}\n")
    if args.json:
        from corral.core.envelope import dumps

        print(dumps(rows.to_json(), rows.warnings))
        return 0
    render(rows.jobs)
    if rows.processes:
        from corral.cli.session import render_processes

        where = f"session {args.session}" if args.session else "agent sessions in this project"
        print()
        print(
            printable(
                f"Not supervised ({where}; `corral stop --pid PID --started-at T` stops one):"
            )
        )
        render_processes(rows.processes, "")
    return 0
