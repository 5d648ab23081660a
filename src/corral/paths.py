"""Where corral keeps its state. `CORRAL_HOME` relocates all of it (tests always set it)."""

from __future__ import annotations

import os
from pathlib import Path

from corral import locations


def home() -> Path:
    """The root of corral's state: ledger, database, sockets, logs."""
    return Path(home_dir())


def home_dir() -> str:
    """`home()` as text, for entry points started with `python -I -S` (hook, status line):
    without site-packages, the platform rules of platformdirs are applied by hand."""
    explicit = os.environ.get("CORRAL_HOME")
    if explicit:
        return explicit
    try:
        import platformdirs  # light, but only needed without CORRAL_HOME
    except ImportError:
        return locations.home_dir()
    return str(platformdirs.user_state_dir("corral", appauthor=False))


def config_file() -> Path:
    """The user's TOML configuration (next to the state when CORRAL_HOME is set)."""
    explicit = os.environ.get("CORRAL_HOME")
    if explicit:
        return Path(explicit) / "config.toml"
    try:
        import platformdirs
    except ImportError:
        return Path(locations.config_path())
    return Path(platformdirs.user_config_dir("corral", appauthor=False)) / "config.toml"


def ledger_dir() -> Path:
    return home() / "ledger"


def database() -> Path:
    return home() / "corral.sqlite3"


def log_file() -> Path:
    return home() / "corral.log"


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) and make it 0700: the ledger's safety rests on it."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path
