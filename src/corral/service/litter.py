"""Files a failed write or a supervisor that could not start leaves in the ledger folder:
0-byte `.<id>.<pid>.tmp` files (a write that ran out of space) and `<id>.stop` FIFOs with
no live record (a supervisor that fell back to running its line unsupervised). `clean`
and `doctor --fix` remove them; nothing a live job uses is ever litter."""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass

# A temp file lives for microseconds and a stop channel is made just before its record:
# anything this old is not being written by anyone.
LITTER_AGE = 60.0


@dataclass(frozen=True)
class Litter:
    path: str
    why: str


def find(ledger: str, now: float | None = None) -> list[Litter]:
    """Litter in `ledger` (the folder's own entries only; nothing is followed)."""
    now = time.time() if now is None else now
    try:
        names = os.listdir(ledger)
    except OSError:
        return []
    found = []
    for name in sorted(names):
        path = os.path.join(ledger, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if now - st.st_mtime < LITTER_AGE:
            continue
        if name.startswith(".") and name.endswith(".tmp") and stat.S_ISREG(st.st_mode):
            found.append(Litter(path, "temporary file of a write that never finished"))
        elif name.endswith(".stop") and stat.S_ISFIFO(st.st_mode):
            why = _orphan_channel(ledger, name[: -len(".stop")])
            if why:
                found.append(Litter(path, why))
    return found


def _orphan_channel(ledger: str, job_id: str) -> str | None:
    import json

    try:
        with open(os.path.join(ledger, f"{job_id}.json"), "rb") as f:
            data = json.loads(f.read())
    except FileNotFoundError:
        return "stop channel of a job that has no record"
    except (OSError, ValueError):
        return None  # an unreadable record: `corral doctor` reports it, its FIFO stays
    if isinstance(data, dict) and data.get("state") in ("exited", "stopped", "killed"):
        return "stop channel of a finished job"
    return None


def sweep(ledger: str) -> tuple[list[str], list[str]]:
    """Remove the litter in `ledger`: (paths removed, errors)."""
    removed, errors = [], []
    for item in find(ledger):
        try:
            os.unlink(item.path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            errors.append(f"cannot remove {item.path}: {exc.strerror or exc}")
            continue
        removed.append(item.path)
    return removed, errors
