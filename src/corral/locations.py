"""corral's state and config folders from the standard library alone, for the entry points
started with `python -I -S` (the Claude hook, the status line). `corral.paths` gives the same
answers through platformdirs; tests/test_paths.py pins that they agree."""

from __future__ import annotations

import os
import sys


def home_dir() -> str:
    """The root of corral's state: `$CORRAL_HOME`, else the platform's user state folder."""
    explicit = os.environ.get("CORRAL_HOME")
    if explicit:
        return explicit
    return _platform("XDG_STATE_HOME", "~/.local/state")


def config_path() -> str:
    """The user's TOML configuration (next to the state when CORRAL_HOME is set)."""
    explicit = os.environ.get("CORRAL_HOME")
    if explicit:
        return os.path.join(explicit, "config.toml")
    return os.path.join(_platform("XDG_CONFIG_HOME", "~/.config"), "config.toml")


def _platform(variable: str, linux_default: str) -> str:
    if sys.platform == "darwin":
        return os.path.join(os.path.expanduser("~/Library/Application Support"), "corral")
    base = os.environ.get(variable, "").strip()
    if not base or not os.path.isabs(base):
        base = os.path.expanduser(linux_default)
    return os.path.join(base, "corral")
