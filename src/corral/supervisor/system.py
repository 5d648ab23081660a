"""What the supervisor asks of the operating system beyond `os` (C library calls are
lowlevel.libc's): its log line, where the job's output goes, the job's environment, and
letting go of the caller's standard streams."""

from __future__ import annotations

import os
import sys
import time

from corral.lowlevel.shells import caller_environment

PLATFORM_LINUX = sys.platform.startswith("linux")
_CLEARED_ENV = (b"SHELLOPTS", b"BASHOPTS", b"BASH_ENV", b"ENV", b"CORRAL_JOB")


def log(ledger: str, message: str) -> None:
    try:
        with open(os.path.join(os.path.dirname(ledger), "corral.log"), "a") as f:
            f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} supervisor[{os.getpid()}] {message}\n")
    except OSError:
        pass


def job_environment(token: str, session: str | None) -> dict[bytes, bytes]:
    env = {
        k: v
        for k, v in caller_environment().items()
        if k not in _CLEARED_ENV and not k.startswith(b"BASH_FUNC_")
    }
    env[b"CORRAL_JOB"] = token.encode()
    if session:
        env[b"CORRAL_SESSION"] = os.fsencode(session)
    return env


def stdout_log() -> str | None:
    """Where the job's output goes when that is a regular file (a detached job's log, Claude
    Code's task output file), so readers find it without a copy; None for a pipe or terminal."""
    if not PLATFORM_LINUX:
        return None
    try:
        if os.fstat(1).st_mode & 0o170000 != 0o100000:  # S_IFREG, without importing stat
            return None
        path = os.readlink("/proc/self/fd/1")
    except OSError:
        return None
    return path if path.startswith("/") and not path.endswith(" (deleted)") else None


def release_stdio() -> None:
    """Let go of the caller's stdin/stdout/stderr: the job keeps its own copies."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
