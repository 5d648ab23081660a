"""Starting jobs: the supervisor's command line, and detached starts that report back."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from corral import paths, supervisor

SUPERVISOR = Path(supervisor.__file__).resolve()


def new_token() -> str:
    return os.urandom(16).hex()


def supervisor_argv(
    line: str,
    *,
    token: str,
    mode: str = "task",
    session: str | None = None,
    grace: float | None = None,
    identity: str | None = None,
    port: int | None = None,
) -> list[str]:
    """The absolute, isolated command that runs `line` under a supervisor."""
    argv = [sys.executable, "-I", "-S", str(SUPERVISOR), "--job", token, f"--{mode}"]
    argv += ["--ledger", str(paths.ledger_dir())]
    if session:
        argv += ["--session", session]
    if grace is not None:
        argv += ["--grace", f"{grace:g}"]
    if identity:
        argv += ["--identity", identity]
    if port is not None:
        argv += ["--port", str(port)]
    return [*argv, "--", line]


@dataclass(frozen=True)
class Started:
    id: str
    pid: int
    supervised: bool
    log: Path


def start_detached(
    line: str, *, session: str | None = None, grace: float | None = None, cwd: str | None = None
) -> Started:
    """Start `line` detached; its output goes to a log file. Returns once it is recorded."""
    token = new_token()
    logs = paths.ensure_private_dir(paths.home() / "logs")
    log_path = logs / f"{token}.log"
    read_end, write_end = os.pipe()
    argv = supervisor_argv(line, token=token, mode="detached", session=session, grace=grace)
    argv[argv.index("--") : argv.index("--")] = ["--ready-fd", str(write_end)]
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=fd, stderr=fd, pass_fds=(write_end,), cwd=cwd
        )
    finally:
        os.close(fd)
        os.close(write_end)
    with os.fdopen(read_end, "rb") as ready:
        answer = ready.read()  # EOF once the supervisor wrote "ok" or fell back to plain exec
    return Started(token, proc.pid, answer.startswith(b"ok"), log_path)
