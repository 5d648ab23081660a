"""A process is (pid, start time). The platform switch for reading either from the OS.

Linux: lowlevel.procfs, the one /proc reader (start ticks with the boot id: exact, cheap, and
what the supervisor records about itself). Elsewhere: psutil's create time.
"""

from __future__ import annotations

import sys

from corral.lowlevel import procfs
from corral.lowlevel.named import NamedTuple

_LINUX = sys.platform.startswith("linux")


class ProcessIdentity(NamedTuple):
    pid: int
    started_at: str

    def __str__(self) -> str:
        return f"{self.pid}@{self.started_at}"


def _psutil_started_at(pid: int) -> str | None:
    import psutil

    try:
        return f"{psutil.Process(pid).create_time():.6f}"
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


started_at = procfs.started_at if _LINUX else _psutil_started_at


def _linux_parent(pid: int) -> int | None:
    fields = procfs.read_stat(pid)
    return None if fields is None else int(fields[procfs.PPID])


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
        return procfs.cmdline(pid)
    import psutil

    try:
        return list(psutil.Process(pid).cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


def environ_has(pid: int, name: str, value: str) -> bool | None:
    """Whether the process's initial environment holds NAME=VALUE; None if unreadable."""
    if _LINUX:
        return procfs.environ_has(pid, name, value)
    import psutil

    try:
        return bool(psutil.Process(pid).environ().get(name) == value)
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
    except psutil.AccessDenied:
        return None
