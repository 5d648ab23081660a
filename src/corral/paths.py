"""Where corral keeps its state, as pathlib paths: a thin view over `corral.lowlevel.locations`,
the one definition every program uses (the hook, the status line and the supervisor read it
directly). `CORRAL_HOME` relocates all of it (tests always set it).

The functions that answer with text import no pathlib: the hook's path reads the ledger and
takes its reservations through them, and pathlib (with urllib.parse and ipaddress) would cost
it 3 ms to import."""

from __future__ import annotations

import os

from corral.lowlevel import locations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import TypeVar

    _Folder = TypeVar("_Folder", bound=str | os.PathLike[str])

home_dir = locations.home_dir
config_path = locations.config_path
ledger_dir = locations.ledger_dir


def home() -> Path:
    """The root of corral's state: ledger, database, sockets, logs."""
    from pathlib import Path

    return Path(home_dir())


def config_file() -> Path:
    """`config_path()` as a Path."""
    from pathlib import Path

    return Path(config_path())


def database() -> Path:
    return home() / "corral.sqlite3"


def log_file() -> Path:
    from pathlib import Path

    return Path(locations.log_path())


def ensure_private_dir(path: _Folder) -> _Folder:
    """Create `path` (and the folders between corral's home and it) with mode 0700; an
    existing folder corral did not create is never changed (`locations.ensure_private`)."""
    locations.ensure_private(str(path))  # a str or a pathlib.Path
    return path
