"""Where the control room's board comes from: the daemon (started if needed), which keeps a
warm snapshot and brings it up to date reading only what changed; or, when no daemon can
run, snapshots taken here the same way (service.board either way). Called in thread
workers: every method may block."""

from __future__ import annotations

import logging
import urllib.parse
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger("corral.tui")


class Feed(Protocol):
    source: str  # what the heading says the rows come from

    def board(self) -> tuple[dict[str, Any], list[str]]:
        """The board's rows (`service.board.Board.to_json()`) and warnings."""
        ...

    def connect(self) -> None:
        """Get ready to serve boards cheaply (start the daemon); may take seconds."""
        ...

    def read_log(
        self, job: str, after: int | None, grep: str | None, tail: int
    ) -> tuple[list[str], int | None, str | None]:
        """The job's log lines after cursor `after` (None: its last `tail` lines) matching
        `grep`, the cursor to give next, and a note when there is nothing to show."""
        ...


class LiveFeed:
    """The daemon's board once it answers; until then, and for good once it cannot run,
    snapshots taken in this process (each brought up to date from the last)."""

    def __init__(self, folder: Path, *, use_daemon: bool = True) -> None:
        self.folder = folder
        self.use_daemon = use_daemon
        self.daemon_up = False
        self.source = "snapshots" if not use_daemon else "snapshots (starting the daemon)"
        self._observed: Any = None
        self._asked = False  # whether a daemon already running was looked for

    def connect(self) -> None:
        if not self.use_daemon:
            return
        import subprocess
        import sys

        # `corral daemon --ensure` in a process of its own: the daemon it starts outlives
        # the tui and is never its child (nothing here waits for it or is signalled with it).
        try:
            done = subprocess.run(
                [sys.executable, "-m", "corral", "daemon", "--ensure"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            why = str(exc)
        else:
            if done.returncode == 0:
                self.daemon_up = True
                self.source = "daemon"
                return
            why = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
        log.warning("no daemon, taking snapshots here: %s", why)
        self.source = "snapshots (no daemon: see daemon.log)"

    def board(self) -> tuple[dict[str, Any], list[str]]:
        if self.use_daemon and not self._asked:  # one already running draws the first board
            self._asked = self.daemon_up = True
        if self.daemon_up:
            from corral.surfaces import daemon

            query = urllib.parse.urlencode({"project": str(self.folder)})
            answer = daemon.get(f"/api/board?{query}")
            if answer is not None:
                self.source = "daemon"
                data, errors = answer
                return data, errors
            self.daemon_up = False  # it went away: snapshots until it is started again
            if self.source == "daemon":
                self.source = "snapshots (the daemon stopped answering)"
        return self._direct()

    def read_log(
        self, job: str, after: int | None, grep: str | None, tail: int
    ) -> tuple[list[str], int | None, str | None]:
        return read_log(job, after, grep, tail)

    def _direct(self) -> tuple[dict[str, Any], list[str]]:
        from corral.service import board, sessions

        first = self._observed is None
        if self._observed is None:
            self._observed = sessions.observe()
        else:
            self._observed = sessions.refresh(self._observed)
        # the first board is drawn at once; CPU is measured from the next one on
        view = board.board(self.folder, observed=self._observed, cpu_interval=0 if first else 0.1)
        return view.to_json(), view.warnings


def read_log(
    job: str, after: int | None, grep: str | None, tail: int = 500
) -> tuple[list[str], int | None, str | None]:
    """The job's log lines after cursor `after` (None: its last `tail` lines) matching
    `grep`, the cursor to give next, and a note when there is nothing to follow."""
    import re

    from corral.core.text import printable
    from corral.errors import CorralError
    from corral.service import jobs, logs

    if grep is not None:
        try:
            re.compile(grep)
        except re.error as exc:
            return [], after, printable(f"search: the regex does not compile: {exc}")
    try:
        got = logs.read(
            jobs.resolve(job), after=after, grep=grep, tail=tail if after is None else None
        )
    except CorralError as exc:
        return [], None, printable(str(exc))
    return [printable(line.text) for line in got.lines], got.cursor, None
