"""The user's configuration: TOML at `paths.config_path()`. Missing file, missing keys or a
file that does not parse all mean the defaults; nothing here ever stops a command."""

from __future__ import annotations

import os

from corral import paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

BACKENDS = ("group", "tmux")


def _path() -> str:
    return paths.config_path()


def load() -> dict[str, Any]:
    path = _path()
    if not os.path.exists(path):  # the common case: no tomllib import at all
        return {}
    import tomllib

    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def backend(data: dict[str, Any] | None = None) -> str:
    """`backend = "group" | "tmux"` (default group)."""
    value = (load() if data is None else data).get("backend")
    return value if value in BACKENDS else "group"


def tmux_keep_windows(data: dict[str, Any] | None = None) -> bool:
    """`[tmux] keep_windows = true`: finished jobs' windows stay open for inspection."""
    section = (load() if data is None else data).get("tmux")
    return isinstance(section, dict) and section.get("keep_windows") is True


TMUX_COLORS = ("plain", "force")


def tmux_color(data: dict[str, Any] | None = None) -> str:
    """`[tmux] color = "plain" | "force"`: "force" asks the job's tools for colours in the
    pane (FORCE_COLOR, CLICOLOR_FORCE) and strips them from the caller's copy (default
    plain: the caller's bytes are exactly those of the default backend)."""
    section = (load() if data is None else data).get("tmux")
    value = section.get("color") if isinstance(section, dict) else None
    return value if value in TMUX_COLORS else "plain"


SESSION_END_POLICIES = ("keep", "terminate")


def session_end(data: dict[str, Any] | None = None) -> str:
    """`session_end = "keep" | "terminate"`: what the SessionEnd hook does with the
    session's jobs (default keep: they stay listed as leftovers)."""
    value = (load() if data is None else data).get("session_end")
    return value if value in SESSION_END_POLICIES else "keep"


def extra_runners(data: dict[str, Any] | None = None) -> tuple[str, ...]:
    """`long_runners = ["myserver", ...]`: more commands that start long-running jobs."""
    value = (load() if data is None else data).get("long_runners")
    if not isinstance(value, list):
        return ()
    return tuple(v for v in value if isinstance(v, str) and v.strip())


def grace(data: dict[str, Any] | None = None) -> float | None:
    """`grace = SECONDS`: time between SIGTERM and SIGKILL when stopping (None: default)."""
    value = (load() if data is None else data).get("grace")
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 600:
        return None
    return float(value)


def log_max_bytes(data: dict[str, Any] | None = None) -> int:
    """`[logs] max_bytes = N`: past this size the oldest half of a job's log is dropped
    (default 8 MiB; at least 64 KiB)."""
    section = (load() if data is None else data).get("logs")
    value = section.get("max_bytes") if isinstance(section, dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 65536:
        return 8 * 1024 * 1024
    return value
