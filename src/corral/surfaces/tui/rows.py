"""The control room's table as data: the board (service.board's rows, from the daemon or
taken directly) in groups, each row's cells as text. Pure: the view only draws these."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any

from corral.core.human import human_age, human_bytes, job_state, short_path
from corral.core.outcomes import LIVE_STATES, failed
from corral.core.text import printable

COLUMNS = ("NAME/ID", "STATE", "PORTS", "AGE", "PROCS", "CPU", "MEM", "FOLDER", "COMMAND")
FOLDER_WIDTH = 40  # a deeper folder keeps its end: the command column stays on the screen


def _folder(path: str) -> str:
    shown = short_path(path)
    return shown if len(shown) <= FOLDER_WIDTH else "…" + shown[-(FOLDER_WIDTH - 1) :]


@dataclass(frozen=True)
class Row:
    key: str
    kind: str  # "group", "job", "process" or "listener"
    cells: tuple[str, ...]
    job: str | None = None  # the job id of a job row
    pid: int | None = None
    started_at: str | None = None
    session: str | None = None
    live: bool = False  # a job or process that runs (stoppable); listeners never are
    failed: bool = False  # a job that ended on its own badly (core.outcomes.failed)
    log: str | None = None  # where a job's output is kept

    @property
    def label(self) -> str:
        """How a confirmation names the row."""
        if self.kind == "job":
            return f"job {self.cells[0]} ({self.cells[-1]})"
        return f"pid {self.pid} ({self.cells[-1]})"


def _ports(ports: list[int]) -> str:
    return " ".join(f":{p}" for p in ports) or "-"


def _usage(row: dict[str, Any], live: bool, cpu: bool) -> tuple[str, str, str]:
    """Processes, CPU % (`…` until measured: the first board is drawn without waiting for
    it) and memory."""
    if not live:
        return "-", "-", "-"
    rss = row.get("rss_bytes") or 0
    shown = f"{row['cpu_percent']:.1f}%" if cpu else "…"
    return str(row["processes"]), shown, human_bytes(rss) if rss else "-"


# The board comes again every second with mostly the same texts: each is made printable once.
_shown = functools.lru_cache(maxsize=16384)(printable)


def _cells(*cells: str) -> tuple[str, ...]:
    return tuple(_shown(c) for c in cells)


def job_row(job: dict[str, Any], cpu: bool = True) -> Row:
    live = job["state"] in LIVE_STATES
    bad = failed(job["state"], job["exit_code"], job["signal"])
    short = job["id"][:8]
    return Row(
        f"job:{job['id']}",
        "job",
        _cells(
            f"{short} {job['name']}" if job.get("name") else short,
            job_state(job["state"], job["exit_code"], job["signal"], bad),
            _ports(job["ports"]),
            human_age(job["age_seconds"], exact=False),
            *_usage(job, live, cpu),
            _folder(job["cwd"]),
            job["command"],
        ),
        job=job["id"],
        pid=job["pid"],
        started_at=job["started_at"],
        session=job["session"],
        live=live,
        failed=bad,
        log=job.get("log"),
    )


def process_row(proc: dict[str, Any], cpu: bool = True) -> Row:
    return Row(
        f"proc:{proc['pid']}:{proc['started_at']}",
        "process",
        _cells(
            f"pid {proc['pid']}",
            "orphaned" if proc["orphaned"] else "unsupervised",
            _ports(proc["ports"]),
            human_age(proc["age_seconds"], exact=False),
            *_usage(proc, True, cpu),
            _folder(proc["cwd"]) if proc["cwd"] else "-",
            proc["command"] or proc["name"],
        ),
        pid=proc["pid"],
        started_at=proc["started_at"],
        session=proc["session"],
        live=True,
    )


def listener_row(lst: dict[str, Any]) -> Row:
    pid = lst["pid"]
    return Row(
        f"port:{lst['proto']}:{lst['address']}:{lst['port']}:{pid}",
        "listener",
        _cells(
            f"pid {pid}" if pid else "?",
            "read-only",
            f":{lst['port']}",
            "-",
            "-",
            "-",
            "-",
            lst["address"],
            lst["name"] or "?",
        ),
        pid=pid,
    )


def group_row(name: str, folder: str = "", note: str = "") -> Row:
    """A group's title row: its name first, its folder and what it holds where those go."""
    cells = ["", *("",) * (len(COLUMNS) - 3), "", ""]
    cells[0], cells[-2], cells[-1] = f"▾ {name}", folder, note
    return Row(f"group:{name}:{folder}:{note}", "group", _cells(*cells))


def _session_title(session: str | None, here: str | None) -> str:
    if session is None:
        return "no agent session"
    return f"session {session[:8]}" + (" (this one)" if session == here else "")


def build(
    board: dict[str, Any],
    here: str | None = None,
    needle: str = "",
    born: dict[str, float] | None = None,
) -> list[Row]:
    """The table's rows in their groups: this project's jobs first, then other projects',
    each by session (`here`, the caller's session, first), newest first; then the processes
    agent sessions started without corral and the orphans; then the other listeners,
    read-only. With `needle`, only rows holding it (any cell, any case) and their groups'
    titles. `born` keeps each job's start as first seen (the board's ages are rounded: two
    jobs started together would swap places from one board to the next, and a row moved
    redraws the screen); jobs are ordered by it."""
    project = board["project"]
    if born is None:
        born = {}
    now = time.monotonic()
    for job in board["jobs"]:
        born.setdefault(job["id"], now - job["age_seconds"])
    cpu = board.get("cpu_measured", True)
    by_group: dict[tuple[int, str, int, str], list[dict[str, Any]]] = {}
    for job in board["jobs"]:
        session = job["session"]
        order = 0 if session == here and here is not None else 2 if session is None else 1
        key = (0 if job["project"] == project else 1, job["project"], order, session or "")
        by_group.setdefault(key, []).append(job)
    groups: list[tuple[Row, list[Row]]] = []
    for (_, where, _, _), jobs in sorted(by_group.items()):
        title = group_row(
            "this project" if where == project else "project",
            short_path(where),
            _session_title(jobs[0]["session"], here),
        )
        newest_first = sorted(jobs, key=lambda j: -born[j["id"]])
        groups.append((title, [job_row(j, cpu) for j in newest_first]))
    loose = [process_row(p, cpu) for p in board["unsupervised"]]
    groups.append((group_row("not supervised", "", "agent sessions' processes, orphans"), loose))
    seen = sorted(
        board["other_listeners"], key=lambda lst: (lst["port"], lst["address"], lst["pid"] or 0)
    )
    listeners = [listener_row(lst) for lst in seen]
    groups.append((group_row("listeners", "", "other programs' ports (read-only)"), listeners))
    rows: list[Row] = []
    low = needle.lower()
    for title, members in groups:
        shown = [r for r in members if not low or any(low in c.lower() for c in r.cells)]
        if shown:
            rows.append(title)
            rows.extend(shown)
    return rows


def summary(board: dict[str, Any]) -> str:
    """The heading: the project, and how many jobs run and failed."""
    jobs = board["jobs"]
    running = sum(1 for j in jobs if j["state"] in LIVE_STATES)
    bad = sum(1 for j in jobs if failed(j["state"], j["exit_code"], j["signal"]))
    text = f"corral · {short_path(board['project'])} · {running} running"
    if bad:
        text += f" · {bad} failed"
    if board["unsupervised"]:
        text += f" · {len(board['unsupervised'])} not supervised"
    return printable(text)
