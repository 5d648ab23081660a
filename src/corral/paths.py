"""Where corral keeps its state. `CORRAL_HOME` relocates all of it (tests always set it).

The functions that answer with text import no pathlib: the hook's path reads the ledger and
takes its reservations through them, and pathlib (with urllib.parse and ipaddress) would cost
it 3 ms to import."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TypeVar

from corral.lowlevel import locations

if TYPE_CHECKING:
    from pathlib import Path

_Folder = TypeVar("_Folder", bound=str | os.PathLike[str])


def home() -> Path:
    """The root of corral's state: ledger, database, sockets, logs."""
    from pathlib import Path

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


def config_path() -> str:
    """The user's TOML configuration (next to the state when CORRAL_HOME is set)."""
    explicit = os.environ.get("CORRAL_HOME")
    if explicit:
        return os.path.join(explicit, "config.toml")
    try:
        import platformdirs
    except ImportError:
        return locations.config_path()
    return os.path.join(platformdirs.user_config_dir("corral", appauthor=False), "config.toml")


def config_file() -> Path:
    """`config_path()` as a Path."""
    from pathlib import Path

    return Path(config_path())


def ledger_dir() -> str:
    """The ledger: one file per job, written by its supervisor."""
    return os.path.join(home_dir(), "ledger")


def database() -> Path:
    return home() / "corral.sqlite3"


def log_file() -> Path:
    return home() / "corral.log"


def ensure_private_dir(path: _Folder) -> _Folder:
    """Create `path` (and parents) and make it 0700: the ledger's safety rests on it."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    os.chmod(path, 0o700)
    return path
