"""corral's program for a command word bash finds in its hash table (supervisor/shim.py,
written by service.admission.write_shims): the job's own call becomes the supervisor, once
the calls the line runs first have run; every other call runs the real program exactly as
bash would have run it."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corral.core.shell.decision import Decision, InPlace
from corral.lowlevel.locations import shim_path, shims_dir
from corral.service.admission import SHIM_SECONDS, write_shims
from tests.helpers import zsh_or_skip

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


# A script without `#!`: the kernel refuses it (ENOEXEC); bash runs it with a new bash
# (`$0` the file), zsh with /bin/sh, and neither runs a binary file.
NO_SHEBANG = 'echo "$0|$*|${BASH_VERSION:+bash}|$SHLVL"\n[ "$1" != fail ]\n'


@pytest.mark.parametrize("shell", ["/bin/bash", "zsh"])
@pytest.mark.parametrize("script", ["plain", "empty", "binary"])
def test_a_program_the_kernel_cannot_run_runs_as_the_shell_would_run_it(
    shell: str, script: str, corral_home: Path
) -> None:
    found = zsh_or_skip() if shell == "zsh" else shell
    folder = corral_home / "bin"
    folder.mkdir()
    program = folder / "nsb"
    body = {"plain": NO_SHEBANG.encode(), "empty": b"", "binary": b"\x7fELF\0\0\0\0junk\n"}
    program.write_bytes(body[script])
    program.chmod(0o755)
    shim = _shim("nsb", ("serve",))
    hashed = "hash -p {shim} nsb" if shell == "/bin/bash" else "hash nsb={shim}"
    env = {**os.environ, "PATH": f"{folder}:{os.environ['PATH']}"}
    runs = []
    for prefix in ("", hashed.format(shim=shim) + "; "):
        line = f"{prefix}nsb a 'b c'; echo rc=$?; nsb fail; echo rc=$?"
        done = subprocess.run(
            [found, "-c", line], capture_output=True, env=env, timeout=30, check=False
        )
        runs.append((done.stdout, done.returncode, bool(done.stderr)))
    assert runs[0] == runs[1]
    if script == "plain":
        assert runs[0][0].startswith(f"{program}|a b c|".encode())
    elif script == "binary":
        assert runs[0][0] == b"rc=126\nrc=126\n"


def test_a_mark_that_cannot_be_made_lets_the_call_run_as_written(corral_home: Path) -> None:
    """The job's folder swept while the line runs its program (the kernel holds it open):
    the call runs as it is rather than fail."""
    shim = _shim("env", ("serve",), earlier=1)
    with open(shim, "rb") as held:
        shutil.rmtree(os.path.dirname(shim))
        done = subprocess.run(
            [sys.executable, "-IS", f"/dev/fd/{held.fileno()}", "serve"], capture_output=True,
            timeout=30, check=False, pass_fds=(held.fileno(),),
        )  # fmt: skip
    assert done.returncode == 127 and b"serve" in done.stderr  # env's own: no `serve`
    assert b"Traceback" not in done.stderr


@pytest.mark.parametrize("name", ["..", "a" * 300])
def test_a_shim_that_cannot_be_written_is_skipped(name: str, corral_home: Path) -> None:
    """The line then finds no program there (`[ -x … ]`): a function leads the command, or
    the list runs as written. write_shims raises nothing (the reservation is already made)
    and leaves no partial file."""
    _shim(name, ("serve",))
    folder = Path(shims_dir()) / TOKEN
    assert not [p for p in folder.iterdir() if p.name != name]


def test_the_jobs_call_gives_the_supervisor_the_programs_path_as_underscore(
    corral_home: Path,
) -> None:
    """bash and zsh set `_` to the path of the program they run; a supervisor's shell that
    sets none (/bin/sh, SHELL neither bash nor zsh) passes on what it got: the program's
    path, as without corral, not corral's own program's."""
    probe = '/bin/sh -c \'tr "\\0" "\\n" < /proc/$$/environ | grep ^_=\' --'
    shim = _shim("env", ("serve",), text=probe)
    done = _bash("env serve", shim, "env")
    assert done.stdout == b"_=/usr/bin/env\n", done
