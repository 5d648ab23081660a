"""The shell prefix is transparent: every line of the corpus, in the string Claude Code 2.1.332
builds around it, gives the same stdout, stderr, exit status (a signal death included) and
cwd file run through corral's prefix as run by `bash -c` directly, both when the prefix
passes it through and when it supervises the whole string (a background task the hook
noted). The same under zsh, for a user whose shell it is (Claude Code then runs `zsh -c`
around a zsh snapshot), with a .zshenv that both must read."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from corral.core.claude.shell_string import compose
from corral.core.shell.plan import decide
from corral.surfaces.claude import prefix
from tests.helpers import zsh_or_skip
from tests.lines_corpus import LINES, STDIN
from tests.test_transparency import line_environment

SAMPLES = Path(__file__).parents[2] / "claude" / "samples" / "shell-prefix-strings.json"
HEAD = json.loads(SAMPLES.read_text())["strings"][1].partition("eval '")[0]
ZSH_HEAD = json.loads(SAMPLES.read_text())["zsh_strings"][1].partition("eval '")[0]
SESSION = "sess-1"  # what the sample's `export CORRAL_SESSION=…` segment names
NOTED = LINES[::4]  # run as background tasks: supervised whole
# Under zsh: the noted lines, some passed through, and one that shows .zshenv was read.
ZSHENV_LINE = 'echo "zshenv: $CORRAL_TEST_ZSHENV"'
ZSH_PASSED = [*LINES[2::8], ZSHENV_LINE]
ZSH_NOTED = [*NOTED, ZSHENV_LINE]


def _group_alive(pgid: int) -> bool:
    """Whether a live (not zombie) process is left in process group `pgid`."""
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != b"Z" and int(fields[2]) == pgid:
                return True
    return False


def _run(
    argv: list[str], work: Path, env: dict[str, str], head: str
) -> tuple[bytes, bytes, int, str]:
    cwd_file = work.parent / f"{work.name}-cwd"
    cwd_file.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [*argv[:-1], compose(argv[-1], head, str(cwd_file))],
        cwd=work,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # a group of its own, as Claude Code gives each Bash call
    )
    out, err = proc.communicate(STDIN, timeout=60)
    # What the line leaves behind as it ends (a coprocess's `cat` reading its EOF) ends a
    # moment later: wait for the group, so that the leak check does not catch it dying.
    deadline = time.monotonic() + 10
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    where = cwd_file.read_text() if cwd_file.exists() else "<none>"
    return out, err, proc.returncode, where


def both(line: str, launcher: Path, home: Path, noted: bool, shell: str = "/bin/bash") -> None:
    base = Path(tempfile.mkdtemp(prefix="corral-prefix-"))
    env = line_environment({"CLAUDE_CODE_SESSION_ID": SESSION, "CORRAL_HOME": str(home)})
    head = HEAD
    if shell != "/bin/bash":
        (base / ".zshenv").write_text("export CORRAL_TEST_ZSHENV=read\n")
        env.update(SHELL=shell, ZDOTDIR=str(base))
        head = ZSH_HEAD
    work = base / "w"
    try:
        work.mkdir()
        direct = _run([shell, "-c", line], work, env, head)
        shutil.rmtree(work)
        work.mkdir()
        if noted:
            prefix.note_background(str(home), SESSION, line)
        through = _run([str(launcher), line], work, env, head)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    names = ("stdout", "stderr", "exit status", "cwd file")
    pairs = zip(names, direct, through, strict=True)
    problems = [f"{n}: {a!r} != {b!r}" for n, a, b in pairs if a != b]
    assert not problems, f"line {line!r}:\n" + "\n".join(problems)


@pytest.fixture(scope="module")
def launcher(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("prefix") / prefix.NAME
    prefix.write_launcher(str(path))
    return path


def test_corpus_is_large_enough() -> None:
    assert len(LINES) >= 100 and len(NOTED) >= 50


@pytest.mark.parametrize("line", LINES, ids=[f"{i:03d}" for i in range(len(LINES))])
def test_passed_through_strings_are_unchanged(line: str, launcher: Path, corral_home: Path) -> None:
    both(line, launcher, corral_home, noted=False)


@pytest.mark.parametrize("line", NOTED, ids=[f"{i:03d}" for i in range(len(NOTED))])
def test_supervised_strings_are_unchanged(line: str, launcher: Path, corral_home: Path) -> None:
    both(line, launcher, corral_home, noted=True)
    records = [json.loads(p.read_text()) for p in (corral_home / "ledger").glob("*.json")]
    read = decide(line, background=True, cwd="/", home="/").action == "wrap"
    assert len(records) == int(read)  # a line the reader cannot read runs as it came
    if read:
        assert records[0]["mode"] == "task" and records[0]["state"] != "running"


def test_most_noted_lines_are_supervised() -> None:
    read = [line for line in NOTED if decide(line, background=True, cwd="/", home="/").readable]
    assert len(read) >= 40


@pytest.mark.parametrize("line", ZSH_PASSED, ids=[f"{i:03d}" for i in range(len(ZSH_PASSED))])
def test_zsh_passed_through_strings_are_unchanged(
    line: str, launcher: Path, corral_home: Path
) -> None:
    both(line, launcher, corral_home, noted=False, shell=zsh_or_skip())


@pytest.mark.parametrize("line", ZSH_NOTED, ids=[f"{i:03d}" for i in range(len(ZSH_NOTED))])
def test_zsh_supervised_strings_are_unchanged(line: str, launcher: Path, corral_home: Path) -> None:
    both(line, launcher, corral_home, noted=True, shell=zsh_or_skip())
    records = [json.loads(p.read_text()) for p in (corral_home / "ledger").glob("*.json")]
    read = decide(line, background=True, cwd="/", home="/").action == "wrap"
    assert len(records) == int(read)
    if read:
        assert records[0]["mode"] == "task" and records[0]["shell"].endswith("/zsh")
