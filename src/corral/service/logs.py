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

DEFAULT_MAX_BYTES = 8 * 1024 * 1024
_FALLOC_FL_COLLAPSE_RANGE = 0x08


class NoLog(CorralError):
    def __init__(self, record: JobRecord) -> None:
        super().__init__(
            f"job {record.id[:8]} keeps no log: its output went to a terminal or a pipe, not "
            "a file (`corral run -d` keeps one; so does output redirected to a file)"
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


def _dropped_file(path: str) -> str:
    return path[: -len(".log")] + ".dropped" if path.endswith(".log") else path + ".dropped"


def dropped_bytes(path: str) -> int:
    try:
        with open(_dropped_file(path), "rb") as f:
            return int(f.read().strip() or b"0")
    except (OSError, ValueError):
        return 0


def is_own(path: str) -> bool:
    """Whether `path` is one of corral's own log files (the only ones it ever trims)."""
    return os.path.dirname(os.path.abspath(path)) == os.path.abspath(corral_logs_dir())


def trim(path: str, max_bytes: int | None = None) -> int:
    """Drop the oldest half of one of corral's logs once it passes `max_bytes` (config
    `[logs] max_bytes`); return the bytes dropped now. The job keeps appending meanwhile:
    the file's head is collapsed in place where the file system can (ext4, XFS), so no
    byte written during the trim is lost; elsewhere the second half is copied forward."""
    if not is_own(path):
        return 0
    if max_bytes is None:
        from corral import config

        max_bytes = config.log_max_bytes()
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        size = os.fstat(fd).st_size
        if size <= max_bytes:
            return 0
        cut = _collapse_head(fd, size // 2)
        if cut == 0:
            cut = _copy_forward(fd, size // 2)
    finally:
        os.close(fd)
    if cut:
        total = dropped_bytes(path) + cut
        temp = _dropped_file(path) + ".tmp"
        with open(temp, "w") as f:
            f.write(str(total))
        os.replace(temp, _dropped_file(path))
    return cut


def _collapse_head(fd: int, want: int) -> int:
    import sys

    if not sys.platform.startswith("linux"):
        return 0
    import ctypes

    block = os.fstatvfs(fd).f_bsize or 4096
    length = want - want % block
    if length <= 0:
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    return length if libc.fallocate(fd, _FALLOC_FL_COLLAPSE_RANGE, 0, length) == 0 else 0


def _copy_forward(fd: int, want: int) -> int:
    """Keep the bytes from `want` on (bytes the job appends during the copy may be lost)."""
    os.lseek(fd, want, os.SEEK_SET)
    rest = b""
    while chunk := os.read(fd, 1 << 20):
        rest += chunk
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, rest)
    return want


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
    redact: bool = False,
    whole: bool | None = None,
) -> LogRead:
    """The job's log as lines with cursors: all of it, the last `tail` lines, or what came
    after cursor `after`; only lines matching `grep` (a regex). A line still being written
    (no newline yet) is left for the next read while the job runs (`whole` decides; default:
    whether the job has ended). `redact` hides secret-looking values, for an agent."""
    path = log_path(record)
    if path is None:
        raise NoLog(record)
    trim(path)
    dropped = dropped_bytes(path)
    start = 0 if after is None else max(0, after - dropped)
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
    for suffix in (".log", ".dropped"):
        try:
            os.unlink(os.path.join(folder, job_id + suffix))
        except FileNotFoundError:
            pass
