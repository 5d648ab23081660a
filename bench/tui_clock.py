"""A Textual driver for the control room's first-paint benchmark (bench_tui): Textual's
headless driver, but the app renders every frame as it would for a terminal and hands it
here. It notes when the first frame is written with every job in the table (and the ports
of those that listen), then when the first is written after the whole board (other
processes, listeners) came, and ends the app. `corral tui` runs as a person starts it, with
TEXTUAL_DRIVER=bench.tui_clock:PaintClock; the figures go to $CORRAL_BENCH_OUT."""

from __future__ import annotations

import os
import resource
import time
from resource import RUSAGE_CHILDREN, RUSAGE_SELF
from typing import Any

from textual.drivers.headless_driver import HeadlessDriver


class PaintClock(HeadlessDriver):
    @property
    def is_headless(self) -> bool:
        return False  # frames are rendered to text and written, as for a terminal

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._start = float(os.environ["CORRAL_BENCH_START"])
        self._jobs = int(os.environ["CORRAL_BENCH_JOBS"])
        self._ports = int(os.environ["CORRAL_BENCH_PORTS"])
        self._first: tuple[float, float] | None = None

    def write(self, data: str) -> None:
        app: Any = self._app
        rows = [r for r in getattr(app, "rows", {}).values() if r.kind == "job"]
        ports = [r.cells[2] for r in rows if r.cells[2] != "-"]
        if len(rows) < self._jobs or len(ports) < self._ports:
            return
        shown = ports or [r.cells[0] for r in rows]  # the ports, or else the jobs' ids
        if not any(text in data for text in shown):
            return  # a frame not showing the job rows (the heading alone, say)
        mine, theirs = (resource.getrusage(r) for r in (RUSAGE_SELF, RUSAGE_CHILDREN))
        cpu = mine.ru_utime + mine.ru_stime + theirs.ru_utime + theirs.ru_stime
        now = (time.time() - self._start) * 1000, cpu * 1000  # with the processes it waited for
        if self._first is None:
            self._first = now
        if not (app.board or {}).get("complete", True):
            return
        with open(os.environ["CORRAL_BENCH_OUT"], "w") as out:
            print(*self._first, now[0], app.feed.source, file=out)
        app.exit()
