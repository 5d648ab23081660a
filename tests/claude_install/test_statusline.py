"""The status line band, run as Claude Code runs it: `python -I -S statusline.py`, with
real supervised jobs."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from corral.surfaces.claude import statusline
from tests.helpers import corral, start_job, wait_for

ENTRY = statusline.command()
HEAVY = {"psutil", "rich", "textual", "click", "asyncio", "starlette", "mcp", "json", "re",
         "typing", "enum", "pathlib", "platformdirs", "subprocess", "tomllib",
         "__future__"}  # fmt: skip  # __future__: a module load for what string annotations do


def status_json(folder: Path) -> bytes:
    return json.dumps(
        {
            "session_id": "s-1",
            "cwd": str(folder / "sub"),
            "workspace": {"current_dir": str(folder / "sub"), "project_dir": str(folder)},
            "model": {"id": "claude-opus-5-5", "display_name": "Opus"},
        }
    ).encode()


def run(stdin: bytes, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ENTRY, *args], input=stdin.decode(), capture_output=True, text=True, timeout=30
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "app"
    (folder / "sub").mkdir(parents=True)
    (tmp_path / "app-other").mkdir()
    return folder


def test_nothing_when_no_job_runs(project: Path) -> None:
    result = run(status_json(project))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_band_counts_the_folders_jobs_with_their_ports(project: Path) -> None:
    port = free_port()
    start_job(f"{sys.executable} -m http.server {port} --bind 127.0.0.1", cwd=project / "sub")
    start_job("sleep 60", cwd=project)
    start_job("sleep 60", cwd=project.parent / "app-other")  # a sibling folder: not counted
    try:
        wait_for(lambda: listening(port), what="the server to listen")
        result = run(status_json(project))
        assert result.stdout == f"⚙ 2 running · :{port} · /procs\n", result.stderr
        hinted = run(status_json(project), "--hint", "/corral:procs")
        assert hinted.stdout.endswith(" · /corral:procs\n")
    finally:
        corral("stop", "--all", check=True)
    assert run(status_json(project)).stdout == ""


def test_theirs_runs_after_ours_with_the_same_stdin(project: Path, tmp_path: Path) -> None:
    start_job("sleep 60", cwd=project)
    seen = tmp_path / "seen.json"
    try:
        stdin = status_json(project)
        result = run(stdin, "--then", f"cat > {seen}; echo theirs; echo line two")
        assert result.stdout == "⚙ 1 running · /procs\ntheirs\nline two\n"
        assert seen.read_bytes() == stdin
        big = json.dumps({**json.loads(stdin), "pad": "x" * 100_000}).encode()
        result = run(big, "--then", f"wc -c < {seen}; cat > {seen}")
        assert seen.read_bytes() == big
    finally:
        corral("stop", "--all", check=True)


def test_bad_input_prints_nothing_of_ours_but_theirs_still_runs(project: Path) -> None:
    result = run(b"{not json", "--then", "echo theirs")
    assert (result.returncode, result.stdout) == (0, "theirs\n")


def test_start_up_loads_nothing_heavy(project: Path) -> None:
    start_job("sleep 60", cwd=project)
    try:
        python, _, _, path = ENTRY
        result = subprocess.run(
            [python, "-X", "importtime", "-I", "-S", path],
            input=status_json(project).decode(),
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        corral("stop", "--all", check=True)
    assert result.stdout.startswith("⚙ 1 running")
    imported = {
        line.split("|")[-1].strip().split(".")[0]
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert not imported & HEAVY, imported & HEAVY
    # the launcher imports the status line from its cached bytecode instead of compiling it
    assert path.endswith("/run_statusline.py")
    assert "| corral.surfaces.claude.statusline" in result.stderr
    # the JSON reader it shares with the hook is in their package: the hook is not loaded
    assert "| corral.surfaces.claude.hook" not in result.stderr


def test_a_band_is_reused_only_while_nothing_it_shows_changed(
    project: Path, corral_home: Path
) -> None:
    start_job("sleep 60", cwd=project)
    try:
        assert run(status_json(project)).stdout == "⚙ 1 running · /procs\n"
        cache = corral_home / "cache" / "statusline"
        *key, text = cache.read_text().split("\0")
        assert text == "⚙ 1 running · /procs" and str(project) in key

        def reused() -> bool:
            """The cached band is read, not measured (other programs on this machine may
            open or close a listening socket between two runs: then it is measured)."""
            cache.write_text("\0".join([*cache.read_text().split("\0")[:-1], "kept"]))
            result = subprocess.run(
                [ENTRY[0], "-X", "importtime", *ENTRY[1:]], input=status_json(project).decode(),
                capture_output=True, text=True, timeout=30,
            )  # fmt: skip
            out = result.stdout
            assert out in ("kept\n", "⚙ 1 running · /procs\n"), out
            if out == "kept\n":  # a reused band loads neither the records nor the owner walk
                assert not {"corral.lowlevel.record", "corral.lowlevel.sockets"} & {
                    line.split("|")[-1].strip() for line in result.stderr.splitlines()
                }, result.stderr
            return out == "kept\n"

        assert any(reused() for _ in range(50))
    finally:
        corral("stop", "--all", check=True)
    assert run(status_json(project)).stdout == ""  # the ledger changed: measured again


def test_a_port_that_opens_shows_at_once(project: Path, tmp_path: Path) -> None:
    """No record changes when a job's server starts listening: the band is measured again
    because the machine's listening sockets changed."""
    port, gate = free_port(), tmp_path / "gate"
    subprocess.run(["mkfifo", str(gate)], check=True)
    server = (
        f"{sys.executable} -c 'import socket, sys, time; s = socket.socket(); "
        f'open(sys.argv[1]).read(); s.bind(("127.0.0.1", {port})); s.listen(); '
        f"time.sleep(60)' {gate}"
    )
    start_job(server, cwd=project)
    try:
        assert run(status_json(project)).stdout == "⚙ 1 running · /procs\n"
        gate.write_text("go")
        wait_for(lambda: listening(port), what="the server to listen")
        assert run(status_json(project)).stdout == f"⚙ 1 running · :{port} · /procs\n"
    finally:
        corral("stop", "--all", check=True)


def test_a_job_whose_supervisor_was_killed_stops_counting_at_once(project: Path) -> None:
    """Its record still says running (nobody wrote its end): the band checks that each
    job it counted still has its supervisor."""
    import os
    import signal

    job = start_job("sleep 60", cwd=project)
    start_job("sleep 60", cwd=project)
    try:
        assert run(status_json(project)).stdout == "⚙ 2 running · /procs\n"
        os.kill(job["pid"], signal.SIGKILL)
        wait_for(lambda: not _alive(job["pid"]), what="the supervisor gone")
        assert run(status_json(project)).stdout == "⚙ 1 running · /procs\n"
    finally:
        corral("stop", "--all", check=True)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False
