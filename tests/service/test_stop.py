"""Identity-checked stops with real processes: mismatches, killed supervisors, audit."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from corral.adapters.identity import identity_of
from corral.store import db
from tests.helpers import alive, corral, corral_json, job_pids, record, start_job, wait_for


def _fake_record(home: Path, token: str, pid: int, started_at: str) -> Path:
    ledger = home / "ledger"
    ledger.mkdir(mode=0o700, exist_ok=True)
    data = {
        "version": 1, "id": token, "pid": pid, "started_at": started_at, "pgid": pid,
        "mode": "detached", "backend": "group", "session": None, "cwd": "/", "command": "x",
        "digest": "0" * 64, "identity": None, "port": None, "shell": "/bin/sh",
        "parent_pid": 1, "grace": 1.0, "created_at": time.time(), "state": "running",
        "exit_code": None, "signal": None, "stop_requested_at": None, "ended_at": None,
    }  # fmt: skip
    path = ledger / f"{token}.json"
    path.write_text(json.dumps(data))
    return path


def test_reused_pid_is_never_signalled(corral_home: Path) -> None:
    # A live process of ours stands in for "a pid now used by someone else": the record
    # names its pid with another start time, and even carries the token in... nothing.
    bystander = subprocess.Popen(["sleep", "300"])
    try:
        ident = identity_of(bystander.pid)
        assert ident is not None
        boot, ticks = ident.started_at.rsplit(":", 1)
        token = "1" * 32
        _fake_record(corral_home, token, bystander.pid, f"{boot}:{int(ticks) - 5}")
        out = corral_json("stop", token)
        targets = out["data"][0]["targets"]
        assert targets[0]["result"] == "identity_mismatch"
        assert alive(bystander.pid)
        assert corral("stop", token).returncode == 1  # not a success, however often
        assert alive(bystander.pid)
    finally:
        bystander.kill()
        bystander.wait()


def test_same_identity_without_token_is_a_mismatch(corral_home: Path) -> None:
    bystander = subprocess.Popen(["sleep", "300"])
    try:
        ident = identity_of(bystander.pid)
        assert ident is not None
        token = "2" * 32
        _fake_record(corral_home, token, bystander.pid, ident.started_at)
        out = corral_json("stop", token)
        assert out["data"][0]["targets"][0]["result"] == "identity_mismatch"
        assert alive(bystander.pid)
    finally:
        bystander.kill()
        bystander.wait()


def test_killed_supervisor_leftovers_are_stopped_one_by_one(corral_home: Path) -> None:
    job = start_job("sleep 300 & setsid sleep 301 & wait")
    pids = wait_for(lambda: len(job_pids(job["id"])) >= 3 and job_pids(job["id"]), what="start")
    os.kill(job["pid"], signal.SIGKILL)
    wait_for(lambda: not alive(job["pid"]), what="supervisor death")
    listed = corral_json("ls")["data"]
    assert listed[0]["state"] == "unsupervised" and "supervisor gone" in listed[0]["note"]
    out = corral_json("stop", job["id"])
    results = [t["result"] for t in out["data"][0]["targets"]]
    assert results[0] == "already_exited"  # the supervisor
    assert results[1:] and set(results[1:]) == {"terminated"}
    assert not [p for p in pids if alive(p)]
    assert record(corral_home, job["id"])["state"] == "stopped"


def test_corrupt_and_truncated_ledger_files_are_skipped(corral_home: Path) -> None:
    job = start_job("sleep 300")
    ledger = corral_home / "ledger"
    (ledger / ("9" * 32 + ".json")).write_text('{"version": 1, "id": "99')
    (ledger / ("8" * 32 + ".json")).write_bytes(b"\xff\xfe not json")
    (ledger / ("7" * 32 + ".json")).write_text('{"version": 1}')
    result = corral("ls", "--json")
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert [j["id"] for j in data["data"]] == [job["id"]]
    assert len(data["errors"]) == 3 and "skipped" in result.stderr
    human = corral("ls")
    assert human.returncode == 0 and job["id"][:8] in human.stdout
    corral("stop", job["id"], check=True)


def test_stop_is_audited(corral_home: Path) -> None:
    job = start_job("sleep 300")
    corral("stop", job["id"], check=True)
    events = db.audit_events()
    assert len(events) == 1
    event = events[0]
    assert event.event == "session.processes.terminated" and event.surface == "cli"
    assert event.targets[0]["job"] == job["id"]
    assert event.targets[0]["result"] == "terminated"
    assert event.targets[0]["pid"] == job["pid"]


def test_stop_all_and_by_identity(corral_home: Path) -> None:
    a = start_job("sleep 300", "--session", "s1")
    b = start_job("sleep 301", "--session", "s2")
    c = start_job("sleep 302", "--session", "s1")
    out = corral_json("stop", "--all", "--session", "s1")
    assert sorted(o["id"] for o in out["data"]) == sorted([a["id"], c["id"]])
    assert alive(b["pid"]) and not alive(a["pid"]) and not alive(c["pid"])
    started = corral_json("ls")["data"][0]["started_at"]
    by_identity = corral_json("stop", "--pid", str(b["pid"]), "--started-at", started)
    assert by_identity["data"][0]["targets"][0]["result"] == "terminated"
    assert corral("stop", "--all").stdout.strip() == "no running jobs"


def test_unknown_process_by_identity_is_unproven(corral_home: Path) -> None:
    bystander = subprocess.Popen(["sleep", "300"])
    try:
        ident = identity_of(bystander.pid)
        assert ident is not None
        out = corral_json("stop", "--pid", str(ident.pid), "--started-at", ident.started_at)
        assert out["data"][0]["targets"][0]["result"] == "unproven"
        assert alive(bystander.pid)
    finally:
        bystander.kill()
        bystander.wait()


def test_clean_forgets_finished_and_dead(corral_home: Path) -> None:
    done = start_job("true")
    wait_for(lambda: record(corral_home, done["id"])["state"] == "exited", what="exit")
    live = start_job("sleep 300")
    dead = "3" * 32
    _fake_record(corral_home, dead, 4_000_000, "x:1")  # a pid that cannot exist
    out = corral_json("clean")["data"]
    assert sorted(out["forgotten"]) == sorted([done["id"], dead])
    assert [j["id"] for j in corral_json("ls")["data"]] == [live["id"]]
    assert [r["id"] for r in db.history()] and done["id"] in {r["id"] for r in db.history()}
    corral("stop", live["id"], check=True)


def test_ids_resolve_by_prefix_and_errors_are_clear(corral_home: Path) -> None:
    assert corral("stop", "zzzz").returncode == 1
    assert "no job matches" in corral("stop", "zzzz").stderr
    assert corral("stop").returncode == 2
    assert corral("stop", "abcd", "--all").returncode == 2
    assert corral("nonsense").returncode == 2


def test_non_positive_pid_is_a_usage_error_and_nothing_is_audited(corral_home: Path) -> None:
    for pid in ("0", "-1", "-42"):
        result = corral("stop", "--pid", pid, "--started-at", "x:1")
        assert result.returncode == 2, (pid, result)
        assert "--pid" in result.stderr and result.stdout == ""
    assert db.audit_events() == []


def test_a_job_stop_that_cannot_be_audited_says_so_and_logs_it(
    corral_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from corral.adapters.ledger import read_all
    from corral.service.jobs import stop_records

    job = start_job("sleep 300")
    (corral_home / "corral.sqlite3").mkdir()  # the database cannot be opened
    with caplog.at_level(logging.WARNING):
        outcomes, errors = stop_records(read_all().records)
    assert [o.ok for o in outcomes] == [True] and not alive(job["pid"])
    assert errors and "could not be audited" in errors[0]
    assert any("not audited" in r.getMessage() for r in caplog.records)
