"""The one Linux /proc reader: stat fields, a process's start identity, its children, its
command line and its environment markers. Every part of corral that reads /proc goes through
here (the supervisor, the status line, the identity checks, the scanner, the tmux backend).

Standard library only, and cheap to import: `posix` and `sys` (no `os`); files are read with
posix.open/read/close (`read`), a third of what a buffered file object costs per file,
which counts when a listing reads a few files of each of hundreds of processes. Functions
answer None when the process is gone or unreadable; listing callers skip it, acting callers
say so. Elsewhere than Linux (no /proc) the platform switch is adapters.identity's (psutil).
"""

import posix
import sys

# No `from __future__ import annotations`: it imports the `__future__` module at run time
# (the status line's budget); annotations naming more than a builtin are strings.

_PLATFORM_LINUX = sys.platform.startswith("linux")
LINUX = _PLATFORM_LINUX

# Fields of /proc/<pid>/stat counted after the process's name (see `stat_fields`).
STATE, PPID, PGRP, SESSION, UTIME, STIME, START, RSS = 0, 1, 2, 3, 11, 12, 19, 21
THREADS = 17

_BOOT_ID: str | None = None


def read(path: str, single: bool = False) -> bytes:
    """The whole content of a /proc file (OSError when it cannot be read). A file of many
    records (children, status, smaps) may come a part at a time, short reads before its end,
    so it is read until the kernel answers nothing; a `single` record (a stat line, under
    1 kB) comes whole in one read."""
    fd = posix.open(path, posix.O_RDONLY | posix.O_CLOEXEC)
    try:
        chunks = [posix.read(fd, 4096)]
        while chunks[-1] and not single:
            chunks.append(posix.read(fd, 65536))
    finally:
        posix.close(fd)
    return b"".join(chunks)


def boot_id() -> str:
    """This boot's id (a start time in ticks is only unique within one boot)."""
    global _BOOT_ID
    if _BOOT_ID is None:
        try:
            raw = read("/proc/sys/kernel/random/boot_id", single=True)  # 37 bytes: one read
            _BOOT_ID = raw.decode("ascii", "replace").strip()
        except OSError:
            _BOOT_ID = "noboot"
    return _BOOT_ID


def _decimal(digits: bytes) -> int:
    """int(digits) for ASCII digits, without int(): CPython's first conversion of a decimal
    string calls libm's log(), which maps about 230 kB of libm into a supervisor for life."""
    value = 0
    for digit in digits:
        value = value * 10 + digit - 48
    return value


def stat_fields(raw: bytes) -> "list[bytes]":
    """The fields of a /proc/<pid>/stat line that follow the name (which may hold spaces and
    parentheses), up to RSS: [STATE] is b"Z" for a zombie, [START] the start ticks. A line
    cut short gives fewer fields: check len() > RSS before reading past START."""
    return raw[raw.rfind(b")") + 2 :].split(None, RSS + 1)


def stat_name(raw: bytes) -> str:
    """The process's name (`comm`) from its /proc/<pid>/stat line."""
    return raw[raw.find(b"(") + 1 : raw.rfind(b")")].decode("utf-8", "replace")


def read_stat(pid: "int | str") -> "list[bytes] | None":
    """The stat fields of `pid` (see `stat_fields`), or None when it is gone or unreadable."""
    try:
        fields = stat_fields(read(f"/proc/{pid}/stat", single=True))
    except OSError:
        return None
    return fields if len(fields) > RSS else None


def start_ticks(pid: int) -> "int | None":
    """The process's start time in clock ticks since boot, or None if it is gone."""
    fields = read_stat(pid)
    return None if fields is None else _decimal(fields[START])


def _proc_stat(pid: "int | bytes") -> "tuple[int, int, int] | None":
    """(ppid, pgid, start ticks) of a live process, or None if it is gone or a zombie."""
    fields = read_stat(pid.decode() if isinstance(pid, bytes) else pid)
    if fields is None or fields[STATE] == b"Z":
        return None
    return _decimal(fields[PPID]), _decimal(fields[PGRP]), _decimal(fields[START])


proc_stat = _proc_stat


def started_at(pid: int) -> "str | None":
    """The process's start identity, `<boot id>:<start ticks>`, or None if it is gone."""
    ticks = start_ticks(pid)
    return None if ticks is None else f"{boot_id()}:{ticks}"


def self_identity() -> "str | None":
    if not _PLATFORM_LINUX:
        return None  # readers fill it from psutil's create time
    ticks = start_ticks(posix.getpid())
    return None if ticks is None else f"{boot_id()}:{ticks}"


def pids() -> "list[str]":
    """Every pid folder of /proc (empty without /proc)."""
    try:
        return [e for e in posix.listdir("/proc") if e.isdigit()]
    except OSError:
        return []


def process_table() -> "dict[int, tuple[int, int, int]] | None":
    """pid -> (ppid, pgid, start ticks) of every live process (zombies left out); None
    without /proc."""
    try:
        entries = posix.listdir("/proc")
    except OSError:
        return None
    table = {}
    for entry in entries:
        if entry.isdigit():
            info = _proc_stat(entry.encode())
            if info is not None:
                table[_decimal(entry.encode())] = info
    return table


def children(pid: int, threads: bool = True) -> "list[int] | None":
    """The children of `pid` from the kernel's per-thread lists
    (/proc/<pid>/task/<tid>/children): cheap, no walk over every process. None when the
    kernel does not keep them (CONFIG_PROC_CHILDREN) or the process is gone: walk a
    process_table instead. Children reparented to a subreaper appear under it. `threads`
    False: only the main thread's list (a process known to run one thread, such as corral's
    supervisor: one file read instead of a folder listing and a read per thread)."""
    if threads:
        try:
            tasks = posix.listdir(f"/proc/{pid}/task")
        except OSError:
            return None
    else:
        tasks = [str(pid)]
    found: list[int] = []
    for tid in tasks:
        try:
            found += [_decimal(c) for c in read(f"/proc/{pid}/task/{tid}/children").split()]
        except FileNotFoundError:
            if tid == str(pid):
                return None  # no children files on this kernel
        except OSError:
            continue  # the thread ended
    return found


def descendants(pid: int, table: "dict[int, tuple[int, int, int]] | None" = None) -> "list[int]":
    """Every live descendant of `pid`: from the kernel's children lists when it keeps them
    (and no `table` is given), else from `table` (or a fresh process_table)."""
    if table is None:
        found = _descendants_by_children(pid)
        if found is not None:
            return found
        table = process_table() or {}
    tree: dict[int, list[int]] = {}
    for child, (ppid, _, _) in table.items():
        tree.setdefault(ppid, []).append(child)
    found, todo = [], [pid]
    while todo:
        for child in tree.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _descendants_by_children(pid: int) -> "list[int] | None":
    first = children(pid)
    if first is None:
        return None  # gone, or a kernel without children lists
    found: list[int] = []
    todo = list(first)
    while todo:
        child = todo.pop()
        found.append(child)
        todo += children(child) or ()  # None: it ended meanwhile
    return found


def cmdline(pid: int) -> "list[str] | None":
    """The process's argv, or None when it is gone or unreadable."""
    try:
        raw = read(f"/proc/{pid}/cmdline")
    except OSError:
        return None
    return [part.decode("utf-8", "surrogateescape") for part in raw.split(b"\0") if part]


def environ_value(pid: int, name: str) -> "str | None":
    """The value of NAME in the process's initial environment; None if absent or unreadable."""
    try:
        raw = read(f"/proc/{pid}/environ")
    except OSError:
        return None
    key = name.encode() + b"="
    for entry in raw.split(b"\0"):
        if entry.startswith(key):
            return entry[len(key) :].decode("utf-8", "replace")
    return None


def executable(pid: int) -> str:
    """The program the process runs (its `exe` link); "" when it cannot be read."""
    try:
        return posix.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


def ignored_signals(pid: int) -> "set[int]":
    """The signals the process ignores (its SigIgn mask); empty when it cannot be read."""
    try:
        for row in read(f"/proc/{pid}/status").split(b"\n"):
            if row.startswith(b"SigIgn:"):
                mask = int(row.split()[1], 16)
                return {sig for sig in range(1, 65) if mask >> (sig - 1) & 1}
    except (OSError, ValueError, IndexError):
        pass
    return set()


def environ_has(pid: int, name: str, value: str) -> "bool | None":
    """Whether the process's initial environment holds NAME=VALUE; None if unreadable."""
    try:
        raw = read(f"/proc/{pid}/environ")
    except OSError:
        return None
    entry = f"{name}={value}".encode()
    return entry in raw and entry in raw.split(b"\0")
