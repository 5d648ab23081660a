"""Where the control room's board comes from: the daemon (started if needed), which keeps a
warm snapshot and brings it up to date reading only what changed; or, when no daemon can
run, snapshots taken here the same way (service.board either way). Called in thread
workers: every method may block."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger("corral.tui")
RECORD_FOR = 5.0  # seconds a followed job's record is reused
# Seconds after the daemon stopped answering that it is first asked again (it may have been
# slow once on a loaded machine, or been started again); each time it still does not answer
# the wait doubles, up to ASK_AGAIN_MAX: a daemon always slower than get_unless's 5 s holds
# the board's thread that long once in a while, not once every ASK_AGAIN.
ASK_AGAIN = 10.0
ASK_AGAIN_MAX = 80.0
clock = time.monotonic  # what the waits are measured with (tests move it on)
ENSURE_TIMEOUT = 30.0  # seconds `corral daemon --ensure` may take before it is asked later


class Feed(Protocol):
    source: str  # where the rows come from now
    drawn_from: str  # where the last board given came from: what the heading says

    def board(self) -> tuple[dict[str, Any], list[str]]:
        """The board's rows (`service.board.Board.to_json()`) and warnings."""
        ...

    def connect(self) -> None:
        """Get ready to serve boards cheaply (start the daemon); may take seconds."""
        ...

    def ready(self) -> tuple[dict[str, Any], list[str]] | None:
        """The first board, when it was read before the app started (`prefetch`) and is
        there already; else None. Never blocks."""
        ...

    def read_log(
        self, job: str, after: int | None, grep: str | None, tail: int
    ) -> tuple[list[str], int | None, str | None]:
        """The job's log lines after cursor `after` (None: its last `tail` lines) matching
        `grep`, the cursor to give next, and a note when there is nothing to show."""
        ...


class LiveFeed:
    """The daemon's board once it answers; until then, for good once it cannot run, and
    while it does not answer (asked again after ASK_AGAIN seconds, then after twice as long
    each time, up to ASK_AGAIN_MAX), snapshots taken in this process (each brought up to
    date from the last)."""

    def __init__(self, folder: Path, *, use_daemon: bool = True) -> None:
        self.folder = folder
        self.use_daemon = use_daemon
        self.daemon_up = False
        self.source = "snapshots" if not use_daemon else "snapshots (starting the daemon)"
        # `source` changes in connect's thread: a board taken here while the daemon came up
        # is still a snapshot's (the board's thread sets this, and the app reads it there)
        self.drawn_from = self.source
        self._observed: Any = None
        # the daemon's last board in full: data, warnings, ETag, when it came
        self._served: tuple[dict[str, Any], list[str], str | None, float] | None = None
        self.unchanged = 0  # boards the daemon answered were unchanged (304)
        self._jobs_read = False  # whether the first board (the jobs alone) was read
        self._asked = False  # whether a daemon already running was looked for
        self._record: tuple[str, float] | None = None  # the job whose log is read, when
        self._record_data: Any = None  # its record (adapters.ledger.JobRecord) as read then
        self._early: threading.Thread | None = None
        self._early_board: tuple[dict[str, Any], list[str]] | None = None
        self._ask_at: float | None = None  # when a daemon that stopped answering is asked
        self._misses = 0  # how many times in a row it did not answer
        self._cannot_run = False  # `daemon --ensure` failed: asked no more
        self._connected = 0  # times connect() found the daemon running (another thread)

    def prefetch(self) -> None:
        """Start reading the first board now, in a thread: it comes while Textual loads (the
        daemon's, or the jobs alone when none answers)."""

        elsewhere = None if self.use_daemon else self._jobs_elsewhere()

        def read() -> None:
            try:
                if elsewhere is not None:
                    self._early_board = self._jobs_read_elsewhere(elsewhere)
                if self._early_board is None:
                    self._early_board = self._board()
            except Exception:  # the app's first read tries again, and says why
                log.exception("the first board could not be read early")

        self._early = threading.Thread(target=read, name="corral-first-board", daemon=True)
        self._early.start()

    def _jobs_elsewhere(self) -> subprocess.Popen[str] | None:
        """A process reading the jobs alone (surfaces.tui.jobs_now), on another core while
        this one imports Textual (a thread here would wait for the interpreter's lock)."""
        try:
            return subprocess.Popen(
                [sys.executable, "-m", "corral.surfaces.tui.jobs_now", str(self.folder)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        except OSError:
            log.exception("the jobs could not be read in a process of their own")
            return None

    def _jobs_read_elsewhere(
        self, child: subprocess.Popen[str]
    ) -> tuple[dict[str, Any], list[str]] | None:
        """The jobs board the process read; None when it could not (read here then)."""
        out, _ = child.communicate(timeout=30)
        try:
            data, warnings = json.loads(out)
        except ValueError:
            log.warning("the jobs read in a process of their own: exit status %s", child.returncode)
            return None
        self._jobs_read = True
        return data, warnings

    def ready(self) -> tuple[dict[str, Any], list[str]] | None:
        early = self._early
        if early is None or early.is_alive() or self._early_board is None:
            return None
        self._early = None
        return self._early_board

    def connect(self) -> None:
        if not self.use_daemon or (self.daemon_up and self.source == "daemon"):
            return  # the first board came from the daemon: it runs
        # `corral daemon --ensure` in a process of its own: the daemon it starts outlives
        # the tui and is never its child (nothing here waits for it or is signalled with it).
        try:
            done = subprocess.run(
                [sys.executable, "-m", "corral", "daemon", "--ensure"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=ENSURE_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:  # slow, maybe not failed: asked again later
            log.warning("no daemon yet, taking snapshots here: %s", exc)
            self._ask_at = clock() + ASK_AGAIN
            self.source = "snapshots (the daemon is slow to start)"
            return
        except OSError as exc:
            why = str(exc)
        else:
            if done.returncode == 0:
                self._cannot_run, self._ask_at, self._misses = False, None, 0
                self._connected += 1
                self.daemon_up = True
                self.source = "daemon"
                return
            why = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
        log.warning("no daemon, taking snapshots here: %s", why)
        self._cannot_run = True
        self.source = "snapshots (no daemon: see daemon.log)"

    def board(self) -> tuple[dict[str, Any], list[str]]:
        early, self._early = self._early, None
        if early is not None:
            early.join()
            if self._early_board is not None:
                return self._early_board
        return self._board()

    def _board(self) -> tuple[dict[str, Any], list[str]]:
        first = self.use_daemon and not self._asked
        if first:  # one already running draws the first board
            self._asked = self.daemon_up = True
        ask_at = self._ask_at
        if ask_at is not None and not self._cannot_run and clock() >= ask_at:
            self.daemon_up = True  # it may have been slow (a loaded machine) or started again
        if self.daemon_up:
            from corral.surfaces import daemon

            # the first board is drawn at once; CPU is measured from the next one on
            fields = {"project": str(self.folder), **({"quick": "true"} if first else {})}
            query = urllib.parse.urlencode(fields)
            last = self._served
            connected = self._connected
            answer = daemon.get_unless(f"/api/board?{query}", last[2] if last else None)
            if answer is not None:
                self.source = self.drawn_from = "daemon"
                self._ask_at, self._misses = None, 0
                data, errors, etag = answer
                now = time.monotonic()
                if data is None and last is not None:  # unchanged but for the ages
                    from corral.service import board

                    self.unchanged += 1
                    return board.aged(last[0], now - last[3]), last[1]
                self._served = (data, errors, etag, now)
                return data, errors
            if self._connected != connected:  # asked as connect() started it: not a miss
                return self._direct()
            self.daemon_up = False  # it went away: snapshots until it answers again
            self._ask_at = clock() + min(ASK_AGAIN * 2**self._misses, ASK_AGAIN_MAX)
            self._misses += 1
            if self.source == "daemon":
                self.source = "snapshots (the daemon stopped answering)"
        return self._direct()

    def read_log(
        self, job: str, after: int | None, grep: str | None, tail: int
    ) -> tuple[list[str], int | None, str | None]:
        # the job's record is read again every few seconds, not at every follow (a ledger
        # of 200 jobs is 200 files): it says where the log is and whether the job ended
        now = time.monotonic()
        last = self._record
        if last is None or last[0] != job or now - last[1] > RECORD_FOR:
            self._record = (job, now)
            self._record_data = None
        lines, cursor, note, self._record_data = read_log(job, after, grep, tail, self._record_data)
        return lines, cursor, note

    def _direct(self) -> tuple[dict[str, Any], list[str]]:
        from corral.service import board

        starting = "snapshots (starting the daemon)"
        self.drawn_from = self.source if self.source != "daemon" else starting
        if not self._jobs_read:  # the jobs alone first: drawn while the rest is read
            self._jobs_read = True
            view = board.jobs_board(self.folder)
            return view.to_json(), view.warnings
        from corral.service import sessions

        if self._observed is None:
            # drawn at once: what it saw is stored by the next refresh (a write can take
            # longer than the whole snapshot)
            self._observed = sessions.observe(remember=False)
        else:
            self._observed = sessions.refresh(self._observed)
        view = board.board(self.folder, observed=self._observed)  # drawn after the jobs
        return view.to_json(), view.warnings


def read_log(
    job: str, after: int | None, grep: str | None, tail: int = 500, record: Any = None
) -> tuple[list[str], int | None, str | None, Any]:
    """The job's log lines after cursor `after` (None: its last `tail` lines) matching
    `grep`, the cursor to give next, a note when there is nothing to follow, and the job's
    record (`record`, or read now when None)."""
    import re

    from corral.core.text import printable
    from corral.errors import CorralError
    from corral.service import jobs, logs

    if grep is not None:
        try:
            re.compile(grep)
        except re.error as exc:
            return [], after, printable(f"search: the regex does not compile: {exc}"), record
    try:
        record = record if record is not None else jobs.resolve(job)
        got = logs.read(record, after=after, grep=grep, tail=tail if after is None else None)
    except CorralError as exc:
        return [], None, printable(str(exc)), None
    return [printable(line.text) for line in got.lines], got.cursor, None, record
