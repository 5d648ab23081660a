"""Reading the ledger: one JSON file per job, written by its supervisor.

Listing is lenient: a corrupt or truncated file is skipped with a warning, never a crash.
The hook reads the ledger for every line it wraps: no logging or pathlib here (they would
cost it 8 ms to import), and the records are NamedTuples, cheap to define.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from types import MappingProxyType

from corral import paths
from corral.lowlevel.named import NamedTuple
from corral.lowlevel.record import DEFAULT_GRACE, STATES_FINAL, check, is_token

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class JobRecord(NamedTuple):
    """A job as its supervisor last wrote it."""

    id: str
    pid: int
    started_at: str | None
    pgid: int
    mode: str
    session: str | None
    cwd: str
    command: str
    digest: str
    state: str
    created_at: float
    identity: str | None = None
    port: int | None = None
    backend: str = "group"
    exit_code: int | None = None
    signal: int | None = None
    stop_requested_at: float | None = None
    ended_at: float | None = None
    grace: float = DEFAULT_GRACE
    # Fields a newer supervisor wrote that this reader does not know (read-only). They count
    # in a record's equality and repr; nothing compares records.
    extra: Mapping[str, Any] = MappingProxyType({})

    @property
    def final(self) -> bool:
        return self.state in STATES_FINAL

    @classmethod
    def from_json(cls, data: object, name: str | None = None) -> JobRecord:
        """The record in `data` (read from the file `name`); ValueError when any field has
        the wrong type or shape (lowlevel.record.check), never anything else."""
        checked = check(data, name)
        known = {f for f in cls._fields if f != "extra"}
        kwargs = {k: v for k, v in checked.items() if k in known}
        extra = {k: v for k, v in checked.items() if k not in known}
        for field in ("created_at", "grace", "stop_requested_at", "ended_at"):
            if isinstance(kwargs.get(field), int):
                kwargs[field] = float(kwargs[field])
        return cls(**kwargs, extra=extra)


class LedgerRead(NamedTuple):
    records: list[JobRecord]
    warnings: list[str]
    bad: tuple[BadRecord, ...] = ()


class BadRecord(NamedTuple):
    """A ledger file no reader trusts (skipped by every listing; for `corral doctor`)."""

    name: str  # the file's name in the ledger folder
    reason: str


# Records already read, by path, with the (inode, mtime, size) they were read at: a
# long-lived reader (the daemon, `corral mcp`) parses only the files that changed. A record
# is replaced by a rename, so a changed record is a new inode.
_READ: dict[str, tuple[tuple[int, int, int], JobRecord]] = {}


def read_all(ledger: str | os.PathLike[str] | None = None) -> LedgerRead:
    """Every readable record in the ledger folder, oldest first, plus warnings for the rest."""
    folder = paths.ledger_dir() if ledger is None else os.fspath(ledger)
    records: list[JobRecord] = []
    warnings: list[str] = []
    bad: list[BadRecord] = []
    try:
        # records are `<id>.json`; a bare `.json` has no suffix (as pathlib saw it): skipped
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json") and n != ".json")
    except FileNotFoundError:
        return LedgerRead([], [])
    except OSError as exc:  # a file where the folder should be, a folder we may not read
        from corral.errors import StorageError

        raise StorageError(
            f"cannot read the ledger folder {folder}: {exc.strerror or exc}; move away what "
            "is there or make it readable (`corral doctor` checks it)"
        ) from exc
    if len(_READ) > 4 * len(names) + 64:
        _READ.clear()  # forget files that are gone
    for name in names:
        path = os.path.join(folder, name)
        try:
            seen = os.stat(path)
            key = (seen.st_ino, seen.st_mtime_ns, seen.st_size)
            known = _READ.get(path)
            if known is not None and known[0] == key:
                records.append(known[1])
                continue
            with open(path, "rb") as f:
                data = json.loads(f.read())
            record = JobRecord.from_json(data, name)
            records.append(record)
            _READ[path] = (key, record)
        except FileNotFoundError:
            continue  # removed while we read: a clean in another process
        except (OSError, ValueError, RecursionError) as exc:
            message = f"skipped unreadable ledger file {name}: {exc}"
            _warn(message)
            warnings.append(message)
            bad.append(BadRecord(name, str(exc)))
    records.sort(key=lambda r: r.created_at)
    return LedgerRead(records, warnings, tuple(bad))


def bad_records(ledger: str | os.PathLike[str] | None = None) -> list[BadRecord]:
    """The ledger files that are not records every reader can trust, with why (for `corral
    doctor`); listings skip them with one warning each."""
    return list(read_all(ledger).bad)


def _warn(message: str) -> None:
    from corral.lowlevel import logline  # only for a damaged ledger

    logline.warn(message, "corral.ledger")


def remove(record_id: str, ledger: str | os.PathLike[str] | None = None) -> None:
    """Forget a job: its record and its stop channel, inside the ledger folder only."""
    if not is_token(record_id):  # never a path: `../../x` must not reach os.unlink
        raise ValueError(f"not a job id: {record_id!r}")
    folder = paths.ledger_dir() if ledger is None else os.fspath(ledger)
    for suffix in (".json", ".stop"):
        try:
            os.unlink(os.path.join(folder, f"{record_id}{suffix}"))
        except FileNotFoundError:
            pass


# (pid, start identity, job id) of supervisors whose command line was seen to name their job:
# a process keeps its pid and start time for life, and a supervisor that recorded its job
# never execs another program, so a long-lived reader (the daemon, `corral mcp`) checks the
# command line once per supervisor, then only its start time.
_PROVEN: set[tuple[int, str, str]] = set()


def supervisor_alive(record: JobRecord) -> bool | None:
    """True: the recorded supervisor runs. False: it is provably gone. None: its pid now
    belongs to another process (identity mismatch) — also gone, but worth saying."""
    from corral.adapters.identity import cmdline, started_at

    now = started_at(record.pid)
    if now is None:
        return False
    if record.started_at is not None and now != record.started_at:
        return None
    if (record.pid, now, record.id) in _PROVEN:
        return True
    argv = cmdline(record.pid)
    if argv is None:
        return False
    if record.id not in argv:
        return False
    if len(_PROVEN) > 4096:
        _PROVEN.clear()
    _PROVEN.add((record.pid, now, record.id))
    return True
