"""Observations: which process identity was attributed to which session, and which agent
processes a session had. They let a restarted daemon or CLI show the same rows; every one is
rechecked against a fresh snapshot before it is shown, and dead identities are pruned. The
key is the identity (pid, start time), so a reused pid never inherits an old owner."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from corral.store import db

_SCHEMA = """
CREATE TABLE IF NOT EXISTS observations (
    pid INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    how TEXT NOT NULL,
    session TEXT,
    job TEXT,
    role TEXT NOT NULL,
    first_seen REAL NOT NULL,
    last_seen REAL NOT NULL,
    PRIMARY KEY (pid, started_at)
);
CREATE TABLE IF NOT EXISTS agents (
    session TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    last_seen REAL NOT NULL,
    PRIMARY KEY (session, pid, started_at)
);
"""

AGENT_MEMORY = 7 * 86400.0  # a session's dead agent is remembered this long (it makes orphans)


@dataclass(frozen=True)
class Observation:
    pid: int
    started_at: str
    how: str
    session: str | None
    job: str | None
    role: str


def load(path: Path | None = None) -> tuple[list[Observation], dict[str, list[tuple[int, str]]]]:
    """Every stored observation and the known agent identities per session."""
    with db.connect(path) as conn:
        conn.executescript(_SCHEMA)
        rows = conn.execute(
            "SELECT pid, started_at, how, session, job, role FROM observations"
        ).fetchall()
        agent_rows = conn.execute("SELECT session, pid, started_at FROM agents").fetchall()
    agents: dict[str, list[tuple[int, str]]] = {}
    for session, pid, started_at in agent_rows:
        agents.setdefault(session, []).append((pid, started_at))
    return [Observation(*row) for row in rows], agents


def save(
    observations: Iterable[Observation],
    agents: dict[str, list[tuple[int, str]]],
    alive: set[tuple[int, str]],
    path: Path | None = None,
) -> None:
    """Store what was seen now; prune identities not in `alive` and long-dead agents."""
    now = time.time()
    with db.connect(path) as conn:
        conn.executescript(_SCHEMA)
        conn.execute("BEGIN IMMEDIATE")
        stored = conn.execute("SELECT pid, started_at FROM observations").fetchall()
        dead = [(pid, at) for pid, at in stored if (pid, at) not in alive]
        conn.executemany("DELETE FROM observations WHERE pid = ? AND started_at = ?", dead)
        conn.executemany(
            "INSERT INTO observations (pid, started_at, how, session, job, role, first_seen,"
            " last_seen) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT (pid, started_at) DO UPDATE SET"
            " how = excluded.how, session = excluded.session, job = excluded.job,"
            " role = excluded.role, last_seen = excluded.last_seen",
            [
                (o.pid, o.started_at, o.how, o.session, o.job, o.role, now, now)
                for o in observations
            ],
        )
        conn.executemany(
            "INSERT INTO agents (session, pid, started_at, last_seen) VALUES (?,?,?,?)"
            " ON CONFLICT (session, pid, started_at) DO UPDATE SET last_seen = excluded.last_seen",
            [(s, pid, at, now) for s, idents in agents.items() for pid, at in idents],
        )
        conn.execute("DELETE FROM agents WHERE last_seen < ?", (now - AGENT_MEMORY,))
        conn.execute("COMMIT")
