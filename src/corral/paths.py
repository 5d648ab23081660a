"""Where corral keeps its state. `CORRAL_HOME` relocates all of it (tests always set it)."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """The root of corral's state: ledger, database, sockets, logs."""
    explicit = os.environ.get("CORRAL_HOME")
    if explicit:
        return Path(explicit)
    import platformdirs  # light, but only needed without CORRAL_HOME

    return Path(platformdirs.user_state_dir("corral", appauthor=False))


def config_file() -> Path:
    """The user's TOML configuration (next to the state when CORRAL_HOME is set)."""
    explicit = os.environ.get("CORRAL_HOME")
    if explicit:
        return Path(explicit) / "config.toml"
    import platformdirs

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
