"""The teardown every test gets (tests/conftest.py): what a test leaves that ends by itself
within the grace is not a leak; what is still running after it is killed, by pid, and named."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import reap_home
from tests.helpers import alive


def _start(home: Path, seconds: float) -> subprocess.Popen[bytes]:
    env = {**os.environ, "CORRAL_HOME": str(home)}
    return subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"], env=env)


def test_a_process_that_ends_by_itself_within_the_grace_is_not_left_running(
    tmp_path: Path,
) -> None:
    home = tmp_path / "other-home"  # not the test's own: its teardown must find nothing
    ending = _start(home, 0.5)
    try:
        assert reap_home(home, grace=30.0) == []
        assert ending.wait(timeout=5) == 0  # it ended by itself, not by the teardown's kill
    finally:
        ending.kill()
        ending.wait()


def test_a_process_still_running_after_the_grace_is_killed_and_named(tmp_path: Path) -> None:
    home = tmp_path / "other-home"
    staying = _start(home, 300)
    try:
        assert reap_home(home, grace=0.2) == [staying.pid]
        assert not alive(staying.pid)  # killed and reaped (by waitpid: Popen sees no status)
    finally:
        staying.kill()
        staying.wait()
