"""`corral run` hands the job what its caller had: the environment exactly (apart from
corral's markers), and standard fds closed as they were closed (issue 11, points 12, 13)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import alive, wait_for

CORRAL = shlex.join([sys.executable, "-m", "corral"])
MARKERS = {"CORRAL_JOB", "CORRAL_SESSION"}
# What the line reports: its character count of é, and every variable it was given.
REPORT = "echo é | wc -m; env -0"


def _without_locale(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG"))}
    env.pop("PYTHONUTF8", None)
    env.pop("PYTHONCOERCECLOCALE", None)
    return {**env, "SHELL": "/bin/bash", **extra}


def _parse(out: bytes) -> tuple[bytes, dict[bytes, bytes]]:
    count, _, rest = out.partition(b"\n")
    env = dict(e.partition(b"=")[::2] for e in rest.split(b"\0") if e)
    return count, env


def _without_volatile(env: dict[bytes, bytes]) -> dict[bytes, bytes]:
    # bash sets these itself; SHLVL counts the extra shell level of `bash -c` both ways
    return {
        k: v for k, v in env.items() if k not in (b"_", b"SHLVL", *(m.encode() for m in MARKERS))
    }


@pytest.mark.parametrize("locale", [{}, {"LANG": "C"}], ids=["unset", "LANG=C"])
def test_the_job_gets_the_callers_environment_not_pythons_coerced_one(
    locale: dict[str, str],
) -> None:
    env = _without_locale(**locale)
    direct = subprocess.run(["bash", "-c", REPORT], capture_output=True, env=env, check=True)
    via = subprocess.run(
        [sys.executable, "-m", "corral", "run", "-c", REPORT], capture_output=True, env=env
    )
    assert via.returncode == 0, via.stderr
    (want_count, want_env), (got_count, got_env) = _parse(direct.stdout), _parse(via.stdout)
    assert got_count.strip() == want_count.strip() == b"3"  # é is 2 bytes; C counts bytes
    assert b"LC_CTYPE" not in got_env
    assert _without_volatile(got_env) == _without_volatile(want_env)
    assert set(got_env) - set(want_env) <= {m.encode() for m in MARKERS} | {b"_"}


def test_a_detached_job_gets_the_callers_environment_too(tmp_path: Path) -> None:
    out = tmp_path / "out"
    line = f"({REPORT}) > {out}.part && mv {out}.part {out}"
    env = _without_locale()
    result = subprocess.run(
        [sys.executable, "-m", "corral", "run", "-d", "--json", "-c", line],
        capture_output=True,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    wait_for(out.exists)
    # The report is there before its supervisor ends (it records the end after the line's
    # last `mv`): the test waits for that end, or the teardown finds the supervisor alive.
    supervisor = json.loads(result.stdout)["data"]["pid"]
    wait_for(lambda: not alive(supervisor), what="the job's supervisor to end")
    count, got_env = _parse(out.read_bytes())
    assert count.strip() == b"3" and b"LC_CTYPE" not in got_env


@pytest.mark.parametrize("fd", [0, 1, 2])
def test_a_closed_standard_fd_is_passed_on_closed(fd: int, tmp_path: Path) -> None:
    """bash runs a line with stdout closed; so must `corral run -c` (it crashed)."""
    marker = tmp_path / "marker"
    state = f"if [ -e /proc/$$/fd/{fd} ]; then s=open; else s=closed; fi"
    line = f"echo ran > {marker}; {state}; echo $s >> {marker}"
    for runner in (f"bash -c {shlex.quote(line)}", f"{CORRAL} run -c {shlex.quote(line)}"):
        marker.unlink(missing_ok=True)
        result = subprocess.run(["bash", "-c", f"{runner} {fd}>&-"], capture_output=True)
        assert result.returncode == 0, (runner, result.stderr)
        assert marker.read_text() == "ran\nclosed\n", runner
