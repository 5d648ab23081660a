"""What the control room's workers tell it: a board read, an action done, log lines."""

from __future__ import annotations

from typing import Any

from textual.message import Message


class BoardReady(Message):
    def __init__(self, board: dict[str, Any] | None, warnings: list[str], source: str) -> None:
        super().__init__()
        self.board, self.warnings, self.source = board, warnings, source


class ActionDone(Message):
    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines


class LogLines(Message):
    def __init__(
        self, job: str, lines: list[str], cursor: int | None, note: str | None, reset: bool
    ) -> None:
        super().__init__()
        self.job, self.lines, self.cursor, self.note, self.reset = job, lines, cursor, note, reset
