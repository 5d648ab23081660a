"""What the control room spends while open and nothing on its screen changes: rows out of
sight that change are drawn when scrolled to (or every few seconds), not every second."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from tests.tui.conftest import board, fixed_app, job, process, run, until

MANY = board([job(f"{i:04x}", f"sleep {i}", age_seconds=100.0 + i) for i in range(80)])


def test_a_change_below_the_screen_waits_until_it_is_scrolled_to() -> None:
    app = fixed_app(MANY)
    app.offscreen_every = 3600.0  # never drawn for the time alone in this test

    async def scenario(pilot: Pilot[Any]) -> None:
        before = app.cells_redrawn
        came = process(4321, "python3 -m http.server 8001", ports=[8001])
        app.feed.data = {**MANY, "unsupervised": [came]}  # type: ignore[attr-defined]
        app.fetch_board()
        await until(pilot, lambda: app.boards == 2, "the second board")
        assert app.cells_redrawn == before  # the new row is below the screen: not drawn yet
        assert "not supervised" in str(app.heading.render())  # the heading says it at once
        app.table.scroll_end(animate=False)
        await until(pilot, lambda: "proc:4321:boot:4321" in app.rows, "the row drawn")
        assert app.order[-1] == "proc:4321:boot:4321"

    run(app, scenario)


def test_a_change_below_the_screen_is_drawn_within_offscreen_every() -> None:
    app = fixed_app(MANY)
    app.offscreen_every = 0.0

    async def scenario(pilot: Pilot[Any]) -> None:
        came = process(4321, "python3 -m http.server 8001", ports=[8001])
        app.feed.data = {**MANY, "unsupervised": [came]}  # type: ignore[attr-defined]
        app.fetch_board()
        await until(pilot, lambda: app.boards == 2, "the second board")
        assert "proc:4321:boot:4321" in app.rows

    run(app, scenario)


def test_a_change_on_the_screen_is_drawn_at_once() -> None:
    app = fixed_app(MANY)
    app.offscreen_every = 3600.0

    async def scenario(pilot: Pilot[Any]) -> None:
        before = app.cells_redrawn
        first = app.order[1]  # the newest job, on the screen
        jobs = [dict(j) for j in MANY["jobs"]]
        jobs[0]["cpu_percent"] = 42.0
        app.feed.data = {**MANY, "jobs": jobs}  # type: ignore[attr-defined]
        app.fetch_board()
        await until(pilot, lambda: app.boards == 2, "the second board")
        assert app.cells_redrawn == before + 1
        assert app.rows[first].cells[5] == "42.0%"

    run(app, scenario)


def test_jobs_started_together_keep_their_order_when_their_ages_round_alike() -> None:
    # Ages come rounded to a tenth of a second: two jobs started 50 ms apart are sometimes
    # the same age and sometimes not. Moving them would redraw the whole screen.
    pair = board([job("bbbb", "tsc -w", age_seconds=100.1), job("aaaa", "vite", age_seconds=100.0)])
    app = fixed_app(pair)

    async def scenario(pilot: Pilot[Any]) -> None:
        order, before = list(app.order), app.cells_redrawn
        assert order[1:] == ["job:aaaa" + "0" * 28, "job:bbbb" + "0" * 28]  # newest first
        tied = [{**j, "age_seconds": 100.6} for j in pair["jobs"]]
        app.feed.data = {**pair, "jobs": tied}  # type: ignore[attr-defined]
        app.fetch_board()
        await until(pilot, lambda: app.boards == 2, "the second board")
        assert app.order == order
        assert app.cells_redrawn == before

    run(app, scenario)


def test_a_cell_changed_on_the_screen_redraws_its_row_alone() -> None:
    # A DataTable redraws every row on the screen for one cell changed: with the ages of
    # jobs younger than a minute counting, that was the whole screen every second.
    app = fixed_app(MANY)

    async def scenario(pilot: Pilot[Any]) -> None:
        await pilot.pause(0.2)  # the first frames drawn
        drawn: list[int] = []
        table = app.table
        render_line = table.render_line

        def counted(y: int) -> Any:
            drawn.append(y)
            return render_line(y)

        table.render_line = counted  # type: ignore[method-assign]
        jobs = [dict(j) for j in MANY["jobs"]]
        jobs[0]["age_seconds"] = 200.0  # 1m -> 3m, the newest job's age on the screen
        app.feed.data = {**MANY, "jobs": jobs}  # type: ignore[attr-defined]
        app.fetch_board()
        await until(pilot, lambda: app.boards == 2, "the second board")
        await pilot.pause(0.2)
        row = app.order.index("job:0000" + "0" * 28)
        assert app.table.get_row_at(row)[3].plain == "3m"
        assert set(drawn) == {row + 1}  # below the header: its line alone

    run(app, scenario)
