"""What a running supervisor holds: the modules it has loaded once the job runs, and no
libm pages pulled in by int() (a budget of the resident-memory benchmark)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import LAUNCHER as SUPERVISOR  # as corral starts it
from tests.helpers import alive, job_pids, pids_with_env, wait_for

# The supervisor runs from the interpreter's exit handlers (see the end of supervisor.py),
# so a check made when its top level returns would see almost nothing: this program asks
# at the moment the supervisor exits, by wrapping os._exit.
PROBE = """
import os, sys
out, real_exit, path = sys.argv[1], os._exit, {supervisor!r}
def report(status):
    with open(out, "w") as f:
        f.write(" ".join(sorted(set(sys.modules) - before)))
    real_exit(status)
os._exit = report
sys.argv = [path, *sys.argv[2:]]
with open(path) as f:
    code = compile(f.read(), path, "exec")
before = set(sys.modules)
exec(code, {{"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}})
"""

HEAVY = {"psutil", "json", "re", "typing", "enum", "ctypes", "asyncio", "collections", "hashlib"}


def modules_after(line: str, tmp_path: Path) -> set[str]:
    out = tmp_path / "modules"
    code = PROBE.format(supervisor=str(SUPERVISOR))
    argv = [sys.executable, "-I", "-S", "-c", code, str(out), "--job", "f" * 32, "--", line]
    env = {**os.environ, "SHELL": "/bin/bash"}
    subprocess.run(argv, env=env, check=True, timeout=30)
    return {m.split(".")[0] for m in out.read_text().split()}


def test_plain_line_loads_nothing_heavy(tmp_path: Path) -> None:
    loaded = modules_after("true", tmp_path)
    assert "select" in loaded, loaded  # the probe really saw the supervisor's run
    assert not loaded & HEAVY, loaded & HEAVY


def test_assignment_line_loads_no_re(tmp_path: Path) -> None:
    assert "re" not in modules_after("PORT=3000 HOST=0 true", tmp_path)


def test_secret_flag_line_loads_no_re(tmp_path: Path) -> None:
    assert "re" not in modules_after("true --token abcSecret1 API_KEY=k2", tmp_path)


def test_quoted_secret_line_loads_re_only(tmp_path: Path) -> None:
    loaded = modules_after("true --token 'abc Secret1'", tmp_path)
    assert "re" in loaded
    assert not loaded & (HEAVY - {"re", "enum", "collections"}), loaded


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc smaps")
def test_running_supervisor_maps_no_more_libm_than_python_itself(tmp_path: Path) -> None:
    def libm_kb(pid: int) -> int:
        total, current = 0, ""
        with open(f"/proc/{pid}/smaps") as f:
            for row in f:
                parts = row.split()
                if "-" in parts[0] and not parts[0].endswith(":"):
                    current = parts[5] if len(parts) > 5 else ""
                elif parts[0] == "Rss:" and "/libm" in current:
                    total += int(parts[1])
        return total

    env = {**os.environ, "SHELL": "/bin/bash"}
    bare = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", "import time; print(flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE,
    )
    sup = subprocess.Popen(
        [sys.executable, "-I", "-S", str(SUPERVISOR), "--detached", "--", "sleep 60"],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    try:
        # Compare the two once both are past start-up (on a loaded machine either may lag):
        # python has printed, and the supervisor has opened its stop channel and started
        # its job.
        assert bare.stdout is not None and bare.stdout.readline() == b"\n"
        ledger = Path(env["CORRAL_HOME"]) / "ledger"
        (stop,) = wait_for(lambda: list(ledger.glob("*.stop")), what="the stop channel")
        wait_for(lambda: job_pids(stop.stem), what="the job's process")
        time.sleep(0.2)
        # int() of a decimal string would map ~230 kB of libm (CPython's first call of log)
        assert libm_kb(sup.pid) <= libm_kb(bare.pid) + 64
    finally:
        bare.kill()
        bare.communicate()
        os.killpg(sup.pid, 9)
        sup.wait()
        # SIGKILL is delivered asynchronously: the job's sleep may still be exiting here,
        # and the leak check would count it. Wait until none of the group is alive.
        home_entry = f"CORRAL_HOME={env['CORRAL_HOME']}".encode()
        wait_for(lambda: not [p for p in pids_with_env(home_entry) if alive(p)], what="job gone")
