"""Real tmux on a private socket per test; the server is killed by its socket afterwards."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import processes_with_env
from tests.helpers import ROOT, wait_for

WRAPPER = ROOT / "src" / "corral" / "backends" / "tmux" / "tmux_wrapper.py"
SUPERVISOR = ROOT / "src" / "corral" / "supervisor" / "launcher.py"


@dataclass
class TmuxEnv:
    socket: str
    project: Path
    tmpdir: Path

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30
        )

    def windows(self) -> list[str]:
        """`session:window` of every window on the server (none when it is not running)."""
        out = self.tmux("list-windows", "-a", "-F", "#{session_name}:#{window_name}")
        return out.stdout.split() if out.returncode == 0 else []

    def leftovers(self) -> list[str]:
        return sorted(p.name for p in self.tmpdir.iterdir())


def wrapper_argv(line: str) -> list[str]:
    return [sys.executable, "-I", "-S", str(WRAPPER), "--", line]


def default_argv(line: str) -> list[str]:
    return [sys.executable, "-I", "-S", str(SUPERVISOR), "--task", "--", line]


@pytest.fixture
def tmux_env(
    corral_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[TmuxEnv]:
    if subprocess.run(["sh", "-c", "command -v tmux"], capture_output=True).returncode:
        pytest.fail("tmux is not installed: scripts/system-deps.sh installs it")
    socket = f"corral-test-{os.urandom(6).hex()}"
    project = tmp_path / "my.project:x"
    project.mkdir()
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("CORRAL_TMUX_SOCKET", socket)
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.delenv("TMUX_PANE", raising=False)
    monkeypatch.chdir(project)
    env = TmuxEnv(socket, project, tmpdir)
    yield env
    env.tmux("kill-server")
    # tmux 3.3 leaves the socket file of a killed server behind: remove ours
    base = os.environ.get("TMUX_TMPDIR") or "/tmp"
    Path(base, f"tmux-{os.getuid()}", socket).unlink(missing_ok=True)
    # the server and the pane runners carry CORRAL_HOME: wait until the kill took them
    entry = f"CORRAL_HOME={corral_home}".encode()
    wait_for(lambda: not processes_with_env(entry), timeout=30, what="tmux server gone")
