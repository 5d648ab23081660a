"""corral is transparent: every line of the corpus gives the same stdout bytes, stderr bytes
and exit status (a signal death included) run directly and run through the supervisor.

`run_both(line, wrap)` is the harness: any rewrite of a line (the supervisor's argv here,
the line reader's rewritten command later) can be checked against the corpus with it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import LAUNCHER as SUPERVISOR  # as corral runs it
from tests.lines_corpus import LINES, STDIN

BASH = "/bin/bash"
# What the supervisor clears from its shell's environment by design: a caller that sets
# them would see a difference that corral means to make.
_DESIGNED_AWAY = ("SHELLOPTS", "BASHOPTS", "BASH_ENV", "ENV", "CORRAL_JOB", "CORRAL_SESSION")

Wrap = Callable[[str], list[str]]


@dataclass(frozen=True)
class Outcome:
    stdout: bytes
    stderr: bytes
    returncode: int


def direct(line: str) -> list[str]:
    """The line as the agent's shell runs it (an absolute bash path, so `$0` matches)."""
    return [BASH, "-c", line]


def supervised(line: str) -> list[str]:
    return [sys.executable, "-I", "-S", str(SUPERVISOR), "--", line]


def line_environment(overrides: Mapping[str, str | None] | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in _DESIGNED_AWAY and not k.startswith(("BASH_FUNC_", "LC_"))
    }
    env["SHELL"] = BASH
    env["LANG"] = "C.UTF-8"
    for key, value in (overrides or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def _run(argv: list[str], cwd: Path, env: dict[str, str], stdin: bytes) -> Outcome:
    done = subprocess.run(
        argv, cwd=cwd, env=env, input=stdin, capture_output=True, timeout=60, check=False
    )
    return Outcome(done.stdout, done.stderr, done.returncode)


def run_both(
    line: str,
    wrap: Wrap,
    *,
    stdin: bytes = STDIN,
    env: Mapping[str, str | None] | None = None,
) -> tuple[Outcome, Outcome]:
    """Run `line` directly with bash and as `wrap(line)`, each in the same, freshly emptied
    working folder with the same stdin and environment; return (direct, wrapped)."""
    full_env = line_environment(env)
    work = Path(tempfile.mkdtemp(prefix="corral-transparency-"))
    try:
        first = _run(direct(line), work, full_env, stdin)
        shutil.rmtree(work)
        work.mkdir()
        second = _run(wrap(line), work, full_env, stdin)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return first, second


def _show(data: bytes) -> str:
    return repr(data) if len(data) <= 300 else f"{len(data)} bytes, {data[:120]!r}..."


def assert_same(line: str, expected: Outcome, got: Outcome) -> None:
    problems = [
        f"{name}: direct {_show(want)} != wrapped {_show(have)}"
        for name, want, have in (
            ("stdout", expected.stdout, got.stdout),
            ("stderr", expected.stderr, got.stderr),
        )
        if want != have
    ]
    if expected.returncode != got.returncode:
        problems.append(f"returncode: direct {expected.returncode} != {got.returncode}")
    assert not problems, f"line {line!r}:\n" + "\n".join(problems)


def _ids(lines: list[str]) -> list[str]:
    return [f"{i:03d}-{line[:40]}" for i, line in enumerate(lines)]


def _only_record(home: Path) -> str:
    records = list((home / "ledger").glob("*.json"))
    assert len(records) == 1, records
    return records[0].read_text()


@pytest.mark.parametrize("line", LINES, ids=_ids(LINES))
def test_supervisor_is_transparent(line: str, corral_home: Path) -> None:
    expected, got = run_both(line, supervised)
    assert_same(line, expected, got)
    # the run really was supervised, not the unsupervised fallback
    assert '"state": "running"' not in _only_record(corral_home)


def test_corpus_size() -> None:
    assert len(LINES) >= 220
    assert len(set(LINES)) == len(LINES)


def test_exit_seven_is_seven() -> None:
    expected, got = run_both("exit 7", supervised)
    assert expected.returncode == got.returncode == 7


def test_signal_death_is_a_signal_death() -> None:
    expected, got = run_both("echo x; kill -TERM $$", supervised)
    assert expected == got
    assert got.returncode == -15


# -- signal deaths and the environment: found by this harness, fixed in the supervisor ----


@pytest.mark.parametrize("name", ["USR1", "USR2", "ALRM", "VTALRM", "PROF", "RTMIN"])
def test_every_terminating_signal_is_a_signal_death(name: str) -> None:
    line = f"kill -{name} $$"
    expected, got = run_both(line, supervised)
    assert_same(line, expected, got)
    assert got.returncode < 0


@pytest.mark.parametrize("name", ["ABRT", "SEGV", "BUS", "FPE", "ILL", "TRAP", "SYS"])
def test_core_signals_are_signal_deaths(name: str) -> None:
    line = f"ulimit -c 0; kill -{name} $$"
    expected, got = run_both(line, supervised)
    assert_same(line, expected, got)
    assert got.returncode < 0


def test_sigquit_death_is_a_signal_death() -> None:
    line = "exec /bin/sh -c 'ulimit -c 0; kill -QUIT $$'"  # bash itself ignores SIGQUIT
    expected, got = run_both(line, supervised)
    assert_same(line, expected, got)
    assert got.returncode == -3


def test_core_signal_leaves_no_core_of_the_supervisor(tmp_path: Path) -> None:
    # The caller allows cores; the job's own core is its business, but the supervisor dies
    # of the same signal without dumping one of its own (it would hide the job's).
    line = "ulimit -c 0; kill -SEGV $$"
    done = subprocess.run(
        ["bash", "-c", 'ulimit -c unlimited 2>/dev/null; exec "$@"', "bash", *supervised(line)],
        cwd=tmp_path,
        env=line_environment(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == -11
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("core")]


@pytest.mark.parametrize("lang", [None, "C"])
def test_locale_coercion_does_not_leak_into_the_job(lang: str | None) -> None:
    # PEP 538: Python exports LC_CTYPE=C.UTF-8 into its own environment when the locale is
    # C or unset, even in isolated mode; the job must get what the caller really set.
    line = 'echo "${LC_CTYPE-unset}"; x=é; echo ${#x}'
    expected, got = run_both(line, supervised, env={"LANG": lang})
    assert_same(line, expected, got)


def _ignoring_sigint(wrap: Wrap) -> Wrap:
    # What a non-interactive shell does to `cmd &` (the detached rewrite keeps the `&`
    # outside the wrapper): the command starts with SIGINT and SIGQUIT ignored.
    return lambda line: ["/bin/sh", "-c", 'trap "" INT QUIT; exec "$@"', "sh", *wrap(line)]


def test_job_gets_default_sigint_and_sigquit_even_when_started_ignoring_them() -> None:
    # Issue 2's rule, and a deliberate difference from running the line directly: a job
    # started from `… &` in a non-interactive shell can still be stopped with Ctrl-C or
    # SIGINT, like every other job corral supervises.
    # grep shows what the shell's commands get (bash itself always ignores SIGQUIT)
    line = "grep -E '^SigIgn' /proc/self/status; kill -INT $$; echo survived"
    _, plain = run_both(line, _ignoring_sigint(direct))
    _, wrapped = run_both(line, _ignoring_sigint(supervised))
    assert plain.stdout.endswith(b"survived\n") and plain.returncode == 0
    assert int(plain.stdout.split()[1], 16) & 0b110 == 0b110  # started ignoring both
    ignored = int(wrapped.stdout.split()[1], 16)
    assert not ignored & 0b110, wrapped  # neither SIGINT (bit 1) nor SIGQUIT (bit 2)
    assert (wrapped.stdout.endswith(b"survived\n"), wrapped.returncode) == (False, -2)
