"""What the control room's keys do to real jobs, through the service API: stop (confirmed
with y), restart, stop a session's jobs, stop earlier sessions' jobs, clear finished, and the
selected job's log, followed and searched. Rows come from snapshots taken in the test (the
daemon's feed is tests/tui/test_feed.py's)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from corral.surfaces.tui.app import ControlRoom
from corral.surfaces.tui.feed import LiveFeed
from tests.helpers import alive, ledger_record, start_job
from tests.tui.conftest import result, run, until


@pytest.fixture(autouse=True)
def stop_what_runs() -> Iterator[None]:
    """The jobs a test keeps running are stopped as a person would (verified) at its end."""
    yield
    from corral.service import stopping

    assert stopping.stop(every=True).ok


def _app(session: str | None = None) -> ControlRoom:
    folder = Path.cwd()
    return ControlRoom(LiveFeed(folder, use_daemon=False), folder=folder, session=session)


def _select(app: ControlRoom, job: str) -> None:
    app.table.move_cursor(row=app.order.index(f"job:{job}"))


def _state(app: ControlRoom, job: str) -> str:
    row = app.rows.get(f"job:{job}")
    return row.cells[1].split(" (")[0] if row else "gone"  # without its exit code


async def _confirm(pilot: Pilot[Any], key: str) -> None:
    app = pilot.app
    await pilot.press(key)
    await until(pilot, lambda: len(app.screen_stack) == 2, "the question")
    await pilot.press("y")


def test_s_then_y_stops_the_selected_job_and_shows_each_target() -> None:
    keep, gone = start_job("sleep 300"), start_job("sleep 301")
    app = _app()

    async def scenario(pilot: Pilot[Any]) -> None:
        await until(pilot, lambda: f"job:{gone['id']}" in app.rows, "the job's row")
        _select(app, gone["id"])
        await _confirm(pilot, "s")
        await until(pilot, lambda: _state(app, gone["id"]) == "stopped", "the row stopped")
        assert f"supervisor pid {gone['pid']}: terminated" in result(app)
        assert _state(app, keep["id"]) == "running"

    run(app, scenario)
    assert not alive(gone["pid"]) and alive(keep["pid"])
    from corral.store import db

    [event] = db.audit_events()  # audited as every stop is, naming the tui
    assert event.surface == "tui"
    assert [(t["job"], t["result"]) for t in event.targets] == [(gone["id"], "terminated")]


# The new job's supervisor is this process's child, as after any start in a long-lived
# process: Popen warns when its object goes away while the supervisor runs on, as it must.
@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_r_restarts_the_selected_job() -> None:
    old = start_job("sleep 302")
    app = _app()

    async def scenario(pilot: Pilot[Any]) -> None:
        await until(pilot, lambda: f"job:{old['id']}" in app.rows, "the job's row")
        _select(app, old["id"])
        await pilot.press("r")
        await until(pilot, lambda: "started job " in result(app), "the restart")
        new = result(app).split("started job ")[1][:8]  # service.starting.start_lines's words
        assert f"started job {new} (supervisor pid " in result(app)
        await until(pilot, lambda: any(k.startswith(f"job:{new}") for k in app.rows), "new row")
        assert _state(app, old["id"]) == "stopped"

    run(app, scenario)
    assert not alive(old["pid"])


def test_shift_s_then_y_stops_the_jobs_of_the_selected_ones_session() -> None:
    a = start_job("sleep 303", "--session", "sess-one")
    b = start_job("sleep 304", "--session", "sess-one")
    other = start_job("sleep 305", "--session", "sess-two")
    app = _app()

    async def scenario(pilot: Pilot[Any]) -> None:
        await until(pilot, lambda: f"job:{b['id']}" in app.rows, "the jobs' rows")
        _select(app, a["id"])
        await _confirm(pilot, "S")
        await until(pilot, lambda: _state(app, b["id"]) == "stopped", "the session stopped")
        assert _state(app, a["id"]) == "stopped"
        assert _state(app, other["id"]) == "running"

    run(app, scenario)
    assert alive(other["pid"]) and not alive(a["pid"])


def test_e_then_y_stops_earlier_sessions_jobs_here_and_not_others() -> None:
    earlier = start_job("sleep 306", "--session", "gone-session")
    mine = start_job("sleep 307", "--session", "my-session")
    by_hand = start_job("sleep 308")
    app = _app(session="my-session")

    async def scenario(pilot: Pilot[Any]) -> None:
        await until(pilot, lambda: f"job:{by_hand['id']}" in app.rows, "the jobs' rows")
        await _confirm(pilot, "e")
        await until(pilot, lambda: _state(app, earlier["id"]) == "stopped", "earlier stopped")
        assert "terminated" in result(app)
        assert _state(app, mine["id"]) == _state(app, by_hand["id"]) == "running"

    run(app, scenario)
    assert alive(mine["pid"]) and alive(by_hand["pid"])


def test_c_clears_finished_jobs(corral_home: Path) -> None:
    done = ledger_record(corral_home, command="make build", cwd=str(Path.cwd()))
    app = _app()

    async def scenario(pilot: Pilot[Any]) -> None:
        await until(pilot, lambda: f"job:{done}" in app.rows, "the finished job's row")
        await pilot.press("c")
        await until(pilot, lambda: f"job:{done}" not in app.rows, "the row cleared")
        assert result(app) == "cleared 1 finished job(s)"

    run(app, scenario)


def test_the_selected_jobs_log_follows_and_slash_searches_it() -> None:
    job = start_job("echo one; echo two; sleep 1; echo three; sleep 300")
    app = _app()

    def lines() -> list[str]:
        return list(app.log_view.lines)

    async def scenario(pilot: Pilot[Any]) -> None:
        await until(pilot, lambda: f"job:{job['id']}" in app.rows, "the job's row")
        _select(app, job["id"])
        await until(pilot, lambda: lines()[:2] == ["one", "two"], "the log")
        await until(pilot, lambda: lines() == ["one", "two", "three"], "the followed line")
        await pilot.press("enter", "slash", *"t[wh]", "enter")
        await until(pilot, lambda: lines() == ["two", "three"], "the search")

    run(app, scenario)
