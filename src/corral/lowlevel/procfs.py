"""The Linux /proc reader of the standard library floor: start identity, stat fields."""

from __future__ import annotations

import os
import sys

_PLATFORM_LINUX = sys.platform.startswith("linux")


def boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return "noboot"


def _decimal(digits: bytes) -> int:
    """int(digits) for ASCII digits, without int(): CPython's first conversion of a decimal
    string calls libm's log(), which maps about 230 kB of libm into a supervisor for life."""
    value = 0
    for digit in digits:
        value = value * 10 + digit - 48
    return value


def start_ticks(pid: int) -> int | None:
    """Linux: the process's start time in clock ticks since boot, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2 :].split()
    return _decimal(fields[19])


def _proc_stat(pid: int) -> tuple[int, int, int] | None:
    """(ppid, pgid, start ticks) of a Linux process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2 :].split()
    if fields[0] == b"Z":
        return None
    return _decimal(fields[1]), _decimal(fields[2]), _decimal(fields[19])


def self_identity() -> str | None:
    if not _PLATFORM_LINUX:
        return None  # readers fill it from psutil's create time
    ticks = start_ticks(os.getpid())
    return None if ticks is None else f"{boot_id()}:{ticks}"
