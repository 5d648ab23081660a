"""Numbers, paths and job states as people read them (the CLI's tables and the tui)."""

from __future__ import annotations

import os


def human_age(seconds: float, *, exact: bool = True) -> str:
    """`42s`, `9m38s`, `2h05m`, `1d02h`; not `exact`: whole minutes from a minute on (`9m`),
    for a view redrawn every second that should not change every second."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s" if exact else f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "K", "M", "G"):
        if size < 1024 or unit == "G":
            return f"{size:.0f}{unit}" if unit == "B" else f"{size:.1f}{unit}"
        size /= 1024
    return f"{size:.1f}G"


def short_path(path: str) -> str:
    home = os.path.expanduser("~")
    return "~" + path[len(home) :] if home != "/" and path.startswith(home) else path


def job_state(state: str, exit_code: int | None, signal: int | None, failed: bool) -> str:
    """A job's state as a listing shows it: `failed (N)` or `killed` for a job that ended on
    its own badly, `exited (N)` with its code otherwise once it has one."""
    if failed:
        return "killed" if signal else f"failed ({exit_code})"
    return state if exit_code is None else f"{state} ({exit_code})"
