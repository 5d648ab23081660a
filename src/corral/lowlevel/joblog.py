"""A job's log file at the floor: its size cap, the count of bytes the cap dropped, and its
time index. The supervisor keeps both while the job writes; readers use them.

Offsets are counted from the first byte the job ever wrote (a log's `dropped` bytes plus the
position in the file), so they stay valid when the oldest part of the log is dropped.

The time index (`<logs>/<id>.times`) holds lines `SECONDS OFFSET`: each says that at that
time (Unix seconds) the log held exactly the bytes before OFFSET. So every byte from OFFSET
on was written at that time or later, and every byte before it earlier. The supervisor
writes one when the job starts, one when the log grows after a quiet spell, and at most one
a second while the job keeps writing.
"""

from __future__ import annotations

import os

_FALLOC_FL_COLLAPSE_RANGE = 0x08


def dropped_file(path: str) -> str:
    return path[: -len(".log")] + ".dropped" if path.endswith(".log") else path + ".dropped"


def dropped_bytes(path: str) -> int:
    """How many of the job's first bytes the size cap has dropped from the log at `path`."""
    try:
        with open(dropped_file(path), "rb") as f:
            return int(f.read().strip() or b"0")
    except (OSError, ValueError):
        return 0


def times_file(logs: str, job: str) -> str:
    """The time index of job `job`, in corral's logs folder `logs` (for any log the job
    writes: corral's own or one it was given, such as Claude Code's task output file)."""
    return f"{logs}/{job}.times"


def read_times(path: str) -> list[tuple[float, int]] | None:
    """The index's entries in order; None when there is no index."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    entries = []
    for row in data.splitlines():
        words = row.split()
        if len(words) != 2:
            continue  # a line being written as we read
        try:
            entries.append((float(words[0]), int(words[1])))
        except ValueError:
            continue
    return entries


def offset_since(entries: list[tuple[float, int]], when: float) -> int:
    """The offset from which every byte written at `when` or later lies (the bytes before
    it were all written earlier; some after it may be up to a second older than `when`)."""
    found = 0
    for seconds, offset in entries:
        if seconds > when:
            break
        found = max(found, offset)
    return found


def trim(path: str, max_bytes: int) -> int:
    """Once the log at `path` passes `max_bytes`, drop its oldest bytes so that the newest
    half of `max_bytes` is kept; return the bytes dropped now. The job keeps appending
    meanwhile (O_APPEND): where the file system can (ext4, XFS), the head is collapsed in
    place and no byte is lost; elsewhere what follows is copied forward and the file cut
    where the copy caught up with the job, so only bytes appended in the instant between
    the last read and the cut could be lost. One trimmer at a time (an advisory lock)."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size <= max_bytes:
            return 0
        want = size - max_bytes // 2
        cut = _collapse_head(fd, want) or _copy_forward(fd, want)
        if cut:
            temp = dropped_file(path) + ".tmp"
            with open(temp, "w") as f:
                f.write(str(dropped_bytes(path) + cut))
            os.replace(temp, dropped_file(path))
        return cut
    finally:
        os.close(fd)  # and the lock with it


def _collapse_head(fd: int, want: int) -> int:
    """Collapse whole blocks at the head of the file (Linux, ext4 and XFS); 0 if it cannot."""
    import sys

    if not sys.platform.startswith("linux"):
        return 0
    from corral.lowlevel import libc

    block = os.fstatvfs(fd).f_bsize or 4096
    length = want - want % block
    if length <= 0:
        return 0
    try:
        done, _ = libc.call(
            "fallocate", fd, _FALLOC_FL_COLLAPSE_RANGE, libc.int64(0), libc.int64(length)
        )
    except (ImportError, AttributeError, OSError):
        return 0
    return length if done == 0 else 0


def _copy_forward(fd: int, want: int) -> int:
    """Move the bytes from `want` on to the start, chasing the job's appends, then cut."""
    read_at, write_at = want, 0
    while chunk := os.pread(fd, 1 << 20, read_at):
        os.pwrite(fd, chunk, write_at)
        read_at += len(chunk)
        write_at += len(chunk)
    os.ftruncate(fd, write_at)
    return want
