"""corral procs: what Claude Code's `/procs` shows and does, for one agent session.

    corral procs [--session S] [--cwd DIR] [--json]     this session's jobs, earlier
                                                         sessions' jobs in this project,
                                                         other listeners (read-only)
    corral procs stop-all                                stop this session's jobs
    corral procs stop ID                                 stop one job
    corral procs clean                                   forget finished jobs
    corral procs earlier                                 stop the jobs of earlier sessions
                                                         in this project (agent gone)

The session defaults to $CORRAL_SESSION, then the agent's own variable (Claude Code's
$CLAUDE_CODE_SESSION_ID, set in every Bash command it runs, `/procs` included; Codex's
$CODEX_THREAD_ID; Qwen Code's $QWEN_CODE_SESSION_ID).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from corral.core.text import printable
from corral.errors import EXIT_FAILURE, CorralError, UsageError
from corral.service.claude import Overview, overview

ACTIONS = ("stop-all", "stop", "clean", "earlier")
LOOSE_SHOWN = 15


def configure(parser: argparse.ArgumentParser) -> None:
    parser.usage = "corral procs [stop-all | stop ID | clean | earlier] [--session S] [--cwd DIR]"
    parser.add_argument(
        "words",
        nargs="*",
        metavar="ACTION",
        help="stop-all | stop ID | clean | earlier (none: list); one quoted word is split",
    )
    parser.add_argument("--session", help="the agent session (default: from the environment)")
    parser.add_argument("--cwd", metavar="DIR", help="the session's folder (default: here)")
    parser.add_argument("--json", action="store_true", help="print the versioned JSON envelope")
    parser.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 even when a stop fails (the text says so): Claude Code drops the output "
        "of a slash command's shell line that fails",
    )


def current_session(explicit: str | None) -> str | None:
    from corral.lowlevel.record import session_from

    return explicit or session_from(os.environ)


def _job_lines(rows: list[Any]) -> list[str]:
    from corral.core.human import human_age, human_bytes, short_path

    table: list[tuple[str, ...]] = [
        ("ID", "PORTS", "AGE", "PROCS", "CPU", "MEM", "FOLDER", "COMMAND")
    ]
    for j in rows:
        table.append(
            (
                j.id[:8],
                " ".join(f":{p}" for p in j.ports) or "-",
                human_age(j.age_seconds),
                str(j.processes),
                f"{j.cpu_percent:.1f}%",
                human_bytes(j.rss_bytes) if j.rss_bytes else "-",
                short_path(j.cwd),
                j.command + (f"  ({j.note})" if j.note else ""),
            )
        )
    return _columns(table)


def _columns(table: list[tuple[str, ...]]) -> list[str]:
    from corral.core.text import printable

    table = [tuple(printable(cell) for cell in row) for row in table]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]) - 1)]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1]
        for row in table
    ]


def render(view: Overview) -> str:
    from corral.core.human import human_age, short_path

    out: list[str] = []
    who = f"session {view.session[:8]}" if view.session else "this session (unknown id)"
    out.append(f"Jobs of {who}:")
    out += [f"  {line}" for line in _job_lines(view.mine)] if view.mine else ["  none"]
    if view.earlier:
        out += ["", f"Jobs of earlier sessions in {short_path(view.project)}:"]
        out += [f"  {line}" for line in _job_lines(view.earlier)]
    if view.others:
        out += ["", f"Other jobs in {short_path(view.project)} (live sessions, or none):"]
        out += [f"  {line}" for line in _job_lines(view.others)]
    if view.loose:
        out += ["", "Not supervised (Claude ran them in the background, or left over):"]
        table: list[tuple[str, ...]] = [("PID", "PORTS", "AGE", "FOLDER", "COMMAND")]
        for p in view.loose[:LOOSE_SHOWN]:
            table.append(
                (
                    str(p.pid),
                    " ".join(f":{port}" for port in p.ports) or "-",
                    human_age(p.age_seconds),
                    short_path(p.cwd) if p.cwd else "-",
                    p.command or p.name,
                )
            )
        out += [f"  {line}" for line in _columns(table)]
        if len(view.loose) > LOOSE_SHOWN:
            more = len(view.loose) - LOOSE_SHOWN
            out.append(f"  … and {more} more: `corral ls --orphaned` lists them all")
    if view.listeners:
        out += ["", "Other listeners (read-only):"]
        seen = sorted({(lst["port"], lst["name"] or "?", lst["pid"]) for lst in view.listeners})
        out += [
            f"  :{port:<6} {name}" + (f" (pid {pid})" if pid else "") for port, name, pid in seen
        ]
    out += ["", "/procs stop-all | stop ID | clean | earlier"]
    from corral.core.text import printable

    return "\n".join(printable(line) for line in out)


def _render_stop(done: Any, args: argparse.Namespace) -> int:
    from corral.cli.stop import report

    if args.json:
        from corral.core.envelope import dumps

        print(dumps([o.to_json() for o in done.outcomes], done.errors))
    else:
        report(done.outcomes, done.errors, nothing=done.nothing)
    return 0 if done.ok else EXIT_FAILURE


def main(args: argparse.Namespace) -> int:
    if not args.exit_zero:
        return _main(args)
    try:  # for the slash command: every answer on stdout, where the user sees it
        _main(args)
    except CorralError as exc:
        print(f"corral procs: {printable(str(exc))}")
    return 0


def _main(args: argparse.Namespace) -> int:
    words = " ".join(args.words).split()
    session = current_session(args.session)
    folder = Path(args.cwd or os.getcwd())
    if not words:
        view = overview(session, folder)
        for warning in view.warnings:
            sys.stderr.write(f"corral procs: warning: {printable(warning)}\n")
        if args.json:
            from corral.core.envelope import dumps

            print(dumps(view.to_json(), view.warnings))
        else:
            print(render(view))
        return 0
    action, rest = words[0], words[1:]
    if action not in ACTIONS or (action == "stop") != bool(rest) or len(rest) > 1:
        got = " ".join(words)
        raise UsageError(f"expected one of: stop-all, stop ID, clean, earlier (got {got!r})")
    if action == "clean":
        from corral.cli.clean import main as clean_main

        return clean_main(args)
    from corral.service import stopping

    if action == "stop":
        return _render_stop(stopping.stop(rest, surface="claude"), args)
    if action == "stop-all":
        if session is None:
            raise UsageError("no session: run it from Claude Code, or pass --session")
        done = stopping.stop(every=True, session=session, surface="claude")
        return _render_stop(done._replace(nothing="this session has no running jobs"), args)
    return _render_stop(stopping.stop_earlier(session, folder), args)
