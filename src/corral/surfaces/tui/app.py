"""`corral tui`: the control room. A thin view: the board comes from a feed (the daemon, or
snapshots) in thread workers, every key acts through the service API (surfaces.tui.actions)
in thread workers too, and results come back as messages. Only the cells that changed are
redrawn."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Input, Log, Static

from corral.core.human import short_path
from corral.core.text import printable
from corral.surfaces.tui import actions
from corral.surfaces.tui.confirm import Confirm
from corral.surfaces.tui.feed import Feed
from corral.surfaces.tui.messages import ActionDone, BoardReady, LogLines
from corral.surfaces.tui.rows import COLUMNS, Row, build, summary
from corral.surfaces.tui.table import JobsTable

LOG_TAIL = 500  # lines of a job's log shown when it is selected
# Rows below the screen that changed are drawn when scrolled to, or at most this often: a row
# added to or removed from a Textual DataTable redraws every row on the screen (~50 ms of CPU
# for a full screen), and agent sessions' processes come and go at the bottom every second.
OFFSCREEN_EVERY = 10.0


_STYLES = {"group": "bold", "listener": "dim"}


def _style(row: Row) -> str:
    if row.kind in _STYLES:
        return _STYLES[row.kind]
    if row.failed:
        return "red"
    state = row.cells[1]
    if state in ("unsupervised", "orphaned"):
        return "yellow"
    return "" if row.live else "dim"


class ControlRoom(App[None]):
    """The jobs, the processes agent sessions left, the listeners; stop, restart, logs."""

    CSS_PATH = "control_room.tcss"
    TITLE = "corral"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor(1)", "down", show=False),
        Binding("k", "cursor(-1)", "up", show=False),
        Binding("s", "stop", "stop"),
        Binding("r", "restart", "restart"),
        Binding("S", "stop_session", "stop session"),
        Binding("e", "stop_earlier", "stop earlier"),
        Binding("c", "clean", "clear finished"),
        Binding("slash", "filter", "filter"),
        Binding("escape", "leave", "back", show=False),
        Binding("q", "quit", "quit"),
    ]

    def __init__(
        self,
        feed: Feed,
        *,
        folder: Path,
        session: str | None = None,
        refresh_every: float | None = 1.0,
    ) -> None:
        super().__init__()
        self.feed = feed
        self.folder = folder
        self.session = session
        self.refresh_every = refresh_every
        self.board: dict[str, Any] | None = None
        self.rows: dict[str, Row] = {}
        self._heading = ""
        self._searching = False  # the filter box searches the log, not the rows
        self._born: dict[str, float] = {}  # each job's start as first seen (rows.build)
        self._first: dict[str, Text] = {}  # each row's first cell as drawn (to sort rows by)
        self.order: list[str] = []
        self.needle = ""
        self.grep: str | None = None
        self.cells_redrawn = 0  # cells written since the app started (tests, bench)
        self.boards = 0  # boards applied
        self.offscreen_every = OFFSCREEN_EVERY
        self._drawn_at = 0.0  # when the rows were last brought up to date with the board
        self._behind = False  # the board has changes below the screen not drawn yet
        self._fetching = False
        self._log_job: str | None = None
        self._log_cursor: int | None = None
        self._reading_log = False

        self.heading = Static("corral", id="heading")
        self.table = JobsTable(id="jobs", cursor_type="row")
        self.result = Static("", id="result")
        self.filter_box = Input(placeholder="filter rows", id="filter")
        self.log_view = Log(id="log", max_lines=5000)

    def compose(self) -> ComposeResult:
        yield self.heading
        yield self.table
        yield self.result
        yield self.filter_box
        yield self.log_view
        yield Footer()

    def on_mount(self) -> None:
        for name in COLUMNS:
            self.table.add_column(name, key=name)
        self.table.focus()
        self.watch(self.table, "scroll_y", self._scrolled, init=False)
        early = self.feed.ready()
        if early is not None:  # read while Textual loaded: in the first frame drawn
            self.on_board_ready(BoardReady(*early, self.feed.drawn_from))
        self.connect(fetch=early is None)
        if self.refresh_every:
            self.set_interval(self.refresh_every, self.tick)

    # -- the board -------------------------------------------------------------------------

    @work(thread=True, group="connect")
    def connect(self, fetch: bool) -> None:
        if fetch:
            self.fetch_board()  # the first paint does not wait for the daemon to start
        self.feed.connect()

    def tick(self) -> None:
        if not self._fetching:
            self._fetching = True
            self.run_worker(self.fetch_board, thread=True, group="board")
        self.follow_log()

    def fetch_board(self) -> None:
        self._fetching = True
        try:
            board, warnings = self.feed.board()
        except Exception as exc:  # noqa: BLE001 - shown in the heading; the next tick retries
            self.post_message(BoardReady(None, [f"cannot read the board: {exc}"], self.feed.source))
            return
        finally:
            self._fetching = False
        self.post_message(BoardReady(board, warnings, self.feed.drawn_from))

    def on_board_ready(self, message: BoardReady) -> None:
        if message.board is None:
            self.set_heading(" · ".join(message.warnings))
            return
        self.board = message.board
        self.boards += 1
        text = f"{summary(message.board)} · via {message.source}"
        complete = message.board.get("complete", True)
        if not complete:
            text += " · reading the other processes and listeners …"
        if message.warnings:
            text += f" · warning: {message.warnings[0]}"
        self.set_heading(text)
        self.show_rows(hidden_may_wait=True)
        if not complete:  # the jobs alone: the whole board once they are on the screen
            self.call_after_refresh(self.tick)

    def _scrolled(self) -> None:
        if self._behind:
            self.show_rows()

    def set_heading(self, text: str) -> None:
        if text != self._heading:  # drawn again only when it changed
            self._heading = text
            self.heading.update(Text(printable(text)), layout=False)  # one line, always

    def show_rows(self, hidden_may_wait: bool = False) -> None:
        """Draw the board's rows touching only what changed: rows gone are removed, new ones
        added, changed cells rewritten, and the rows put in order when they are out of it
        (the selection kept). A busy machine's processes come and go every second: with
        `hidden_may_wait`, changes all below the screen wait (see OFFSCREEN_EVERY)."""
        if self.board is None:
            return
        rows = build(self.board, self.session, self.needle, self._born)
        clock = time.monotonic()
        if hidden_may_wait and self.order and clock - self._drawn_at < self.offscreen_every:
            first = self._first_change(rows)
            if first >= self._screen_end():
                self._behind = first < max(len(rows), len(self.order))
                return
        self._drawn_at, self._behind = clock, False
        table = self.table
        selected = self.selected()
        wanted = {r.key: r for r in rows}
        kept = [k for k in self.order if k in wanted]
        for key in self.order:
            if key not in wanted:
                table.remove_row(key)
                self._born.pop(self.rows[key].job or "", None)
                del self.rows[key], self._first[key]
        added = []
        changed: list[tuple[str, str, Text]] = []
        for row in rows:
            old = self.rows.get(row.key)
            style = _style(row)
            if old is None:
                cells = [Text(c, style) for c in row.cells]
                table.add_row(*cells, key=row.key)
                self._first[row.key] = cells[0]
                self.cells_redrawn += len(cells)
                added.append(row.key)
            elif old != row:
                restyle = _style(old) != style
                for column, (was, now) in enumerate(zip(old.cells, row.cells, strict=True)):
                    if was != now or restyle:
                        text = Text(now, style)
                        changed.append((row.key, COLUMNS[column], text))
                        self.cells_redrawn += 1
                        if column == 0:
                            self._first[row.key] = text
            self.rows[row.key] = row
        table.set_cells(changed)
        order = list(wanted)
        if kept + added != order:  # new rows were added at the end: move them into place
            rank = {id(self._first[key]): i for i, key in enumerate(order)}
            table.sort(COLUMNS[0], key=lambda first: rank[id(first)])
        moved = self.order != order
        self.order = order
        if not moved:
            return
        if selected is not None and selected.key in wanted:
            table.move_cursor(row=order.index(selected.key), scroll=True)
        elif order:
            first = next((i for i, r in enumerate(rows) if r.kind != "group"), 0)
            table.move_cursor(row=first)
        if self.boards > 1:
            self.show_log(self.selected())
        else:  # the first frame does not wait for the log's reading (and its imports)
            self.call_after_refresh(lambda: self.show_log(self.selected()))

    def _first_change(self, rows: list[Row]) -> int:
        """The index of the first row that differs from the one drawn there."""
        for i, (key, row) in enumerate(zip(self.order, rows, strict=False)):
            if key != row.key or self.rows[key] != row:
                return i
        return min(len(rows), len(self.order))

    def _screen_end(self) -> int:
        """The index of the first row below the screen."""
        return int(self.table.scroll_y) + self.table.size.height

    def selected(self) -> Row | None:
        table = self.table
        if not self.order or not 0 <= table.cursor_row < len(self.order):
            return None
        return self.rows.get(self.order[table.cursor_row])

    @on(DataTable.RowHighlighted)
    def highlighted(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value
        self.show_log(self.rows.get(key) if key else None)

    @on(DataTable.RowSelected)
    def selected_row(self) -> None:
        self.log_view.focus()

    def action_cursor(self, step: int) -> None:
        table = self.table
        if step > 0:
            table.action_cursor_down()
        else:
            table.action_cursor_up()

    # -- the log ---------------------------------------------------------------------------

    def show_log(self, row: Row | None) -> None:
        job = row.job if row is not None and row.kind == "job" else None
        if job == self._log_job:
            return
        self._log_job, self._log_cursor = job, None
        log = self.log_view
        log.clear()
        if job is not None:
            self.read_log(job, None, self.grep)

    def follow_log(self) -> None:
        if self._log_job is not None and self._log_cursor is not None and not self._reading_log:
            self.read_log(self._log_job, self._log_cursor, self.grep)

    @work(thread=True, group="log")
    def read_log(self, job: str, after: int | None, grep: str | None) -> None:
        self._reading_log = True
        try:
            lines, cursor, note = self.feed.read_log(job, after, grep, LOG_TAIL)
        except Exception as exc:  # noqa: BLE001 - shown where the log goes; selecting retries
            lines, cursor, note = [], None, f"cannot read the log: {exc}"
        finally:
            self._reading_log = False
        self.post_message(LogLines(job, lines, cursor, note, after is None))

    def on_log_lines(self, message: LogLines) -> None:
        if message.job != self._log_job:
            return  # another row was selected meanwhile
        if not message.reset and self._log_cursor is None:
            return  # a follow read of before a new search
        log = self.log_view
        if message.reset:
            log.clear()
        if message.note:
            log.write_line(message.note)
        log.write_lines(message.lines)
        self._log_cursor = message.cursor

    # -- filter and search -----------------------------------------------------------------

    def action_filter(self) -> None:
        box = self.filter_box
        self._searching = self.focused is self.log_view  # `/` in the log searches it
        box.placeholder = "search the log (a regex)" if self._searching else "filter rows"
        box.value = (self.grep or "") if self._searching else self.needle
        box.add_class("shown")
        box.focus()

    @on(Input.Changed, "#filter")
    def filter_changed(self, event: Input.Changed) -> None:
        if not self._searching:
            self.needle = event.value
            self.show_rows()

    @on(Input.Submitted, "#filter")
    def filter_done(self, event: Input.Submitted) -> None:
        event.input.remove_class("shown")
        if not self._searching:
            self.table.focus()
            return
        self.grep = event.value or None
        self.log_view.focus()
        if self._log_job is not None:
            self._log_cursor = None
            self.read_log(self._log_job, None, self.grep)

    def action_leave(self) -> None:
        box = self.filter_box
        if box.has_class("shown"):
            box.remove_class("shown")
            if not self._searching:
                box.value = ""
        self.table.focus()

    # -- actions ---------------------------------------------------------------------------

    def say(self, lines: list[str]) -> None:
        self.result.update(Text("\n".join(lines)))

    def _target(self) -> Row | None:
        row = self.selected()
        if row is None or row.kind == "group":
            self.say(["select a job or a process first (↑/↓ or j/k)"])
            return None
        if row.kind == "listener":
            self.say([f"{row.label}: read-only, corral did not start it"])
            return None
        return row

    def _confirmed(self, question: str, then: Any) -> None:
        def answered(yes: bool | None) -> None:
            if yes:
                then()
            else:
                self.say(["nothing done"])

        self.push_screen(Confirm(question), answered)

    def action_stop(self) -> None:
        row = self._target()
        if row is None:
            return
        if not row.live:
            self.say([f"{row.label} has already ended ({row.cells[1]})"])
            return
        self._confirmed(f"Stop {row.label}?", lambda: self.act(actions.stop, row))

    def action_restart(self) -> None:
        row = self._target()
        if row is not None:
            self.say([f"restarting {row.label} …"])
            self.act(actions.restart, row)

    def action_stop_session(self) -> None:
        row = self._target()
        if row is None:
            return
        session = row.session
        if session is None:
            self.say([f"{row.label} belongs to no agent session: `s` stops it alone"])
            return
        question = f"Stop every running job of session {session[:8]}?"
        self._confirmed(question, lambda: self.act(actions.stop_session, session))

    def action_stop_earlier(self) -> None:
        where = short_path(self.board["project"] if self.board else str(self.folder))
        question = f"Stop the jobs of earlier agent sessions in {where}?"
        self._confirmed(question, lambda: self.act(actions.stop_earlier, self.session, self.folder))

    def action_clean(self) -> None:
        self.act(actions.clean)

    @work(thread=True, group="action")
    def act(self, do: Any, *args: Any) -> None:
        try:
            lines = do(*args)
        except Exception as exc:  # noqa: BLE001 - shown to the person; the app goes on
            lines = [f"failed: {exc}"]
        self.post_message(ActionDone(lines))

    def on_action_done(self, message: ActionDone) -> None:
        self.say(message.lines)
        self.tick()
