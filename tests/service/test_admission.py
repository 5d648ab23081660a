"""The line reader against live jobs and ports, with real supervisors and sockets."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from corral.service.admission import admit
from tests.helpers import LAUNCHER, corral, corral_json, wait_for


def explain(*args: str) -> dict[str, Any]:
    result = corral("explain", "--json", *args)
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)["data"]
    return data


def run_rewritten(rewritten: str, cwd: Path) -> subprocess.Popen[bytes]:
    """Run a rewrite the way the agent's shell would, with corral-run as the supervisor."""
    launcher = cwd / "corral-run"
    launcher.write_text(f'#!/bin/sh\nexec {sys.executable} -I -S {LAUNCHER} "$@"\n')
    launcher.chmod(0o755)
    return subprocess.Popen(
        ["bash", "-c", f"PATH={cwd}:$PATH; {rewritten}"],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_explain_json_keys(tmp_path: Path) -> None:
    data = explain("--cwd", str(tmp_path), "--", "npm run dev")
    assert set(data) == {"readable", "reason", "action", "mode", "rewritten", "refusal", "jobs"}
    assert data["action"] == "wrap" and data["mode"] == "task"
    assert set(data["jobs"][0]) == {"display", "identity", "cwd", "port", "rewritten", "note"}
    unreadable = explain("--", "npm run dev &&")
    assert unreadable["readable"] is False and unreadable["rewritten"] is None
    assert corral("explain").returncode == 2


def test_running_duplicate_is_refused_with_what_to_reuse(tmp_path: Path) -> None:
    line = "python3 -m http.server 0 --bind 127.0.0.1"
    first = admit(line, background=True, cwd=str(tmp_path))
    assert first.action == "wrap" and first.rewritten
    shell = run_rewritten(first.rewritten, tmp_path)
    try:
        wait_for(lambda: corral_json("ls")["data"], what="job listed")
        data = explain("--background", "--cwd", str(tmp_path), "--", line)
        assert data["action"] == "refuse", data
        assert first.job_token and first.job_token[:8] in data["refusal"]
        assert "corral stop" in data["refusal"]
        elsewhere = tmp_path / "other"
        elsewhere.mkdir()
        other = explain("--background", "--cwd", str(elsewhere), "--", line)
        assert other["action"] == "wrap"  # the same job in another folder is fine
    finally:
        corral("stop", "--all")
        shell.wait(timeout=10)


def test_held_port_is_refused_naming_the_holder(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        data = explain("--cwd", str(tmp_path), "--", f"python3 -m http.server {port}")
    assert data["action"] == "refuse", data
    assert str(port) in data["refusal"] and "not started by corral" in data["refusal"]


def test_concurrent_starts_exactly_one_wins(tmp_path: Path) -> None:
    results: list[str] = []
    barrier = threading.Barrier(8)

    def attempt() -> None:
        barrier.wait()
        results.append(admit("npm run dev", background=False, cwd=str(tmp_path)).action)

    threads = [threading.Thread(target=attempt) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["refuse"] * 7 + ["wrap"]
    # a dry run reserves nothing, and the reservation is keyed by folder
    assert (
        admit("npm run dev", background=False, cwd=str(tmp_path / "x"), reserve=False).action
        == "wrap"
    )


def test_reservation_expires_when_no_supervisor_checks_in(
    tmp_path: Path, corral_home: Path
) -> None:
    assert admit("npm run dev", background=False, cwd=str(tmp_path)).action == "wrap"
    assert admit("npm run dev", background=False, cwd=str(tmp_path)).action == "refuse"
    for path in (corral_home / "reservations").glob("*.json"):
        data = json.loads(path.read_text())
        data["at"] -= 16
        path.write_text(json.dumps(data))
    assert admit("npm run dev", background=False, cwd=str(tmp_path)).action == "wrap"


def test_a_reservation_ends_when_the_process_that_took_it_is_gone(tmp_path: Path) -> None:
    holder = subprocess.Popen(["sleep", "300"])
    try:
        first = admit("npm run dev", background=False, cwd=str(tmp_path), holder=holder.pid)
        assert first.action == "wrap"
        again = admit("npm run dev", background=False, cwd=str(tmp_path))
        assert again.action == "refuse" and again.refusal is not None
        assert again.refusal.startswith("corral refused: ")
        assert first.job_token is not None and first.job_token[:8] in again.refusal
    finally:
        holder.kill()
        holder.wait()
    # its line never ran: the next start is not refused for the rest of the 15 s
    assert admit("npm run dev", background=False, cwd=str(tmp_path)).action == "wrap"


def test_a_reservation_ends_at_once_on_clean_and_stop(tmp_path: Path) -> None:
    def start() -> str:
        return admit("npm run dev", background=False, cwd=str(tmp_path)).action

    assert start() == "wrap"  # no process holds it (a hook without CLAUDE_PID)
    corral("clean", check=True)
    assert start() == "wrap"
    corral("stop", "--all", check=True)
    assert start() == "wrap"
    corral("clean", check=True)
    holder = subprocess.Popen(["sleep", "300"])
    try:  # a start in progress (its starter runs) keeps its reservation
        cwd = str(tmp_path)
        assert admit("npm run dev", background=False, cwd=cwd, holder=holder.pid).action == "wrap"
        corral("clean", check=True)
        assert start() == "refuse"
    finally:
        holder.kill()
        holder.wait()


def test_two_lines_on_one_port_started_together_one_wins(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    line = "python3 -m http.server 18765"
    assert admit(line, background=False, cwd=str(tmp_path / "a")).action == "wrap"
    other = admit(line, background=False, cwd=str(tmp_path / "b"))
    assert other.action == "refuse" and other.refusal is not None
    assert other.refusal.startswith("corral refused: ") and "18765" in other.refusal
