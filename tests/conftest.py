"""Shared fixtures: every test gets its own CORRAL_HOME, and everything a test started
(anything whose environment carries that CORRAL_HOME) is killed by pid afterwards."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import kill_with_env, pids_with_env

processes_with_env = pids_with_env  # the name tests/tmux/conftest.py imports

ROOT = Path(__file__).resolve().parent.parent
SUPERVISOR = ROOT / "src" / "corral" / "supervisor.py"
PYTHON = sys.executable

# A suite started in the background by a non-interactive shell (`cmd &`, nohup) inherits
# SIGINT and SIGQUIT ignored, and every "direct" run a test compares corral with would
# inherit that too, while the supervisor gives its job the default dispositions on
# purpose. Tests compare against a caller with the default dispositions.
for _sig in (signal.SIGINT, signal.SIGQUIT):
    if signal.getsignal(_sig) == signal.SIG_IGN:
        signal.signal(_sig, signal.SIG_DFL)


def reap_home(home: Path) -> list[int]:
    """Kill every process whose environment names this CORRAL_HOME; return their pids."""
    return kill_with_env(f"CORRAL_HOME={home}".encode())


@pytest.fixture(autouse=True)
def corral_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "corral-home"
    home.mkdir()
    monkeypatch.setenv("CORRAL_HOME", str(home))
    monkeypatch.delenv("CORRAL_SESSION", raising=False)
    monkeypatch.delenv("CORRAL_JOB", raising=False)
    monkeypatch.delenv("CLAUDE_CODE_SESSION_ID", raising=False)
    yield home
    leaked = reap_home(home)
    assert not leaked, f"test left processes running: {sorted(set(leaked))}"
