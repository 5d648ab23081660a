"""corral's shell prefix for a user whose shell is zsh: Claude Code 2.1.332 then runs
`zsh -c '<string>'` around a zsh snapshot (tests/claude/samples/shell-prefix-strings.json,
`zsh_strings`), and the prefix supervises it as it does for bash, running the string with
zsh exactly as Claude Code would (start-up files included)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corral.surfaces.claude import prefix
from tests.helpers import zsh_or_skip
from tests.surfaces.claude.test_prefix import SESSION, Prefix, records

ZSHENV = "export CORRAL_TEST_ZSHENV=read\n"  # what zsh -c reads first, unless -f


@pytest.fixture
def pre(tmp_path: Path) -> Prefix:
    made = Prefix(tmp_path, shell=zsh_or_skip())
    (tmp_path / ".zshenv").write_text(ZSHENV)  # HOME is tmp_path
    return made


def test_a_supervised_string_runs_as_zsh_c_runs_it(pre: Prefix, corral_home: Path) -> None:
    """Start-up files (.zshenv), $0, the shell, output, exit status, cwd file."""
    command = 'echo "$CORRAL_TEST_ZSHENV $0 ${ZSH_VERSION:+zsh}"; echo err >&2; cd /; exit 3'
    prefix.note_background(str(corral_home), SESSION, command)
    through = pre.run(pre.string(command))
    where = pre.cwd_file.read_text() if pre.cwd_file.exists() else None
    direct = pre.run(pre.string(command), through=False)
    [job] = records(corral_home)
    assert job["command"] == command and job["mode"] == "task" and job["exit_code"] == 3
    assert (through.stdout, through.stderr, through.returncode) == (
        direct.stdout,
        direct.stderr,
        direct.returncode,
    )
    assert through.stdout == f"read {pre.shell} zsh\n" and where is None


def test_the_real_zsh_strings_are_supervised(tmp_path: Path, corral_home: Path) -> None:
    """The strings 2.1.332 built with SHELL=zsh, pointed at this test's folders."""
    samples = Path(__file__).parents[2] / "claude" / "samples" / "shell-prefix-strings.json"
    [_, background, _] = json.loads(samples.read_text())["zsh_strings"]
    pre = Prefix(tmp_path, shell=zsh_or_skip())
    string = background.replace("/home/u", str(tmp_path)).replace(
        "/tmp/claude-tmp/claude-2c31-cwd", str(pre.cwd_file)
    )
    prefix.note_background(str(corral_home), "sess-1", "sleep 0.2; echo bg")
    result = pre.run(string)
    assert (result.stdout, result.returncode) == ("bg\n", 0)
    [job] = records(corral_home)
    assert job["command"] == "sleep 0.2; echo bg" and job["session"] == "sess-1"
    assert job["shell"] == pre.shell and job["mode"] == "task"


def test_a_users_own_prefix_is_what_runs_the_string(tmp_path: Path, corral_home: Path) -> None:
    """Chained, their prefix runs the string (here with zsh): .zshenv is read once, by it,
    as without corral; the supervisor's own shell only starts their program."""
    zsh = zsh_or_skip()
    theirs = tmp_path / "their-prefix"
    theirs.write_text(f'#!/bin/sh\nexec {zsh} -c "$1"\n')
    theirs.chmod(0o755)
    pre = Prefix(tmp_path, chained=str(theirs), shell=zsh)
    reads = tmp_path / "reads"
    (tmp_path / ".zshenv").write_text(f"echo read >> {reads}\n")
    command = "python3 -m http.server --help >/dev/null; echo sup"
    assert pre.run(pre.string(command)).stdout == "sup\n"
    assert [r["command"] for r in records(corral_home)] == [command]
    assert reads.read_text() == "read\n"
