"""The control room's board and `/procs` are built from one snapshot (`sessions.Observed`):
their jobs come from the ledger records and the processes that snapshot holds, never from a
second read of the ledger, the jobs' trees and sockets and a CPU wait (`jobs.list_jobs`);
and each job's row says what `jobs.list_jobs` says of it (ports, CPU, memory, state, a failed
job, a job whose supervisor was killed)."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from corral.adapters import ledger, members, scan
from corral.service import board, claude, jobs, sessions, stopping
from tests.helpers import alive, start_job, wait_for

WEB = f"exec {sys.executable} -m http.server 0 --bind 127.0.0.1"
BUSY = "while :; do :; done"
SAME = ("id", "pid", "started_at", "state", "mode", "session", "cwd", "command", "ports",
        "processes", "exit_code", "backend", "tmux", "note", "attribution", "name", "log",
        "ended_at", "signal")  # fmt: skip


def _jobs_of(listing: list[jobs.JobView]) -> dict[str, dict[str, Any]]:
    return {j.id: j.to_json() for j in listing}


@pytest.fixture
def started(tmp_path: Path) -> Iterator[dict[str, dict[str, Any]]]:
    """A job listening on a port, one burning CPU, one asleep, one that failed, and one whose
    supervisor was SIGKILLed while its process runs on."""
    folder = tmp_path / "shop"
    folder.mkdir()
    made = {
        "web": start_job(WEB, cwd=folder),
        "busy": start_job(BUSY, cwd=folder),
        "idle": start_job("sleep 300", cwd=folder),
        "failed": start_job("exit 3", cwd=folder),
        "orphan": start_job("exec sleep 301", cwd=folder),  # one process under any sh
    }
    os.kill(made["orphan"]["pid"], signal.SIGKILL)
    wait_for(lambda: not alive(made["orphan"]["pid"]), what="the supervisor's death")

    def listed() -> dict[str, dict[str, Any]]:
        return _jobs_of(jobs.list_jobs(include_finished=True, cpu_interval=0).jobs)

    wait_for(lambda: listed()[made["web"]["id"]]["ports"], what="the web job's port")
    wait_for(lambda: listed()[made["failed"]["id"]]["state"] == "exited", what="the failure")
    yield made
    jobs.stop_records(ledger.read_all().records)


def _observed() -> sessions.Observed:
    """A whole snapshot with CPU measured since the one before it."""
    first = sessions.observe()
    time.sleep(0.5)
    return sessions.observe(first.snapshot)


def test_the_boards_jobs_say_what_list_jobs_says(
    started: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    expected = _jobs_of(jobs.list_jobs(include_finished=True).jobs)
    got = board.board(tmp_path / "shop", observed=_observed())
    rows = _jobs_of(got.jobs)
    assert set(rows) == set(expected)
    for job_id, want in expected.items():
        row = rows[job_id]
        assert {k: row[k] for k in SAME} == {k: want[k] for k in SAME}, job_id
        assert abs(row["age_seconds"] - want["age_seconds"]) < 5
        assert abs(row["rss_bytes"] - want["rss_bytes"]) <= want["rss_bytes"] // 5
    by = {name: rows[job["id"]] for name, job in started.items()}
    assert by["orphan"]["state"] == "unsupervised" and by["orphan"]["processes"] == 1
    assert "supervisor gone" in by["orphan"]["note"]
    assert by["failed"]["exit_code"] == 3 and by["failed"]["processes"] == 0
    assert by["web"]["ports"] and by["web"]["ports"] == expected[started["web"]["id"]]["ports"]
    # CPU: the busy job's is measured (both ways), the sleeping jobs' stay below it
    busy, idle = by["busy"]["cpu_percent"], by["idle"]["cpu_percent"]
    assert busy > 5 and expected[started["busy"]["id"]]["cpu_percent"] > 5
    assert idle < busy and by["orphan"]["cpu_percent"] < busy
    assert got.cpu_measured


def test_a_board_reads_nothing_its_snapshot_holds_again(
    started: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    observed = _observed()

    def again(*args: Any, **kw: Any) -> Any:
        raise AssertionError("read again what the snapshot holds")

    with pytest.MonkeyPatch.context() as spy:
        spy.setattr(jobs, "list_jobs", again)  # the ledger, the trees, the sockets, a wait
        spy.setattr(ledger, "read_all", again)
        spy.setattr(scan, "usage", again)
        spy.setattr(scan, "jobs_snapshot", again)
        spy.setattr(members, "_linux_table", again)  # the orphan's processes
        got = board.board(tmp_path / "shop", observed=observed)
        view = claude.overview(None, tmp_path / "shop", observed=observed, cpu_interval=0)
    assert {j.id for j in got.jobs} == {job["id"] for job in started.values()}
    # plain listings (and /procs) show a failed job for an hour, with the running ones
    assert {j.id for j in view.others} == {job["id"] for job in started.values()}


def test_a_refresh_keeps_the_jobs_cpu_and_reads_them_again_every_few_seconds(
    started: dict[str, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    observed = _observed()
    busy = {p for p, r in observed.attributed.rows.items() if r.job == started["busy"]["id"]}
    busy.discard(started["busy"]["pid"])  # its supervisor: not one of the job's processes
    time.sleep(0.5)
    monkeypatch.setattr(sessions, "USAGE_FOR", 60.0)
    later = sessions.refresh(observed)  # what the daemon serves the tui every second
    assert not busy & (later.snapshot.read or set())  # not read again: its CPU as then
    rows = {j.id: j for j in board.board(tmp_path / "shop", observed=later, cpu_interval=0).jobs}
    assert rows[started["busy"]["id"]].cpu_percent > 5
    assert rows[started["busy"]["id"]].cpu_percent > rows[started["idle"]["id"]].cpu_percent
    monkeypatch.setattr(sessions, "USAGE_FOR", 0.0)
    time.sleep(0.5)
    again = sessions.refresh(later)
    assert busy <= (again.snapshot.read or set())  # read again, measured since
    assert sum(again.snapshot.cpu_percent[p] for p in busy) > 5


def test_a_job_started_or_stopped_shows_in_the_next_board(tmp_path: Path) -> None:
    first = start_job("sleep 300")
    observed = sessions.observe()
    assert [j.id for j in board.board(tmp_path, observed=observed).jobs] == [first["id"]]
    second = start_job("sleep 301")
    now = sessions.refresh(observed)
    assert {j.id for j in board.board(tmp_path, observed=now).jobs} == {first["id"], second["id"]}
    assert stopping.stop([second["id"]]).ok
    stopped = board.board(tmp_path, observed=sessions.refresh(now))
    assert {j.id: j.state for j in stopped.jobs}[second["id"]] == "stopped"
    assert stopping.stop([first["id"]]).ok
