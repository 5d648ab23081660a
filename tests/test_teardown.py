"""The teardown every test gets (tests/conftest.py): corral's own processes a test leaves
that end by themselves within the grace are no leak; anything else, and anything of corral's
still running after the grace, is killed by pid and named."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import corrals_own, reap_home
from tests.helpers import alive, corral, wait_for


def _start(home: Path, seconds: float) -> subprocess.Popen[bytes]:
    env = {**os.environ, "CORRAL_HOME": str(home)}
    return subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"], env=env)


def test_a_supervisor_that_ends_by_itself_within_the_grace_is_not_left_running(
    tmp_path: Path, corral_home: Path
) -> None:
    started = corral("run", "-d", "--ready", "none", "-c", "sleep 1", check=True)
    assert started.returncode == 0
    supervisors = [p for p in _with_home(corral_home) if corrals_own(p)]
    assert supervisors, "the job's supervisor runs"
    assert reap_home(corral_home, grace=30.0) == []
    assert not [p for p in supervisors if alive(p)]


def test_a_process_not_corrals_gets_no_grace(tmp_path: Path) -> None:
    home = tmp_path / "other-home"  # not the test's own: its teardown must find nothing
    staying = _start(home, 300)
    try:
        wait_for(lambda: _with_home(home), what="the process started")
        assert not corrals_own(staying.pid)
        assert reap_home(home, grace=300.0) == [staying.pid]  # at once: not after 300 s
        assert not alive(staying.pid)  # killed and reaped (by waitpid: Popen sees no status)
    finally:
        staying.kill()
        staying.wait()


def test_corrals_own_process_still_running_after_the_grace_is_killed_and_named(
    corral_home: Path,
) -> None:
    corral("run", "-d", "--ready", "none", "-c", "sleep 300", check=True)
    supervisors = [p for p in _with_home(corral_home) if corrals_own(p)]
    assert len(supervisors) == 1
    killed = reap_home(corral_home, grace=0.2)
    assert supervisors[0] in killed and len(killed) >= 2  # the supervisor and its job
    assert not [p for p in killed if alive(p)]


def _with_home(home: Path) -> list[int]:
    from tests.helpers import pids_with_env

    return [p for p in pids_with_env(f"CORRAL_HOME={home}".encode()) if alive(p)]


def test_corrals_hook_status_line_and_bin_wrappers_are_its_own(tmp_path: Path) -> None:
    """What an agent CLI runs of corral's ends by itself too, and may still be ending when a
    test that drove the CLI returns: the hook, the status line (`python -I <package>/…py`)
    and the plugin's `bin/corral-*` wrappers (`/bin/sh <checkout>/bin/corral-hook`)."""
    from tests.conftest import ROOT

    claude = ROOT / "src" / "corral" / "surfaces" / "claude"
    argvs = [
        [sys.executable, "-I", str(claude / "run_hook.py"), "pre-tool-use"],
        [sys.executable, "-I", str(claude / "run_statusline.py")],
        ["/bin/sh", "-c", 'read -r _; : "$@"', str(ROOT / "bin" / "corral-hook")],
    ]
    for argv in argvs:
        # each waits for its input, which never comes until the pipe is closed
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        try:
            wait_for(lambda p=proc, a=argv: _argv(p.pid) == a, what="its program")  # type: ignore[misc]
            assert corrals_own(proc.pid), argv
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=30)
    job = subprocess.Popen(["/bin/sh", "-c", 'read -r _; : "$@"', str(tmp_path / "corral-x")],
                           stdin=subprocess.PIPE)  # fmt: skip
    try:
        wait_for(lambda: len(_argv(job.pid)) == 4, what="the job's program")
        assert not corrals_own(job.pid)  # a name like corral's, outside corral's folders
    finally:
        assert job.stdin is not None
        job.stdin.close()
        job.wait(timeout=30)


def _argv(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode() for a in f.read().split(b"\0")[:-1]]
    except OSError:
        return []
