"""The main screen as a person sees it (SVG snapshots, pytest-textual-snapshot): running jobs
with ports and names, failed ones, processes agent sessions left unsupervised and orphans,
and the other listeners. Rows are fixed (injected at the view layer): the screen must be the
same at every run. `pytest tests/tui --snapshot-update` writes them again after a change."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from tests.tui.conftest import SIZE, board, fixed_app, job, listener, process, until

SESSION = "5e55104aaa"
RUNNING = [
    job("3fa8b2c1", "npm run dev", ports=[5173], name="web", session=SESSION, cpu_percent=2.5,
        processes=4, rss_bytes=182 * 1024 * 1024, age_seconds=1260.0),
    job("9c1d44e0", "tsc -w -p tsconfig.json", session=SESSION, age_seconds=1250.0),
    job("51aa0b7f", "python3 -m http.server 8081", ports=[8081], session="0ldsess1on",
        age_seconds=7300.0),
    job("d00dfeed", "cargo watch -x run", cwd="/home/dev/api", project="/home/dev/api",
        ports=[3000], age_seconds=90000.0),
]  # fmt: skip
FAILED = [
    job("e57e753e", "npm run nosuch", state="exited", exit_code=1, session=SESSION,
        processes=0, age_seconds=2.0, ended_at=1.0),
    job("a11ce000", "vite --port 5174", state="exited", signal=9, exit_code=137,
        session=SESSION, age_seconds=40.0, ended_at=1.0),  # killed by a signal on its own
    job("0ddba11a", "celery worker", state="unsupervised", session="0ldsess1on",
        note="supervisor gone", processes=3, age_seconds=5000.0),
]  # fmt: skip
LOOSE = [
    process(23456, "node server.js", ports=[4000], session=SESSION),
    process(23999, "python3 manage.py runserver", ports=[8000], orphaned=True,
            session="0ldsess1on", agent="gone", age_seconds=86000.0),
]  # fmt: skip
LISTENERS = [listener(5432, 812, "postgres"), listener(6379, 905, "redis-server"),
             listener(631, None, None)]  # fmt: skip


def _shown(pilot: Pilot[Any]) -> Any:
    return until(pilot, lambda: pilot.app.boards, "the first board")  # type: ignore[attr-defined]


def test_jobs(snap_compare: Any) -> None:
    app = fixed_app(board(RUNNING), session=SESSION)
    assert snap_compare(app, terminal_size=SIZE, run_before=_shown)


def test_failed_jobs(snap_compare: Any) -> None:
    app = fixed_app(board([*RUNNING[:1], *FAILED]), session=SESSION)
    assert snap_compare(app, terminal_size=SIZE, run_before=_shown)


def test_unsupervised_and_orphans(snap_compare: Any) -> None:
    app = fixed_app(board(RUNNING[:2], LOOSE), session=SESSION)
    assert snap_compare(app, terminal_size=SIZE, run_before=_shown)


def test_listeners(snap_compare: Any) -> None:
    app = fixed_app(board(RUNNING[:1], [], LISTENERS), session=SESSION)
    assert snap_compare(app, terminal_size=SIZE, run_before=_shown)


LOG = [
    "> shop@1.4.0 dev",
    "> vite",
    "",
    "  VITE v5.4.2  ready in 412 ms",
    "",
    "  ➜  Local:   http://localhost:5173/",
    "  ➜  Network: use --host to expose",
    "10:41:07 [vite] hmr update /src/App.tsx",
]


def test_everything(snap_compare: Any) -> None:
    """The screen the README shows (the selected job's log below the table)."""
    jobs = [RUNNING[0], *FAILED[:1], *RUNNING[1:]]
    app = fixed_app(board(jobs, LOOSE, LISTENERS), session=SESSION, log=LOG)
    assert snap_compare(app, terminal_size=SIZE, run_before=_shown)


def test_a_stop_asks_first(snap_compare: Any) -> None:
    app = fixed_app(board(RUNNING[:2]), session=SESSION)
    assert snap_compare(app, press=["s"], terminal_size=SIZE, run_before=_shown)
