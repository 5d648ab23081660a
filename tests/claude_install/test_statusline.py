"""The status line band, run as Claude Code runs it: `python -I -S statusline.py`, with
real supervised jobs."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corral.surfaces.claude import statusline
from tests.helpers import corral, start_job, wait_for

ENTRY = statusline.command()
HEAVY = {"psutil", "rich", "textual", "click", "asyncio", "starlette", "mcp", "json", "re",
         "typing", "enum", "pathlib", "platformdirs", "subprocess", "tomllib"}  # fmt: skip


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


def test_a_band_is_kept_a_moment_while_the_ledger_is_unchanged(
    project: Path, corral_home: Path
) -> None:
    start_job("sleep 60", cwd=project)
    try:
        assert run(status_json(project)).stdout == "⚙ 1 running · /procs\n"
        cache = corral_home / "cache" / "statusline"
        _, *key, text = cache.read_text().split("\0")
        assert text == "⚙ 1 running · /procs" and key[2] == str(project)
        cache.write_text("\0".join([repr(time.time()), *key, "kept"]))
        assert run(status_json(project)).stdout == "kept\n"  # fresh: read, not measured
        cache.write_text("\0".join([repr(time.time() - 1.5), *key, "kept"]))
        assert run(status_json(project)).stdout == "⚙ 1 running · /procs\n"  # too old
        cache.write_text("\0".join([repr(time.time()), *key, "kept"]))
    finally:
        corral("stop", "--all", check=True)
    assert run(status_json(project)).stdout == ""  # the ledger changed: measured again
