"""`corral run` keeps corral's promise like the Claude Code hook does: it refuses a second
copy of a job already running in the same folder, or a job asking for a port something
already holds, and says what to reuse; `--force` starts it anyway. Real processes."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import corral, corral_json, record, start_job

SERVER = f"{sys.executable} -m http.server 0 --bind 127.0.0.1"  # a long runner, any free port


def _run_d(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return corral("run", "-d", *args, cwd=cwd)


def _running() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = corral_json("ls")["data"]
    return rows


@pytest.fixture
def stop_all() -> Iterator[None]:
    yield
    corral("stop", "--all", check=True)


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port held by a plain listening socket, not started by corral."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_second_copy_in_the_same_folder_is_refused(tmp_path: Path, stop_all: None) -> None:
    first = start_job(SERVER, cwd=tmp_path)
    again = _run_d("-c", SERVER, cwd=tmp_path)
    assert again.returncode == 1 and again.stdout == ""
    assert first["id"] in again.stderr and f"corral stop {first['id']}" in again.stderr
    assert "--force" in again.stderr
    assert [j["id"] for j in _running()] == [first["id"]]  # nothing else was started
    task = corral("run", "-c", SERVER, cwd=tmp_path)  # task mode is refused the same way
    assert (task.returncode, task.stdout) == (1, "") and first["id"] in task.stderr
    assert [j["id"] for j in _running()] == [first["id"]]


def test_the_same_server_in_another_folder_starts(tmp_path: Path, stop_all: None) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = start_job(SERVER, cwd=tmp_path / "a")
    b = start_job(SERVER, cwd=tmp_path / "b")
    assert {j["id"] for j in _running()} == {a["id"], b["id"]}


def test_the_ledger_records_identity_and_port(
    tmp_path: Path, corral_home: Path, stop_all: None
) -> None:
    port = _free_port()
    job = start_job(f"{sys.executable} -m http.server {port} --bind 127.0.0.1", cwd=tmp_path)
    data = record(corral_home, job["id"])
    assert data["port"] == port and data["identity"]
    plain = start_job("sleep 300", cwd=tmp_path)  # not a server: recorded, never refused
    assert record(corral_home, plain["id"])["port"] is None


def test_a_port_held_by_another_program_is_refused(tmp_path: Path, held_port: int) -> None:
    line = f"{sys.executable} -m http.server {held_port} --bind 127.0.0.1"
    refused = _run_d("-c", line, cwd=tmp_path)
    assert refused.returncode == 1
    assert f"port {held_port}" in refused.stderr and "not started by corral" in refused.stderr
    assert _running() == []


def test_force_starts_it_anyway(tmp_path: Path, stop_all: None) -> None:
    first = start_job(SERVER, cwd=tmp_path)
    second = start_job(SERVER, "--force", cwd=tmp_path)
    assert {j["id"] for j in _running()} == {first["id"], second["id"]}
    assert "--force" in corral("run", "--help").stdout


def test_force_starts_on_a_held_port(tmp_path: Path, held_port: int) -> None:
    line = f"{sys.executable} -m http.server {held_port} --bind 127.0.0.1"
    result = corral("run", "--force", "-c", line, cwd=tmp_path)
    # the server itself then fails to bind, as it would without corral
    assert result.returncode == 1 and "corral refused" not in result.stderr
    assert "Address already in use" in result.stderr


def test_a_json_refusal_is_in_the_envelopes_errors(tmp_path: Path, stop_all: None) -> None:
    first = start_job(SERVER, cwd=tmp_path)
    refused = _run_d("--json", "-c", SERVER, cwd=tmp_path)
    assert refused.returncode == 1
    envelope = json.loads(refused.stdout)
    assert set(envelope) == {"schema", "data", "errors"}
    assert envelope["schema"] == 1 and envelope["data"] is None
    (message,) = envelope["errors"]
    assert isinstance(message, str) and message.startswith("corral refused:")
    assert f"corral stop {first['id']}" in message


def test_explain_sees_a_job_started_by_corral_run(tmp_path: Path, stop_all: None) -> None:
    job = start_job(SERVER, cwd=tmp_path)
    result = corral("explain", "--json", "--", SERVER, cwd=tmp_path)
    data = json.loads(result.stdout)["data"]
    assert data["action"] == "refuse" and job["id"] in data["refusal"]
    elsewhere = corral("explain", "--json", "--cwd", str(tmp_path.parent), "--", SERVER)
    assert json.loads(elsewhere.stdout)["data"]["action"] == "wrap"


def test_lines_that_start_no_server_are_never_refused(tmp_path: Path, held_port: int) -> None:
    lines = ("echo hi", f"echo --port {held_port}", f"PORT={held_port} true", "true & wait")
    for line in lines:
        result = corral("run", "-c", line, cwd=tmp_path)
        assert result.returncode == 0, (line, result.stderr)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_a_job_that_changes_folder_first_is_a_duplicate_of_itself(
    tmp_path: Path, stop_all: None, corral_home: Path
) -> None:
    (tmp_path / "web").mkdir()
    line = f"cd web && {SERVER}"
    job = start_job(line, cwd=tmp_path)
    assert record(corral_home, job["id"])["job_cwd"] == str(tmp_path / "web")
    again = _run_d("-c", line, cwd=tmp_path)
    assert again.returncode == 1 and job["id"][:8] in again.stderr
    # The same server started from inside web is the same job too.
    inside = _run_d("-c", SERVER, cwd=tmp_path / "web")
    assert inside.returncode == 1 and job["id"][:8] in inside.stderr
