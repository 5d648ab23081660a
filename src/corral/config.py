"""The user's configuration: TOML at `paths.config_file()`. Missing file, missing keys or a
file that does not parse all mean the defaults; nothing here ever stops a command."""

from __future__ import annotations

import os
from typing import Any

from corral import paths

BACKENDS = ("group", "tmux")


def _path() -> str:
    try:
        return str(paths.config_file())
    except ImportError:  # started with `python -I -S` (the tmux wrapper): no platformdirs
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
        return os.path.join(base, "corral", "config.toml")


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
