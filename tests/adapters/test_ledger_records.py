"""Bad state never takes corral down (issue 11.5, 11.6): every field of a ledger record is
checked with its type when read, ids have the exact token shape, a bad record is skipped with
one warning by every command, and nothing corral deletes lies outside its own folders. Records
written by the previous layout (the standalone supervisor.py) are still read and stopped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corral.adapters import ledger
from corral.adapters.ledger import JobRecord
from corral.lowlevel import record
from tests.helpers import ROOT, alive, corral, corral_json, start_job, wait_for

TOKEN = "0123456789abcdef0123456789abcdef"


def good() -> dict[str, Any]:
    """A record as the supervisor writes it (a finished job: nothing to signal)."""
    return {
        "version": 1, "id": TOKEN, "pid": 999999, "started_at": "boot:1", "pgid": 999999,
        "mode": "detached", "backend": "group", "session": None, "cwd": "/tmp",
        "command": "sleep 1", "digest": "d" * 64, "identity": None, "port": None,
        "shell": "/bin/sh", "parent_pid": 1, "grace": 3.0, "created_at": 1700000000.5,
        "state": "exited", "exit_code": 0, "signal": None, "stop_requested_at": None,
        "ended_at": 1700000001.0,
    }  # fmt: skip


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=4,
)


def _well_typed(rec: JobRecord) -> bool:
    def num(v: object) -> bool:
        return isinstance(v, float) and abs(v) < float("inf")

    def opt_int(v: object) -> bool:
        return v is None or (isinstance(v, int) and not isinstance(v, bool))

    return (
        record.is_token(rec.id)
        and all(type(v) is int and v > 0 for v in (rec.pid, rec.pgid))
        and all(isinstance(v, str) for v in (rec.mode, rec.cwd, rec.command, rec.digest))
        and rec.state in record.STATES
        and num(rec.created_at)
        and num(rec.grace)
        and 0 <= rec.grace <= record.MAX_GRACE
        and all(opt_int(v) for v in (rec.port, rec.exit_code, rec.signal))
        and all(v is None or num(v) for v in (rec.stop_requested_at, rec.ended_at))
        and all(v is None or isinstance(v, str) for v in (rec.started_at, rec.session))
    )


@settings(max_examples=400)
@given(field=st.sampled_from([*good(), "job_cwd", "tmux_pane_pid"]), value=JSON, drop=st.booleans())
def test_a_mutated_record_is_well_typed_or_refused_with_value_error(
    field: str, value: object, drop: bool
) -> None:
    data = good()
    if drop:
        data.pop(field, None)
    else:
        data[field] = value
    try:
        rec = JobRecord.from_json(data, f"{TOKEN}.json")
    except ValueError:
        return
    assert _well_typed(rec), rec


@pytest.mark.parametrize(
    ("field", "value"),
    [("created_at", "yesterday"), ("pid", True), ("pgid", 1.0), ("grace", "3"),
     ("grace", 1e9), ("version", True), ("state", "sleeping"), ("port", True),
     ("id", "../../x/important"), ("id", TOKEN.upper()), ("exit_code", "0"),
     ("ended_at", float("nan")), ("session", 7), ("tmux_pane_pid", 12)],
)  # fmt: skip
def test_each_wrongly_typed_field_is_refused(field: str, value: object) -> None:
    data = {**good(), field: value}
    with pytest.raises(ValueError, match=repr(field) if field != "version" else "version"):
        JobRecord.from_json(data)
    assert JobRecord.from_json(good(), f"{TOKEN}.json").pid == 999999


def test_file_name_must_be_the_id() -> None:
    with pytest.raises(ValueError, match="does not match"):
        JobRecord.from_json(good(), "f" * 32 + ".json")


def _write(home: Path, name: str, data: object) -> Path:
    folder = home / "ledger"
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(data))
    return path


BAD_RECORDS = [("created_at", "yesterday"), ("pid", True), ("grace", "3")]


def test_bad_records_are_skipped_and_listed_for_doctor(corral_home: Path) -> None:
    for i, (field, value) in enumerate(BAD_RECORDS):
        token = f"{i:032x}"
        _write(corral_home, f"{token}.json", {**good(), "id": token, field: value})
    _write(corral_home, f"{TOKEN}.json", good())
    read = ledger.read_all()
    assert [r.id for r in read.records] == [TOKEN]
    assert len(read.warnings) == len(BAD_RECORDS)
    bad = ledger.bad_records()
    assert [b.name for b in bad] == [f"{i:032x}.json" for i in range(len(BAD_RECORDS))]
    assert all(field in b.reason for b, (field, _) in zip(bad, BAD_RECORDS, strict=True))


def test_every_command_keeps_working_beside_bad_records(corral_home: Path, tmp_path: Path) -> None:
    for i, (field, value) in enumerate(BAD_RECORDS):
        token = f"{i:032x}"
        _write(corral_home, f"{token}.json", {**good(), "id": token, "state": "running",
                                             "pid": os.getpid(), field: value})  # fmt: skip
    job = start_job("sleep 300")
    listed = corral_json("ls")["data"]
    assert [j["id"] for j in listed] == [job["id"]]  # `"pid": true` is not pid 1
    for args in (("procs",), ("explain", "--", "npm run dev"), ("ls", "--all")):
        result = corral(*args)
        assert result.returncode == 0, (args, result.stderr)
        assert "Traceback" not in result.stderr
    stop = corral("stop", "--all", "--json")
    assert stop.returncode == 0, stop.stderr
    assert json.loads(stop.stdout)["data"][0]["id"] == job["id"]
    assert corral("clean").returncode == 0
    # the hook still supervises lines
    from tests.surfaces.claude.test_hook import answer, payload, run_hook

    out = answer(run_hook("pre-tool-use", payload("sleep 300 &", tmp_path)))
    assert "--detached" in out["updatedInput"]["command"].split()
    assert len(list((corral_home / "ledger").glob("*.json"))) == len(BAD_RECORDS)  # kept


def test_clean_deletes_nothing_outside_corral_home(corral_home: Path) -> None:
    outside = corral_home.parent / f"x-{uuid.uuid4().hex}"
    outside.mkdir()
    try:
        (outside / "important.json").write_text("keep me")
        (outside / "important.stop").write_text("keep me")
        evil = f"../../{outside.name}/important"
        path = _write(corral_home, "evil.json", {**good(), "id": evil})
        result = corral("clean")
        assert result.returncode == 0, result.stderr
        assert (outside / "important.json").read_text() == "keep me"
        assert (outside / "important.stop").read_text() == "keep me"
        assert path.exists()  # not a record: never forgotten, listed by doctor instead
        with pytest.raises(ValueError, match="not a job id"):
            ledger.remove(evil)
    finally:
        shutil.rmtree(outside)


# -- records of the previous layout -------------------------------------------------------

OLD_COMMIT = "4c1b1f4"  # the last commit with the standalone src/corral/supervisor.py


def _old_supervisor(tmp_path: Path) -> Path:
    shown = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{OLD_COMMIT}:src/corral/supervisor.py"],
        capture_output=True, check=False,
    )  # fmt: skip
    if shown.returncode != 0:
        pytest.skip("the previous layout's supervisor is not in this checkout's history")
    path = tmp_path / "supervisor.py"
    path.write_bytes(shown.stdout)
    return path


def test_a_job_of_the_previous_layout_is_listed_and_stopped(
    corral_home: Path, tmp_path: Path
) -> None:
    old = _old_supervisor(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", str(old), "--detached", "--ledger",
         str(corral_home / "ledger"), "--", "sleep 300"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        jobs = wait_for(lambda: corral_json("ls")["data"], what="the old job listed")
        assert [j["state"] for j in jobs] == ["running"] and jobs[0]["command"] == "sleep 300"
        stop = corral("stop", jobs[0]["id"], "--json")
        assert stop.returncode == 0, stop.stderr
        proc.wait(timeout=30)
        assert not alive(proc.pid)
        rec = json.loads((corral_home / "ledger" / f"{jobs[0]['id']}.json").read_text())
        assert rec["state"] == "stopped"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    time.sleep(0)
