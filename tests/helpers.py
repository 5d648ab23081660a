"""Small helpers for tests that start real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SUPERVISOR = ROOT / "src" / "corral" / "supervisor" / "program.py"
LAUNCHER = ROOT / "src" / "corral" / "supervisor" / "launcher.py"  # how corral starts it


def private_home(home: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment whose HOME and Claude Code config folder are `home` (a temporary
    folder): a CLI run by a test must never read or write the real ~/.claude."""
    env = dict(os.environ if base is None else base)
    return {**env, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}


def corral(*args: str, check: bool = False, **kw: Any) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a subprocess."""
    result = subprocess.run(
        [sys.executable, "-m", "corral", *args], capture_output=True, text=True, timeout=60, **kw
    )
    if check and result.returncode != 0:
        raise AssertionError(f"corral {args} failed: {result.returncode}\n{result.stderr}")
    return result


def corral_json(*args: str) -> Any:
    result = corral(*args, "--json")
    data = json.loads(result.stdout)
    assert data["schema"] == 1, data
    return data


def start_job(line: str, *extra: str, cwd: Path | None = None) -> dict[str, Any]:
    """Start `line` detached through the CLI; return its id and supervisor pid."""
    data = (
        corral_json("run", "-d", *extra, "-c", line)
        if not cwd
        else json.loads(corral("run", "-d", *extra, "--json", "-c", line, cwd=cwd).stdout)
    )
    job: dict[str, Any] = data["data"]
    assert job["supervised"], job
    return job


def free_port() -> int:
    """A loopback TCP port nobody listens on now (never a fixed one: another suite or a
    developer's server may hold it)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """The predicate's first true value, polled until `timeout`. The default is generous: it
    only costs time when something is wrong, and a loaded 2-core CI machine is slow."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return not stat[stat.rindex(b")") + 2 :].startswith(b"Z")


def pgid_of(pid: int) -> int:
    return os.getpgid(pid)


def execed(proc: subprocess.Popen[Any], argv: list[str] | None = None) -> bool:
    """True once a child started by Popen shows its command line (`argv`, or the one Popen
    was given) and the environment it was given. Popen returns when the exec has begun, and
    the child has its identity (pid, start time) from the fork, but the kernel sets the new
    image's arguments and then its environment only after it has mapped the program and its
    loader: until then both read empty, and the child carries none of its markers (seen in
    13 % of spawns here, idle, and 67 % under load). A test that finds a child by its marker
    waits for this. A child given an empty environment never counts."""
    from corral.lowlevel import procfs

    assert isinstance(proc.args, list), "execed compares the argv Popen was given"
    if procfs.cmdline(proc.pid) != (argv or [os.fsdecode(a) for a in proc.args]):
        return False
    try:
        return bool(procfs.read(f"/proc/{proc.pid}/environ", single=True))  # set last
    except OSError:
        return False


def pids_with_env(entry: bytes) -> list[int]:
    """Processes (other than this one) whose environment holds `entry` (b"NAME=value")."""
    found = []
    for name in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if entry in f.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue
    return found


def kill_with_env(entry: bytes) -> list[int]:
    """SIGKILL, by pid, every process whose environment holds `entry` (until none is left),
    reaping our own children among them; return the pids that were killed."""
    import signal

    killed: list[int] = []
    for _ in range(20):
        pids = pids_with_env(entry)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
        for pid in pids:  # our own children among them must not linger as zombies
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        time.sleep(0.05)
    return sorted(set(killed))


def job_pids(token: str) -> list[int]:
    """Live processes carrying CORRAL_JOB=<token>."""
    return [pid for pid in pids_with_env(f"CORRAL_JOB={token}".encode()) if alive(pid)]


def record(home: Path, token: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((home / "ledger" / f"{token}.json").read_text())
    return data


def ledger_record(home: Path, **fields: Any) -> str:
    """Write a job's record as a supervisor writes it (a finished `sleep 1` of no session,
    by default; `fields` replace any of its fields) into `home`'s ledger; return its id."""
    import time
    import uuid

    token = uuid.uuid4().hex
    ledger = home / "ledger"
    ledger.mkdir(mode=0o700, exist_ok=True)
    now = time.time()
    record = {
        "version": 1, "id": token, "pid": 999_999, "started_at": "boot:1", "pgid": 999_999,
        "mode": "detached", "backend": "group", "session": None, "cwd": str(home),
        "command": "sleep 1", "digest": "0" * 64, "identity": None, "port": None,
        "shell": "/bin/sh", "parent_pid": 1, "grace": 3.0, "created_at": now - 5,
        "state": "exited", "exit_code": 0, "signal": None, "stop_requested_at": None,
        "ended_at": now, **fields,
    }  # fmt: skip
    (ledger / f"{token}.json").write_text(json.dumps(record))
    return token


def binary_or_skip(path: Path, what: str, script: str) -> Path:
    """An external CLI the tests run: `path` when installed; else skip, except in CI, where
    a missing CLI is a failure (`script` installs it)."""
    if path.exists():
        return path
    why = f"{what} not installed at {path}: run {script}"
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(why)
    pytest.skip(why)


class LocalServer:
    """An HTTP server on 127.0.0.1 (a free port) answering with `handler` in a thread of its
    own until `close()`: the fake model APIs the agent CLIs talk to."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], name: str) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name=name, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def zsh_or_skip() -> str:
    """zsh's path (scripts/system-deps.sh installs it); skip without it, except in CI, where
    the script should have installed it."""
    import shutil

    import pytest

    found = shutil.which("zsh")
    if not found:
        why = "zsh is not installed: run scripts/system-deps.sh"
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(why)
        pytest.skip(why)
    return found
