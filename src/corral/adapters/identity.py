"""A process is (pid, start time). The one chokepoint that reads either from the OS.

Linux: start ticks from /proc/<pid>/stat with the boot id (exact, cheap, and what the
supervisor records about itself). Elsewhere: psutil's create time.
"""

from __future__ import annotations

import sys
from typing import NamedTuple

from corral.lowlevel.procfs import boot_id

_LINUX = sys.platform.startswith("linux")


class ProcessIdentity(NamedTuple):
    pid: int
    started_at: str

    def __str__(self) -> str:
        return f"{self.pid}@{self.started_at}"


# Fields of /proc/<pid>/stat counted after the process's name (see `stat_fields`).
STATE, PPID, PGRP, SESSION, UTIME, STIME, START, RSS = 0, 1, 2, 3, 11, 12, 19, 21


def stat_fields(raw: bytes) -> list[bytes]:
    """The fields of a /proc/<pid>/stat line that follow the name (which may hold spaces and
    parentheses), up to RSS: [STATE] is b"Z" for a zombie, [START] the start ticks."""
    return raw[raw.rfind(b")") + 2 :].split(None, RSS + 1)


def read_stat(pid: int) -> list[bytes] | None:
    """Linux: the stat fields of `pid` (see `stat_fields`), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = stat_fields(f.read())
    except OSError:
        return None
    return fields if len(fields) > RSS else None


def _linux_started_at(pid: int) -> str | None:
    fields = read_stat(pid)
    return None if fields is None else f"{_boot_id()}:{int(fields[START])}"


_BOOT_ID: str | None = None


def _boot_id() -> str:
    global _BOOT_ID
    if _BOOT_ID is None:
        _BOOT_ID = boot_id()
    return _BOOT_ID


def _psutil_started_at(pid: int) -> str | None:
    import psutil

    try:
        return f"{psutil.Process(pid).create_time():.6f}"
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


started_at = _linux_started_at if _LINUX else _psutil_started_at


def _linux_parent(pid: int) -> int | None:
    fields = read_stat(pid)
    return None if fields is None else int(fields[PPID])


def _psutil_parent(pid: int) -> int | None:
    import psutil

    try:
        return int(psutil.Process(pid).ppid())
    except psutil.Error:
        return None


parent_pid = _linux_parent if _LINUX else _psutil_parent  # None: the process is gone


def identity_of(pid: int) -> ProcessIdentity | None:
    """The identity of the live process `pid`, or None if there is none."""
    if pid <= 0:
        return None
    value = started_at(pid)
    return None if value is None else ProcessIdentity(pid, value)


def is_alive(identity: ProcessIdentity) -> bool:
    """True when `identity.pid` is still the very process that was recorded."""
    return started_at(identity.pid) == identity.started_at


def cmdline(pid: int) -> list[str] | None:
    """The process's argv, or None when it is gone or unreadable."""
    if _LINUX:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                raw = f.read()
        except OSError:
            return None
        return [part.decode("utf-8", "surrogateescape") for part in raw.split(b"\0") if part]
    import psutil

    try:
        return list(psutil.Process(pid).cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


def environ_has(pid: int, name: str, value: str) -> bool | None:
    """Whether the process's initial environment holds NAME=VALUE; None if unreadable."""
    if _LINUX:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                raw = f.read()
        except OSError:
            return None
        entry = f"{name}={value}".encode()
        return entry in raw and entry in raw.split(b"\0")
    import psutil

    try:
        return bool(psutil.Process(pid).environ().get(name) == value)
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
    except psutil.AccessDenied:
        return None
