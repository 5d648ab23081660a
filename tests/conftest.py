"""Shared fixtures: every test gets its own CORRAL_HOME, and everything a test started
(anything whose environment carries that CORRAL_HOME) is killed by pid afterwards."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.helpers import alive, kill_with_env, pids_with_env

processes_with_env = pids_with_env  # the name tests/tmux/conftest.py imports

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable

# A suite started in the background by a non-interactive shell (`cmd &`, nohup) inherits
# SIGINT and SIGQUIT ignored, and every "direct" run a test compares corral with would
# inherit that too, while the supervisor gives its job the default dispositions on
# purpose. Tests compare against a caller with the default dispositions.
for _sig in (signal.SIGINT, signal.SIGQUIT):
    if signal.getsignal(_sig) == signal.SIG_IGN:
        signal.signal(_sig, signal.SIG_DFL)


# Property tests are about answers, not speed: on a loaded CI machine (2 cores, every worker
# starting processes) one example can take longer than Hypothesis's 200 ms deadline, which
# fails the test (DeadlineExceeded, or Flaky when the replay is fast). Tests that set their
# own settings inherit these unless they say otherwise.
settings.register_profile("corral", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("corral")


# How long corral's own processes a test leaves may take to end by themselves before they
# count as left running. Some outlive the call that started them by design and end on their
# own: `corral session end` from a SessionEnd hook stops the session's jobs, then audits and
# exits; a supervisor records its job's end, then exits. A test that sees the effect (the
# job gone) may end before they do, and on a loaded 2-core machine "shortly" can be
# seconds. Any other process (a job's own) gets no grace: it is killed and fails the test at
# once, as does anything of corral's still running after the grace.
ENDING_GRACE = 15.0


# Where corral's own programs live: the package (supervisor, shim, the hook and the status
# line an agent CLI runs as `python -I <file>`) and the plugin's `bin/corral-*` wrappers.
_OWN_FOLDERS = tuple(
    os.fsencode(folder) + b"/" for folder in (ROOT / "src" / "corral", ROOT / "bin")
)


def corrals_own(pid: int) -> bool:
    """Whether `pid` runs one of corral's own programs: a file of corral's package (a
    supervisor or shim, the hook, the status line) or of its bin/ folder, `python -m corral …`
    or the `corral` script."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")[:5]  # the interpreter, its flags, the program
    except OSError:
        return False
    for at, arg in enumerate(argv):
        module = argv[at + 1] if arg == b"-m" and at + 1 < len(argv) else b""
        if module.split(b".")[0] == b"corral" or b"/corral/supervisor/" in arg:
            return True
        if at > 0 and arg.startswith(_OWN_FOLDERS):
            return True
        if at > 0 and os.path.basename(arg) == b"corral":
            return True
    return False


def reap_home(home: Path, grace: float = ENDING_GRACE) -> list[int]:
    """Kill every process whose environment names this CORRAL_HOME, once corral's own among
    them ended or `grace` seconds passed; return the pids killed."""
    entry = f"CORRAL_HOME={home}".encode()
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not [pid for pid in pids_with_env(entry) if alive(pid) and corrals_own(pid)]:
            break
        time.sleep(0.05)
    return kill_with_env(entry)


# corral binds its Unix sockets (corral.sock, daemon.events) in CORRAL_HOME, and a socket's
# path must fit in 104 bytes (macOS; 108 on Linux). Under a long TMPDIR (a CI runner's
# temporary folder, macOS's /var/folders/...) a home inside tmp_path is too deep for them,
# so the home gets a short folder of its own instead.
_SOCKET_PATH_MAX = 100


def _new_home(tmp_path: Path) -> tuple[Path, bool]:
    """The test's CORRAL_HOME, and whether it lies outside tmp_path (to be removed)."""
    home = tmp_path / "corral-home"
    if len(os.fsencode(home / "daemon.events")) <= _SOCKET_PATH_MAX:
        home.mkdir(mode=0o700)  # corral uses an existing CORRAL_HOME only if it is private
        return home, False
    short = "/tmp" if os.access("/tmp", os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix="corral-home-", dir=short)), True


@pytest.fixture(autouse=True)
def corral_home(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    home, outside = _new_home(tmp_path)
    monkeypatch.setenv("CORRAL_HOME", str(home))
    # Commands run from a folder of the test's own: `corral ls` lists the unsupervised
    # processes of agent sessions in the project it runs in, and a suite run from an agent's
    # shell in the repository has those (its own workers) there.
    # (Not tmp_path itself: tests tell processes working in tmp_path from the others.)
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
    monkeypatch.delenv("CORRAL_SESSION", raising=False)
    monkeypatch.delenv("CORRAL_JOB", raising=False)
    monkeypatch.delenv("CLAUDE_CODE_SESSION_ID", raising=False)
    try:
        yield home
        leaked = reap_home(home)
        assert not leaked, f"test left processes running: {sorted(set(leaked))}"
    finally:
        if outside:
            shutil.rmtree(home, ignore_errors=True)


# -- the real ~/.claude is never touched (issue 10) ------------------------------------------
# Every external CLI a test runs gets a temporary HOME and CLAUDE_CONFIG_DIR
# (tests/helpers.private_home, tests/claude/harness.py); this catches one that does not.


def _real_claude_state() -> dict[str, int]:
    home = Path(os.path.expanduser("~"))
    found: dict[str, int] = {}
    for path in (home / ".claude.json", home / ".claude"):
        if path.is_file():
            found[str(path)] = path.stat().st_mtime_ns
        elif path.is_dir():
            found[str(path)] = path.stat().st_mtime_ns
            for below in path.rglob("*"):
                found[str(below)] = below.lstat().st_mtime_ns
    return found


_CLAUDE_STATE = pytest.StashKey[dict[str, int]]()


def pytest_sessionstart(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):  # the controller, not an xdist worker
        session.config.stash[_CLAUDE_STATE] = _real_claude_state()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    before = session.config.stash.get(_CLAUDE_STATE, None)
    if before is None:
        return
    after = _real_claude_state()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if changed:
        shown = ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
        sys.stderr.write(
            f"\nthe real Claude Code folders changed during the run ({shown}): if a test did "
            "it, give the CLI it ran a temporary HOME and CLAUDE_CONFIG_DIR "
            "(tests/helpers.private_home)\n"
        )
        # On a developer's machine a Claude Code session of their own (or another checkout's
        # tests) may write there meanwhile: only CI, where nothing else runs, fails the run.
        if os.environ.get("CI", "").lower() in ("true", "1"):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
