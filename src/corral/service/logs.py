"""Jobs' output: where it is kept, reading it with byte cursors, following it, bounding it.

A job's log is the regular file its output goes to, recorded by its supervisor (`log`):
`$CORRAL_HOME/logs/<id>.log` for a detached job, or e.g. Claude Code's task output file; a
job whose output is a pipe or a terminal has none (its output is not kept). Cursors are byte
offsets from the first byte the job ever wrote, so they stay valid when the oldest half of a
log is dropped (corral's own logs only, past the size cap).
"""

from __future__ import annotations

import os
import re
import select
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from corral import paths
from corral.adapters.ledger import JobRecord
from corral.errors import CorralError
from corral.lowlevel.joblog import dropped_bytes

DEFAULT_MAX_BYTES = 8 * 1024 * 1024


class NoLog(CorralError):
    def __init__(self, record: JobRecord) -> None:
        super().__init__(
            f"job {record.id[:8]} keeps no log: its output went to a terminal or a pipe, not "
            "a file (`corral run -d` keeps one; so does output redirected to a file)"
        )


class NoTimes(CorralError):
    def __init__(self, record: JobRecord) -> None:
        super().__init__(
            f"job {record.id[:8]} has no record of when its output was written (its "
            "supervisor kept none: the tmux backend, an older corral, or the user's inotify "
            "instances ran out); --since cannot be answered, -n can"
        )


@dataclass(frozen=True)
class LogLine:
    cursor: int  # where the next line starts: give it back as `after`
    text: str

    def to_json(self) -> dict[str, Any]:
        shown = self.text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        return {"cursor": self.cursor, "text": shown}

    def raw(self) -> bytes:
        return self.text.encode("utf-8", "surrogateescape") + b"\n"


@dataclass(frozen=True)
class LogRead:
    """Lines of a job's log. `cursor` is where the next read starts (`after`); `dropped`
    counts bytes the size cap removed, `missed` whether any of them were asked for."""

    job: str
    path: str
    lines: list[LogLine]
    cursor: int
    dropped: int = 0
    missed: bool = False
    redacted: bool = False
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.job,
            "log": self.path,
            "cursor": self.cursor,
            "dropped_bytes": self.dropped,
            "missed": self.missed,
            "redacted": self.redacted,
            "lines": [line.to_json() for line in self.lines],
        }


def corral_logs_dir() -> str:
    return os.path.join(paths.home_dir(), "logs")


def log_path(record: JobRecord) -> str | None:
    """The file the job's output goes to, or None when it keeps none."""
    recorded = record.extra.get("log")
    if isinstance(recorded, str) and recorded:
        return recorded
    own = os.path.join(corral_logs_dir(), f"{record.id}.log")  # records of older versions
    return own if os.path.exists(own) else None


def is_own(path: str) -> bool:
    """Whether `path` is one of corral's own log files (the only ones it ever trims)."""
    return os.path.dirname(os.path.abspath(path)) == os.path.abspath(corral_logs_dir())


def trim(path: str, max_bytes: int | None = None) -> int:
    """Drop the oldest bytes of one of corral's logs once it passes `max_bytes` (config
    `[logs] max_bytes`), keeping the newest half of it; return the bytes dropped now. A
    running job's supervisor does this as the job writes; readers do it too, for logs no
    supervisor watches (lowlevel.joblog.trim: one trimmer at a time, nothing the job
    appends meanwhile is lost)."""
    if not is_own(path):
        return 0
    if max_bytes is None:
        from corral import config

        max_bytes = config.log_max_bytes()
    from corral.lowlevel.joblog import trim as trim_log

    return trim_log(path, max_bytes)


def since_offset(record: JobRecord, path: str, when: float) -> int:
    """The cursor from which the job's log (at `path`) holds what it wrote at `when` (Unix
    seconds) or later (from up to a second earlier: the index's grain). Raises NoTimes when
    the job has no time index."""
    from corral.lowlevel.joblog import offset_since, read_times, times_file

    entries = read_times(times_file(corral_logs_dir(), record.id))
    if entries is None:
        raise NoTimes(record)
    try:
        st: os.stat_result | None = os.stat(path)
    except OSError:
        st = None
    if st is not None and when > st.st_mtime:
        # nothing was written since: the index's grain (the last entry may be older than
        # the bytes after it) must not hand back lines written before `when`
        return dropped_bytes(path) + st.st_size
    return offset_since(entries, when)


def _line_start(path: str, at: int) -> int:
    """Where the line holding byte `at` of the file begins (64 KiB back at most)."""
    back = max(0, at - 65536)
    try:
        with open(path, "rb") as f:
            f.seek(back)
            before = f.read(at - back)
    except OSError:
        return at
    newline = before.rfind(b"\n")
    return back + newline + 1 if newline >= 0 else (0 if back == 0 else at)


def _lines(data: bytes, start: int) -> Iterator[LogLine]:
    at = 0
    while at < len(data):
        end = data.find(b"\n", at)
        end = len(data) if end < 0 else end + 1
        # the job's own bytes (undecodable ones kept as surrogates; JSON shows U+FFFD)
        text = data[at:end].removesuffix(b"\n").decode("utf-8", "surrogateescape")
        yield LogLine(start + end, text)
        at = end


def read(
    record: JobRecord,
    *,
    tail: int | None = None,
    grep: str | None = None,
    after: int | None = None,
    since: float | None = None,
    redact: bool = False,
    whole: bool | None = None,
) -> LogRead:
    """The job's log as lines with cursors: all of it, the last `tail` lines, what came
    after cursor `after`, or what it wrote since `since` (Unix seconds; see since_offset);
    only lines matching `grep` (a regex). A line still being written
    (no newline yet) is left for the next read while the job runs (`whole` decides; default:
    whether the job has ended). `redact` hides secret-looking values, for an agent."""
    path = log_path(record)
    if path is None:
        raise NoLog(record)
    trim(path)
    if since is not None:
        after = max(after or 0, since_offset(record, path, since))
    dropped = dropped_bytes(path)
    start = 0 if after is None else max(0, after - dropped)
    if since is not None and start > 0:
        start = _line_start(path, start)  # a line the job was writing at that moment
    missed = after is not None and after < dropped
    try:
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read()
    except FileNotFoundError:
        data = b""
    if start == 0 and dropped and data:
        skip = data.find(b"\n") + 1  # the first line was cut by the trim
        data, start = data[skip:], skip
    if not (record.final if whole is None else whole):
        data = data[: data.rfind(b"\n") + 1]
    lines = list(_lines(data, dropped + start))
    cursor = dropped + start + len(data)
    if grep is not None:
        pattern = re.compile(grep)
        lines = [line for line in lines if pattern.search(line.text)]
    if tail is not None:
        lines = lines[-tail:] if tail > 0 else []
    if redact:
        lines = [LogLine(line.cursor, redact_text(line.text)) for line in lines]
    return LogRead(record.id, path, lines, cursor, dropped, missed, redact)


def redact_text(text: str) -> str:
    """Secret-looking values in a log line hidden, as for any output handed to an agent."""
    from corral.lowlevel.redact import redact_text as hide

    return hide(text)


def follow(
    record: JobRecord,
    after: int,
    emit: Callable[[LogRead], None],
    grep: str | None = None,
    redact: bool = False,
) -> LogRead:
    """Emit what the job writes after cursor `after` as it is written (file events, no
    polling), until the job ends; return the last read (its cursor)."""
    from corral.adapters import procs
    from corral.adapters.filewatch import FALLBACK_STEP, FileWatch
    from corral.adapters.identity import ProcessIdentity

    path = log_path(record)
    if path is None:
        raise NoLog(record)
    handle = None
    if not record.final and record.started_at is not None:
        handle = procs.open_verified(ProcessIdentity(record.pid, record.started_at))
    watch = FileWatch(path)
    poller = select.poll()
    if watch.fileno() is not None:
        poller.register(watch.fileno() or 0, select.POLLIN)
    if handle is not None and handle.fd is not None:
        poller.register(handle.fd, select.POLLIN)
    step = None if watch.fileno() is not None and handle and handle.fd else FALLBACK_STEP
    try:
        while True:
            ended = handle is None or procs.has_exited(handle)
            watch.drain()
            got = read(record, after=after, grep=grep, redact=redact, whole=ended)
            if got.lines or got.missed:
                emit(got)
            after = got.cursor
            if ended:
                return got
            poller.poll(None if step is None else int(step * 1000))
    finally:
        watch.close()
        if handle is not None:
            handle.close()


def remove(job_id: str) -> None:
    """Forget a job's own log (`corral clean`)."""
    folder = corral_logs_dir()
    for suffix in (".log", ".dropped", ".times"):
        try:
            os.unlink(os.path.join(folder, job_id + suffix))
        except FileNotFoundError:
            pass
