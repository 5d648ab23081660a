"""corral's program for a command word bash finds in its hash table (supervisor/shim.py,
written by service.admission.write_shims): the job's own call becomes the supervisor, once
the calls the line runs first have run; every other call runs the real program exactly as
bash would have run it."""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from corral.core.shell.decision import Decision, InPlace
from corral.lowlevel.locations import shim_path, shims_dir
from corral.service.admission import SHIM_SECONDS, write_shims

TOKEN = "ab" * 16


def _shim(name: str, values: tuple[str, ...], earlier: int = 0, text: str = "") -> str:
    wrap = InPlace(
        0, TOKEN, 0, 0, text or "/bin/echo supervised --", head=name, earlier=earlier,
        shim=shim_path(TOKEN, name), values=values,
    )  # fmt: skip
    write_shims(Decision(True, None, "wrap", "in-place", "x", None, (), TOKEN, (wrap,)))
    return wrap.shim


def _bash(
    script: str, shim: str, name: str, restore_signals: bool = True
) -> subprocess.CompletedProcess[bytes]:
    """`script` run by bash with `name` hashed to `shim` (as the rewritten line has it), or
    as it is when `shim` is empty."""
    hashed = f"hash -p {shim} {name}; " if shim else ""
    env = {**os.environ, "a-b": "1"}  # a name no POSIX shell keeps: bash passes it on
    return subprocess.run(
        ["/bin/bash", "-c", hashed + script], capture_output=True, env=env, timeout=30,
        check=False, restore_signals=restore_signals,
    )  # fmt: skip


def test_a_shim_is_private_and_only_at_its_jobs_own_path(corral_home: Path) -> None:
    path = _shim("env", ("serve",))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert Path(path).read_text().startswith("#!")
    elsewhere = InPlace(
        0, "cd" * 16, 0, 0, "/bin/echo x --", head="env", shim=str(corral_home / "env"),
        values=(),
    )  # fmt: skip
    write_shims(Decision(True, None, "wrap", "in-place", "x", None, (), "cd" * 16, (elsewhere,)))
    assert not (corral_home / "env").exists()


def test_old_shims_are_swept_when_new_ones_are_written(corral_home: Path) -> None:
    old = Path(shims_dir()) / ("ef" * 16)
    old.mkdir(parents=True)
    (old / "vite").write_text("#!/bin/sh\n")
    then = time.time() - SHIM_SECONDS - 60
    os.utime(old, (then, then))
    fresh = Path(shims_dir()) / ("01" * 16)
    fresh.mkdir()
    _shim("env", ("serve",))
    assert not old.exists() and fresh.exists()
    assert Path(shim_path(TOKEN, "env")).exists()


@pytest.mark.parametrize("restore_signals", [True, False])
def test_another_call_runs_the_real_program_as_bash_would(
    restore_signals: bool, corral_home: Path
) -> None:
    """argv[0], `_`, every environment entry (names no POSIX shell keeps too), the open
    files and the signal dispositions (bash started with SIGPIPE ignored or not)."""
    shim = _shim("env", ("serve",))
    as_is = _bash("env; true", "", "env", restore_signals=restore_signals)
    through = _bash("env; true", shim, "env", restore_signals=restore_signals)
    assert through.returncode == as_is.returncode == 0
    assert b"a-b=1\n" in as_is.stdout and b"_=/usr/bin/env\n" in as_is.stdout
    # (the order of the entries is bash's: it moves `_` after other commands ran first)
    assert sorted(through.stdout.splitlines()) == sorted(as_is.stdout.splitlines())
    probe = "grep -e ^SigIgn -e ^Name /proc/self/status; ls /proc/self/fd; true"
    grep = _shim("grep", ("serve",))
    seen = [_bash(probe, s, "grep", restore_signals=restore_signals) for s in ("", grep)]
    assert seen[0].stdout == seen[1].stdout and seen[0].stderr == seen[1].stderr == b""
    ignored = b"SigIgn:\t0000000001001000" if not restore_signals else b"SigIgn:\t0000000000000000"
    assert ignored in seen[0].stdout  # SIGPIPE and SIGXFSZ, as bash had them


def test_the_jobs_call_runs_the_supervisor_after_the_earlier_ones(corral_home: Path) -> None:
    shim = _shim("env", ("serve",), earlier=2)
    done = _bash("env serve; env serve; env serve; env serve", shim, "env")
    # `env serve` as it is: env finds no program `serve`
    assert done.stderr.count(b"serve") == done.stderr.count(b"No such file") == 2
    assert done.stdout == b"supervised --\nsupervised --\n"  # its command line, exec'ed


def test_a_name_gone_from_path_says_so(corral_home: Path) -> None:
    shim = _shim("no-such-program-here", ("serve",))
    done = _bash("no-such-program-here x", shim, "no-such-program-here")
    assert done.returncode == 127
    assert done.stderr == b"no-such-program-here: command not found\n"
