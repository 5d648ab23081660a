"""Every key of the control room on fixed rows: moving, the log's focus, the filter, and the
answers it gives where nothing may be done (a listener, a title row, an ended job, a row of
no session), and every confirmation answered no."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Log

from tests.tui.conftest import board, fixed_app, focused, job, listener, process, result, run, until

BOARD = board(
    [
        job("aaaa1111", "npm run dev", ports=[5173], session="5e55104aaa", name="web"),
        job("bbbb2222", "tsc -w", session="5e55104aaa"),
        job("cccc3333", "pytest", state="exited", exit_code=1, ended_at=1.0),
    ],
    [process(777, "python3 -m http.server 8000", ports=[8000], orphaned=True)],
    [listener(5432, 99, "postgres")],
)


def _key(app: Any) -> str:
    return str(app.order[app.query_one("#jobs", DataTable).cursor_row])


def test_rows_come_in_groups_with_this_session_first() -> None:
    app = fixed_app(BOARD, session="5e55104aaa")

    async def scenario(pilot: Pilot[Any]) -> None:
        kinds = [app.rows[k].kind for k in app.order]
        assert kinds == ["group", "job", "job", "group", "job", "group", "process", "group",
                         "listener"]  # fmt: skip
        assert app.rows[app.order[0]].cells[-1] == "session 5e55104a (this one)"
        assert app.rows[app.order[3]].cells[-1] == "no agent session"
        assert _key(app) == app.order[1]  # the first row that is not a title

    run(app, scenario)


def test_j_k_and_arrows_move_the_selection() -> None:
    app = fixed_app(BOARD)

    async def scenario(pilot: Pilot[Any]) -> None:
        first = _key(app)
        await pilot.press("j")
        assert app.order.index(_key(app)) == app.order.index(first) + 1
        await pilot.press("down", "down")
        assert app.order.index(_key(app)) == app.order.index(first) + 3
        await pilot.press("k", "up")
        assert app.order.index(_key(app)) == app.order.index(first) + 1

    run(app, scenario)


def test_enter_focuses_the_log_and_escape_comes_back() -> None:
    app = fixed_app(BOARD)

    async def scenario(pilot: Pilot[Any]) -> None:
        await pilot.press("enter")
        assert focused(app) is app.query_one("#log", Log)
        await pilot.press("escape")
        assert focused(app) is app.query_one("#jobs", DataTable)

    run(app, scenario)


def test_slash_filters_rows_and_escape_clears_it() -> None:
    app = fixed_app(BOARD)

    async def scenario(pilot: Pilot[Any]) -> None:
        await pilot.press("slash")
        assert focused(app) is app.query_one("#filter", Input)
        await pilot.press(*"tsc")
        shown = [app.rows[k] for k in app.order]
        assert [r.cells[-1] for r in shown if r.kind != "group"] == ["tsc -w"]
        await pilot.press("enter")  # keeps the filter, back to the table
        assert focused(app) is app.query_one("#jobs", DataTable)
        assert len(app.order) == 2
        await pilot.press("slash", "escape")
        assert len(app.order) == 9

    run(app, scenario)


def test_a_listener_is_read_only_and_a_title_row_is_no_target() -> None:
    app = fixed_app(BOARD)

    async def scenario(pilot: Pilot[Any]) -> None:
        table = app.query_one("#jobs", DataTable)
        table.move_cursor(row=len(app.order) - 1)
        for key in ("s", "r", "S"):
            await pilot.press(key)
            assert "read-only, corral did not start it" in result(app)
            assert len(app.screen_stack) == 1  # nothing to confirm
        table.move_cursor(row=0)
        await pilot.press("s")
        assert result(app).startswith("select a job or a process first")

    run(app, scenario)


def test_an_ended_job_is_not_stopped_again() -> None:
    app = fixed_app(BOARD)

    async def scenario(pilot: Pilot[Any]) -> None:
        app.query_one("#jobs", DataTable).move_cursor(
            row=app.order.index("job:cccc3333" + "0" * 24)
        )
        await pilot.press("s")
        assert result(app) == "job cccc3333 (pytest) has already ended (failed (1))"
        assert len(app.screen_stack) == 1

    run(app, scenario)


def test_stop_session_of_a_row_of_no_session_says_so() -> None:
    app = fixed_app(BOARD)

    async def scenario(pilot: Pilot[Any]) -> None:
        app.query_one("#jobs", DataTable).move_cursor(
            row=app.order.index("job:cccc3333" + "0" * 24)
        )
        await pilot.press("S")
        assert "belongs to no agent session" in result(app)

    run(app, scenario)


def test_every_confirmation_answered_no_does_nothing() -> None:
    app = fixed_app(BOARD)

    async def scenario(pilot: Pilot[Any]) -> None:
        for key, question, answer in (
            ("s", "Stop job aaaa1111 web (npm run dev)?", "n"),
            ("S", "Stop every running job of session 5e55104a?", "escape"),
            ("e", "Stop the jobs of earlier agent sessions in /home/dev/shop?", "n"),
        ):
            await pilot.press(key)
            await until(pilot, lambda: len(app.screen_stack) == 2, "the question")
            assert str(app.screen.query_one("#question").render()) == question
            await pilot.press(answer)
            await until(pilot, lambda: len(app.screen_stack) == 1, "the answer")
            assert result(app) == "nothing done"

    run(app, scenario)


def test_a_board_like_the_last_redraws_nothing_and_a_change_one_cell() -> None:
    app = fixed_app(BOARD)

    async def scenario(pilot: Pilot[Any]) -> None:
        before = app.cells_redrawn
        app.fetch_board()
        await until(pilot, lambda: app.boards == 2, "the second board")
        assert app.cells_redrawn == before
        busier = [{**BOARD["jobs"][0], "cpu_percent": 12.5}, *BOARD["jobs"][1:]]
        app.feed.data = {**BOARD, "jobs": busier}  # type: ignore[attr-defined]
        app.fetch_board()
        await until(pilot, lambda: app.boards == 3, "the third board")
        assert app.cells_redrawn == before + 1

    run(app, scenario)


def test_q_quits() -> None:
    app = fixed_app(BOARD)

    async def scenario(pilot: Pilot[Any]) -> None:
        await pilot.press("q")
        await until(pilot, lambda: not app.is_running, "the app to end")

    run(app, scenario)
    assert app.return_code == 0


def test_a_row_that_comes_is_drawn_in_place_and_one_that_goes_is_removed() -> None:
    app = fixed_app(BOARD)

    async def scenario(pilot: Pilot[Any]) -> None:
        app.table.move_cursor(row=app.order.index("job:cccc3333" + "0" * 24))
        before = app.cells_redrawn
        new = job("dddd4444", "vite", session="5e55104aaa", age_seconds=1.0)
        app.feed.data = {**BOARD, "jobs": [new, *BOARD["jobs"][1:]]}  # type: ignore[attr-defined]
        app.fetch_board()
        await until(pilot, lambda: app.boards == 2, "the second board")
        assert app.cells_redrawn == before + 9  # the new row's cells, nothing else
        assert app.order[1] == "job:dddd4444" + "0" * 24  # newest first in its session
        assert "job:aaaa1111" + "0" * 24 not in app.rows
        shown = [app.table.get_row_at(i)[0].plain for i in range(len(app.order))]
        assert shown == [app.rows[k].cells[0] for k in app.order]
        assert _key(app) == "job:cccc3333" + "0" * 24  # the selection stays on its row

    run(app, scenario)


def test_while_a_question_is_open_no_other_key_acts() -> None:
    app = fixed_app(BOARD)

    async def scenario(pilot: Pilot[Any]) -> None:
        await pilot.press("s")
        await until(pilot, lambda: len(app.screen_stack) == 2, "the question")
        await pilot.press("c", "S", "r", "e", "j", "slash", "q")
        assert len(app.screen_stack) == 2 and app.is_running
        assert result(app) == ""  # nothing cleared, restarted or asked
        await pilot.press("n")
        await until(pilot, lambda: len(app.screen_stack) == 1, "the answer")

    run(app, scenario)


def test_a_click_selects_a_row() -> None:
    app = fixed_app(BOARD)

    async def scenario(pilot: Pilot[Any]) -> None:
        target = app.order.index("job:cccc3333" + "0" * 24)
        await pilot.click("#jobs", offset=(3, target + 1))  # below the header line
        assert _key(app) == "job:cccc3333" + "0" * 24

    run(app, scenario)


def test_r_on_a_process_corral_did_not_start_says_it_cannot() -> None:
    app = fixed_app(BOARD)

    async def scenario(pilot: Pilot[Any]) -> None:
        app.table.move_cursor(row=app.order.index("proc:777:boot:777"))
        await pilot.press("r")
        await until(pilot, lambda: "only a job" in result(app), "the answer")
        assert result(app) == (
            "only a job can be restarted: corral does not know how this process started"
        )

    run(app, scenario)
