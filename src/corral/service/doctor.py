"""corral doctor: what is wrong with corral's own state, and what `--fix` does about it.

Each check returns findings: one line that is fine, or a problem with what `--fix` would
do (nothing, when only a person can decide: then the line says what to do). The checks:

- state folders: CORRAL_HOME is yours and nobody else may write in it; corral's folders
  in it are yours and private (0700);
- ledger: records that cannot be read (moved aside to `bad-records/`), records whose
  supervisor is gone (forgotten, kept in history, when nothing of the job is left);
- litter: old temp files and stop FIFOs without a live record (removed);
- database: SQLite's integrity check and the schema version (a corrupt file is moved aside,
  and a new one is made at the next use);
- reservations: ones whose time is up or that cannot be read (removed);
- daemon socket: a socket file nobody answers on (removed).

A fix never signals a process, never touches anything outside CORRAL_HOME (the Claude
Code check, in surfaces/claude/checkup.py, writes only corral's own settings entries), and
never changes the mode of a folder corral did not make (CORRAL_HOME itself)."""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from corral import paths

BAD_RECORDS = "bad-records"


@dataclass(frozen=True)
class Finding:
    """One result of a check: `problem` False means `text` says what is fine."""

    check: str
    text: str
    problem: bool = False
    fix: str | None = None  # what --fix does; None: nothing it can do (text says what to)
    fixed: bool = False
    error: str | None = None  # the fix was tried and failed

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "problem": self.problem,
            "text": self.text,
            "fix": self.fix,
            "fixed": self.fixed,
            "error": self.error,
        }


def fine(check: str, text: str) -> Finding:
    return Finding(check, text)


def problem(
    check: str, text: str, fix: str | None, do: Callable[[], None] | None, apply: bool
) -> Finding:
    """A problem; with `apply` and a fix, the fix is done and the finding says how it went."""
    if not apply or fix is None or do is None:
        return Finding(check, text, True, fix)
    from corral.errors import CorralError

    try:
        do()
    except (OSError, CorralError) as exc:
        return Finding(check, text, True, fix, False, str(exc))
    return Finding(check, text, True, fix, True)


# -- state folders ----------------------------------------------------------------------


def check_folders(apply: bool) -> list[Finding]:
    home = paths.home_dir()
    found: list[Finding] = []
    try:
        st = os.stat(home)
    except FileNotFoundError:
        return [fine("state folders", f"{home} does not exist yet (made at first use)")]
    except OSError as exc:
        return [Finding("state folders", f"cannot read {home}: {exc.strerror}", True)]
    if not stat.S_ISDIR(st.st_mode):
        return [Finding("state folders", f"{home} is not a folder: set CORRAL_HOME", True)]
    if st.st_uid != os.getuid():
        found.append(Finding("state folders", f"{home} belongs to uid {st.st_uid}, not you", True))
    elif st.st_mode & 0o022:  # others may replace the ledger folder in it
        mode = f"{stat.S_IMODE(st.st_mode):04o}"
        found.append(
            Finding(
                "state folders",
                f"{home} has mode {mode}, so others may change what is in it: make it 0700 "
                "(`chmod 700`) if it is corral's own, or set CORRAL_HOME to a private folder",
                True,
            )
        )
    for name in ("ledger", "logs", "reservations", BAD_RECORDS):
        folder = os.path.join(home, name)
        try:
            sub = os.lstat(folder)
        except OSError:
            continue
        if not stat.S_ISDIR(sub.st_mode):
            found.append(Finding("state folders", f"{folder} is not a folder: move it away", True))
        elif sub.st_uid != os.getuid():
            found.append(
                Finding("state folders", f"{folder} belongs to uid {sub.st_uid}, not you", True)
            )
        elif sub.st_mode & 0o077:
            mode = f"{stat.S_IMODE(sub.st_mode):04o}"
            found.append(
                problem(
                    "state folders",
                    f"{folder} has mode {mode}; corral's folders are 0700",
                    "chmod it to 0700",
                    lambda folder=folder: os.chmod(folder, 0o700),  # type: ignore[misc]
                    apply,
                )
            )
    return found or [fine("state folders", f"{home} and its folders are yours and private")]


# -- ledger -----------------------------------------------------------------------------


def _move_aside(ledger: str, name: str) -> None:
    target = paths.ensure_private_dir(os.path.join(paths.home_dir(), BAD_RECORDS))
    os.replace(os.path.join(ledger, name), os.path.join(target, name))


def check_ledger(apply: bool) -> list[Finding]:
    from corral.adapters import ledger, procs
    from corral.errors import StorageError

    folder = paths.ledger_dir()
    found = []
    try:
        bad = ledger.bad_records(folder)
        records = ledger.read_all(folder).records
    except StorageError as exc:
        return [Finding("ledger", str(exc), True)]
    for name, why in bad:
        found.append(
            problem(
                "ledger",
                f"unreadable record {name}: {why}",
                f"move it to {os.path.join(paths.home_dir(), BAD_RECORDS)}",
                lambda name=name: _move_aside(folder, name),  # type: ignore[misc]
                apply,
            )
        )
    gone = []
    for record in records:
        if record.final or ledger.supervisor_alive(record):
            continue
        left = procs.marked_processes("CORRAL_JOB", record.id)
        if left:
            found.append(
                Finding(
                    "ledger",
                    f"job {record.id[:8]}: its supervisor is gone and {len(left)} process(es) "
                    f"remain: `corral stop {record.id[:8]}` stops them after checking each",
                    True,
                )
            )
        else:
            gone.append(record)
    for record in gone:
        found.append(
            problem(
                "ledger",
                f"job {record.id[:8]}: its supervisor is gone and nothing of it is left",
                "forget it (kept in the history database, as `corral clean` does)",
                lambda record=record: _forget(record, folder),  # type: ignore[misc]
                apply,
            )
        )
    return found or [fine("ledger", f"every record in {folder} is readable and supervised")]


def _forget(record: Any, folder: str) -> None:
    from corral.adapters import ledger
    from corral.errors import StorageError
    from corral.store import db

    data = {k: v for k, v in record._asdict().items() if k != "extra"}
    try:
        db.archive([data])
    except StorageError:
        pass  # the database has its own finding; the record still goes
    ledger.remove(record.id, folder)


def check_litter(apply: bool) -> list[Finding]:
    from corral.service import litter

    folder = paths.ledger_dir()
    items = litter.find(folder)
    if not items:
        return [fine("litter", "no leftover temporary files or stop channels")]
    return [
        problem(
            "litter",
            f"{os.path.basename(item.path)}: {item.why}",
            "remove it",
            lambda item=item: os.unlink(item.path),  # type: ignore[misc]
            apply,
        )
        for item in items
    ]


# -- database ---------------------------------------------------------------------------

SCHEMA_VERSION = 0  # PRAGMA user_version of the database this corral writes
TABLES = ("audit", "history")


def _database_state(db: str) -> str | None:
    """None when the database is sound, else what is wrong with it."""
    import sqlite3

    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error as exc:
        return f"cannot open it: {exc}"
    try:
        rows = conn.execute("PRAGMA integrity_check").fetchall()
        if [r[0] for r in rows] != ["ok"]:
            return "integrity check failed: " + "; ".join(str(r[0]) for r in rows[:3])
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION:
            return f"schema version {version}, this corral knows {SCHEMA_VERSION}"
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        missing = [t for t in TABLES if t not in names]
        if missing:
            return f"tables missing: {', '.join(missing)}"
    except sqlite3.Error as exc:
        return str(exc)
    finally:
        conn.close()
    return None


def _database_aside(db: str) -> None:
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for suffix in ("", "-wal", "-shm"):
        try:
            os.replace(db + suffix, f"{db}.bad-{stamp}{suffix}")
        except FileNotFoundError:
            pass


def check_database(apply: bool) -> list[Finding]:
    db = str(paths.database())
    if not os.path.exists(db):
        return [fine("database", f"{db} does not exist yet (made at first use)")]
    wrong = _database_state(db)
    if wrong is None:
        return [fine("database", f"{db}: integrity ok, schema version {SCHEMA_VERSION}")]
    if wrong.startswith("schema version"):
        return [Finding("database", f"{db}: {wrong}: a newer corral wrote it", True)]
    return [
        problem(
            "database",
            f"{db}: {wrong}",
            "move it aside (as corral.sqlite3.bad-TIME); a new one is made at the next use",
            lambda: _database_aside(db),
            apply,
        )
    ]


# -- reservations -----------------------------------------------------------------------


def check_reservations(apply: bool) -> list[Finding]:
    from corral.service.admission import RESERVATION_SECONDS

    folder = os.path.join(paths.home_dir(), "reservations")
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        names = []
    found = []
    now = time.time()
    for name in names:
        path = os.path.join(folder, name)
        if not name.endswith(".json"):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                at = float(json.loads(f.read()).get("at", 0))
        except (OSError, ValueError, TypeError, AttributeError):
            at = 0.0
        if now - at > RESERVATION_SECONDS:
            found.append(
                problem(
                    "reservations",
                    f"{name}: a reservation whose time is up (or unreadable)",
                    "remove it",
                    lambda path=path: os.unlink(path),  # type: ignore[misc]
                    apply,
                )
            )
    return found or [fine("reservations", "no stale reservation")]


# -- daemon socket ----------------------------------------------------------------------


def check_daemon(apply: bool) -> list[Finding]:
    import errno
    import socket

    path = os.path.join(paths.home_dir(), "corral.sock")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return [fine("daemon", "no daemon socket (the daemon is optional)")]
    if not stat.S_ISSOCK(st.st_mode):
        return [Finding("daemon", f"{path} is not a socket: move it away", True)]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(2.0)
    try:
        sock.connect(path)
        sock.sendall(b"GET /api/health HTTP/1.0\r\nHost: localhost\r\n\r\n")
        answer = sock.recv(64)
    except TimeoutError:
        answer = b""
    except OSError as exc:
        if exc.errno in (errno.ECONNREFUSED, errno.ENOENT):
            return [
                problem(
                    "daemon",
                    f"{path}: stale socket file, no daemon listens on it",
                    "remove it",
                    lambda: os.unlink(path),
                    apply,
                )
            ]
        return [Finding("daemon", f"{path}: cannot connect: {exc}", True)]
    finally:
        sock.close()
    if not answer.startswith((b"HTTP/1.0 200", b"HTTP/1.1 200")):
        return [
            Finding(
                "daemon",
                f"{path}: something listens but does not answer as corral's daemon within "
                "2 s: stop it, or wait and run `corral doctor` again",
                True,
            )
        ]
    return [fine("daemon", f"the daemon answers on {path}")]


CHECKS: tuple[Callable[[bool], list[Finding]], ...] = (
    check_folders,
    check_ledger,
    check_litter,
    check_database,
    check_reservations,
    check_daemon,
)


def diagnose(
    apply: bool = False, extra: tuple[Callable[[bool], list[Finding]], ...] = ()
) -> list[Finding]:
    """Run every check (and `extra` ones); with `apply`, do each fix that is safe to do."""
    found: list[Finding] = []
    for check in (*CHECKS, *extra):
        found.extend(check(apply))
    return found
