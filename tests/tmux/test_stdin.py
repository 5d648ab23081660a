"""The job reads the caller's stdin, as it does without tmux: the same bytes, EOF at the same
moment, a closed stdin stays closed, and nothing waits for a person in the pane."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.tmux.conftest import TmuxEnv, default_argv, wrapper_argv

LINES = [
    "cat",
    "cat; echo rc=$?",
    'read x; echo "[$x] $?"',
    'read x; read y; echo "[$x|$y] $?"',
    "head -n 1; echo then; cat",
    "wc -c",
    "wc -l < /dev/stdin",
    "python3 -c 'import sys; print(repr(sys.stdin.buffer.read()))'",
    "test -t 0 && echo tty || echo not-a-tty",
    "sort -r",
    "tr a-z A-Z",
    'while read -r l; do echo "<$l>"; done; echo end',
]
DATA = "first line\nsecond ✓ line\nthird\n".encode()
# How the caller's stdin is given: closed stdin needs a shell to close it before exec.
SOURCES = ["devnull", "pipe", "file", "closed"]


def _run(argv: list[str], source: str, tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    kw: dict[str, Any] = {"capture_output": True, "timeout": 60}
    if source == "devnull":
        kw["stdin"] = subprocess.DEVNULL
    elif source == "pipe":
        kw["input"] = DATA
    elif source == "file":
        path = tmp_path / "stdin.txt"
        path.write_bytes(DATA)
        with path.open("rb") as f:
            return subprocess.run(argv, stdin=f, **kw)
    else:
        argv = ["sh", "-c", 'exec "$@" <&-', "sh", *argv]
    return subprocess.run(argv, **kw)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("line", LINES)
def test_stdin_reads_match_the_default_backend(
    tmux_env: TmuxEnv, tmp_path: Path, line: str, source: str
) -> None:
    expected = _run(default_argv(line), source, tmp_path)
    got = _run(wrapper_argv(line), source, tmp_path)
    assert (got.stdout, got.stderr, got.returncode) == (
        expected.stdout,
        expected.stderr,
        expected.returncode,
    )
    assert b"tmux backend unavailable" not in got.stderr
    assert tmux_env.leftovers() == []


def test_eof_arrives_when_the_caller_closes_stdin(tmux_env: TmuxEnv) -> None:
    with subprocess.Popen(
        wrapper_argv("cat; echo eof"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as wrapper:
        assert wrapper.stdin and wrapper.stdout and wrapper.stderr
        try:
            wrapper.stdin.write(b"streamed\n")
            wrapper.stdin.flush()
            assert wrapper.stdout.readline() == b"streamed\n"  # read while the pipe is open
            assert wrapper.poll() is None
            wrapper.stdin.close()
            out, err = wrapper.stdout.read(), wrapper.stderr.read()
            wrapper.wait(timeout=30)
        finally:
            if wrapper.poll() is None:
                wrapper.kill()
    assert (out, err, wrapper.returncode) == (b"eof\n", b"", 0)


def test_a_line_opening_the_terminal_fails_at_once_instead_of_waiting(tmux_env: TmuxEnv) -> None:
    # An agent's call has no terminal; neither has the job in its window (the pane's
    # terminal is the pane runner's), so this fails as it would for the agent.
    # The open is tried in a subshell: a failed `exec` redirection ends a POSIX shell
    # (dash as /bin/sh when $SHELL is unset), which would print nothing at all.
    line = "(exec 3</dev/tty) 2>/dev/null && echo opened || echo no-terminal"
    expected = subprocess.run(
        default_argv(line), capture_output=True, start_new_session=True, timeout=30
    )
    got = subprocess.run(wrapper_argv(line), capture_output=True, timeout=30)
    assert expected.stdout == got.stdout == b"no-terminal\n"
    assert got.returncode == expected.returncode == 0
