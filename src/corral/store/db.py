"""SQLite (stdlib, WAL) for what outlives the ledger: finished jobs and the audit log."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corral import paths
from corral.errors import StorageError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    event TEXT NOT NULL,
    surface TEXT NOT NULL,
    actor TEXT NOT NULL,
    session TEXT,
    targets TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS history (
    id TEXT PRIMARY KEY,
    archived_at REAL NOT NULL,
    record TEXT NOT NULL
);
"""

STOP_EVENT = "session.processes.terminated"


def storage_error(exc: BaseException, db: Path) -> StorageError:
    """One clear line for a database that cannot be used: what failed, where, what to do."""
    text = str(exc) or type(exc).__name__
    lowered = text.lower()
    if "full" in lowered or getattr(exc, "errno", None) == 28:
        todo = "free space on its disk and run the command again"
    elif "readonly" in lowered or "read-only" in lowered:
        todo = "make it (and its folder) writable, or set CORRAL_HOME to a writable folder"
    elif "locked" in lowered or "busy" in lowered:
        todo = "another corral holds it; run the command again"
    else:
        todo = "move it aside (`corral doctor --fix` does) and corral starts a new one"
    return StorageError(f"cannot use the database {db}: {text}; {todo}")


@contextmanager
def connect(path: Path | None = None) -> Iterator[sqlite3.Connection]:
    """A connection with the schema in place. Any failure of the database, inside the
    `with` block too, is raised as StorageError (one clear line)."""
    db = path or paths.database()
    try:
        paths.ensure_private_dir(db.parent)
        conn = sqlite3.connect(db, timeout=10, isolation_level=None)
    except (sqlite3.Error, OSError) as exc:
        raise storage_error(exc, db) from exc
    try:
        os.chmod(db, 0o600)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(_SCHEMA)
        yield conn
    except StorageError:
        raise
    except (sqlite3.Error, OSError) as exc:
        raise storage_error(exc, db) from exc
    finally:
        conn.close()


@dataclass(frozen=True)
class AuditEvent:
    id: int
    at: float
    event: str
    surface: str
    actor: str
    session: str | None
    targets: list[dict[str, Any]]


def audit(
    event: str,
    targets: list[dict[str, Any]],
    *,
    surface: str,
    session: str | None = None,
    path: Path | None = None,
) -> None:
    """Record one audit event. Raises sqlite3.Error / OSError if it cannot be written."""
    actor = f"uid={os.getuid()} pid={os.getpid()}"
    with connect(path) as conn:
        conn.execute(
            "INSERT INTO audit (at, event, surface, actor, session, targets) VALUES (?,?,?,?,?,?)",
            (time.time(), event, surface, actor, session, json.dumps(targets)),
        )


def audit_events(limit: int = 100, path: Path | None = None) -> list[AuditEvent]:
    with connect(path) as conn:
        rows = conn.execute(
            "SELECT id, at, event, surface, actor, session, targets FROM audit"
            " ORDER BY id DESC LIMIT ?",
            (limit,),
        ).fetchall()
    return [
        AuditEvent(row[0], row[1], row[2], row[3], row[4], row[5], json.loads(row[6]))
        for row in reversed(rows)
    ]


def archive(records: list[dict[str, Any]], path: Path | None = None) -> None:
    """Keep finished jobs in history before their ledger files are removed."""
    if not records:
        return
    now = time.time()
    with connect(path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT OR REPLACE INTO history (id, archived_at, record) VALUES (?,?,?)",
            [(r["id"], now, json.dumps(r)) for r in records],
        )
        conn.execute("COMMIT")


def history(limit: int = 100, path: Path | None = None) -> list[dict[str, Any]]:
    with connect(path) as conn:
        rows = conn.execute(
            "SELECT record FROM history ORDER BY archived_at DESC LIMIT ?", (limit,)
        ).fetchall()
    return [json.loads(r[0]) for r in rows]
