"""corral as Claude Code's shell prefix: strings in the exact format the CLI hands it (see
tests/core/claude/test_shell_string.py), run through the program `corral install claude`
writes, with real shells, supervisors and servers."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corral.core.claude.shell_string import compose
from corral.surfaces.claude import prefix
from corral.surfaces.claude.triggers import WORDS
from tests.helpers import alive, corral, free_port, job_pids, wait_for, zsh_or_skip

HEAD = (
    "source {home}/.claude/shell-snapshots/snapshot-{kind}-1-a.sh 2>/dev/null || true && "
    "{{ \\builtin shopt -u extglob || \\builtin setopt NO_EXTENDED_GLOB; }} >/dev/null 2>&1 "
    "|| true && "
)
SESSION = "5e551011-0000-4000-8000-00000000c0de"


class Prefix:
    """The prefix program as installed, and Claude Code's way of calling it."""

    def __init__(
        self,
        tmp: Path,
        chained: str | None = None,
        python: str = sys.executable,
        shell: str = "/bin/bash",  # the user's $SHELL: bash or zsh
    ):
        self.tmp = tmp
        self.shell = shell
        self.kind = os.path.basename(shell)
        self.path = tmp / "bin" / prefix.NAME
        self.chained = chained
        prefix.write_launcher(str(self.path))
        if python != sys.executable:
            text = self.path.read_text().replace(sys.executable, python)
            self.path.write_text(text)
        self.cwd_file = tmp / "claude-1234-cwd"
        self.work = tmp / "work"
        self.work.mkdir(exist_ok=True)
        (tmp / ".claude" / "shell-snapshots").mkdir(parents=True, exist_ok=True)
        snapshot = tmp / f".claude/shell-snapshots/snapshot-{self.kind}-1-a.sh"
        snapshot.write_text("shopt -s expand_aliases\n" if self.kind == "bash" else "")

    def string(self, command: str) -> str:
        return compose(command, HEAD.format(home=self.tmp, kind=self.kind), str(self.cwd_file))

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV_"))}
        env.update(SHELL=self.shell, CLAUDE_CODE_SESSION_ID=SESSION, HOME=str(self.tmp), **extra)
        if self.chained:
            env[prefix.CHAINED] = self.chained
        return env

    def run(
        self, string: str, *, through: bool = True, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`<prefix> '<string>'`, or (through=False) what Claude Code runs without one. Output
        goes to files, as Claude Code 2.1.332 sends it to a task file: a job left in the
        background must not hold the call open."""
        argv = [str(self.path), string] if through else [self.shell, "-c", string]
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            code = subprocess.run(
                argv, cwd=self.work, env=env or self.env(), stdout=out, stderr=err,
                stdin=subprocess.DEVNULL, timeout=60, check=False, start_new_session=True,
            ).returncode  # fmt: skip
            out.seek(0)
            err.seek(0)
            return subprocess.CompletedProcess(argv, code, out.read(), err.read())

    def popen(self, string: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [str(self.path), string],
            cwd=self.work,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # as Claude Code 2.1.332 starts every Bash call
        )


@pytest.fixture
def pre(tmp_path: Path) -> Prefix:
    return Prefix(tmp_path)


def records(home: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((home / "ledger").glob("*.json"))]


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_hook_status_line_and_mcp_strings_run_as_sh_runs_them(pre: Prefix) -> None:
    for string in ["echo out; echo err >&2; exit 3", "printf '%s' \"$0\"", "corral statusline"]:
        through = pre.run(string)
        direct = subprocess.run(
            ["/bin/sh", "-c", string], cwd=pre.work, env=pre.env(), capture_output=True,
            text=True, check=False,
        )  # fmt: skip
        assert (through.stdout, through.stderr, through.returncode) == (
            direct.stdout,
            direct.stderr,
            direct.returncode,
        )


def test_a_plain_bash_call_runs_as_bash_c_and_writes_the_cwd_file(pre: Prefix) -> None:
    string = pre.string('cd .. && echo "it\'s $0"; echo e >&2; false')
    through = pre.run(string)
    cwd_through = pre.cwd_file.read_text() if pre.cwd_file.exists() else None
    assert through.returncode == 1 and through.stdout == "it's /bin/bash\n"
    ok = pre.string("cd .. && echo ok")
    assert pre.run(ok).stdout == "ok\n"
    assert pre.cwd_file.read_text() == f"{pre.tmp}\n"
    assert cwd_through is None


@pytest.mark.parametrize("shell", ["/bin/bash", "zsh"])
def test_a_long_runner_runs_whole_under_a_task_supervisor_and_a_second_is_refused(
    tmp_path: Path, corral_home: Path, shell: str
) -> None:
    pre = Prefix(tmp_path, shell=shell if shell.startswith("/") else zsh_or_skip())
    port = free_port()
    command = f"python3 -m http.server {port} --bind 127.0.0.1"
    first = pre.popen(pre.string(command))
    try:
        wait_for(lambda: listening(port), 30, "the server")
        [job] = records(corral_home)
        assert job["command"] == command and job["mode"] == "task"
        assert job["port"] == port and job["session"] == SESSION and job["shell"] == pre.shell
        assert job["pid"] == first.pid  # the prefix became the supervisor: Claude waits on it
        listed = json.loads(corral("ls", "--all", "--json").stdout)["data"]
        assert [r["id"] for r in listed] == [job["id"]]
        again = pre.run(pre.string(command))
        assert again.returncode == 1 and again.stdout == ""
        assert job["id"][:8] in again.stderr and "corral stop" in again.stderr
        assert len(records(corral_home)) == 1  # nothing started
        stopped = corral("stop", job["id"][:8], "--json")
        assert "terminated" in stopped.stdout, stopped.stdout + stopped.stderr
        first.communicate(timeout=30)
        assert first.returncode != 0  # stopped by a signal, as the server would be
        assert not listening(port) and not job_pids(job["id"])
    finally:
        if first.poll() is None:  # its group: an unsupervised server would hold the pipes
            os.killpg(first.pid, signal.SIGKILL)
        first.communicate(timeout=30)


def test_a_task_job_keeps_output_exit_status_and_cwd_file(pre: Prefix, corral_home: Path) -> None:
    (pre.work / "package.json").write_text(
        json.dumps({"scripts": {"dev": "echo dev-up; echo warn >&2; exit 4"}})
    )
    string = pre.string("npm run dev --silent; echo after $?; cd /")
    through = pre.run(string)
    direct = pre.run(string, through=False)
    assert [r["command"] for r in records(corral_home)] == [
        "npm run dev --silent; echo after $?; cd /"
    ]
    assert (through.stdout, through.stderr, through.returncode) == (
        direct.stdout,
        direct.stderr,
        direct.returncode,
    )
    assert "dev-up" in through.stdout and pre.cwd_file.read_text() == "/\n"


def test_with_shell_unset_a_task_job_runs_under_claude_codes_bash(
    pre: Prefix, corral_home: Path
) -> None:
    """Claude Code runs bash where SHELL is unset (containers, CI); so does the supervisor
    the prefix starts (`--shell`), which would otherwise run the string with /bin/sh."""
    (pre.work / "package.json").write_text(
        json.dumps({"scripts": {"dev": "echo dev-up; echo warn >&2; exit 4"}})
    )
    string = pre.string("npm run dev --silent; echo shell=${BASH_VERSION:+bash}; cd /")
    env = {k: v for k, v in pre.env().items() if k != "SHELL"}
    through = pre.run(string, env=env)
    direct = pre.run(string, through=False, env=env)
    [job] = records(corral_home)
    assert os.path.basename(job["shell"]) == "bash", job
    assert (through.stdout, through.stderr, through.returncode) == (
        direct.stdout,
        direct.stderr,
        direct.returncode,
    )
    assert "dev-up" in through.stdout and "shell=bash" in through.stdout


def test_a_background_task_noted_by_the_hook_is_supervised(pre: Prefix, corral_home: Path) -> None:
    command = "sleep 0.2; echo done"
    prefix.note_background(str(corral_home), SESSION, command)
    result = pre.run(pre.string(command))
    assert result.stdout == "done\n" and result.returncode == 0
    [job] = records(corral_home)
    assert job["command"] == command and job["mode"] == "task" and job["state"] == "exited"
    again = pre.run(pre.string(command))  # the note is used once
    assert again.stdout == "done\n" and len(records(corral_home)) == 1


@pytest.mark.parametrize("background", ["noted", "&"])
def test_corrals_own_run_sent_to_the_background_gets_no_second_supervisor(
    pre: Prefix, corral_home: Path, background: str
) -> None:
    port = free_port()
    server = f"python3 -m http.server {port} --bind 127.0.0.1"
    command = f"{shlex.quote(sys.executable)} -m corral run -d -- {server}"
    if background == "noted":  # the hook noted run_in_background for the prefix
        prefix.note_background(str(corral_home), SESSION, command)
    else:
        command += " &"
    result = pre.run(pre.string(command))
    assert result.returncode == 0, result.stderr
    wait_for(lambda: listening(port), 30, "the server")
    [job] = records(corral_home)
    assert (job["command"], job["mode"], job["session"]) == (server, "detached", SESSION)
    assert "terminated" in corral("stop", job["id"][:8]).stdout


@pytest.mark.parametrize("shell", ["/bin/bash", "zsh"])
def test_a_trailing_ampersand_returns_at_once_and_the_job_is_detached(
    tmp_path: Path, corral_home: Path, shell: str
) -> None:
    pre = Prefix(tmp_path, shell=shell if shell.startswith("/") else zsh_or_skip())
    result = pre.run(pre.string("sleep 30 &"))
    assert result.returncode == 0 and result.stdout == result.stderr == ""
    assert pre.cwd_file.read_text() == f"{pre.work}\n"
    [job] = wait_for(lambda: records(corral_home), 10, "the record")
    assert job["command"] == "sleep 30" and job["mode"] == "detached" and alive(job["pid"])
    assert "terminated" in corral("stop", job["id"][:8]).stdout


def test_a_command_sent_to_the_background_mid_line_is_rewritten_in_place(
    pre: Prefix, corral_home: Path
) -> None:
    server = f"python3 -m http.server {free_port()} --bind 127.0.0.1"
    result = pre.run(pre.string(f"{server} & echo started"))
    assert result.returncode == 0 and result.stdout == "started\n"
    [job] = wait_for(lambda: records(corral_home), 10, "the record")
    assert job["command"] == server and alive(job["pid"])
    assert "terminated" in corral("stop", job["id"][:8]).stdout


def test_an_internal_error_runs_the_string_as_it_came(pre: Prefix, tmp_path: Path) -> None:
    unusable = tmp_path / "not-a-folder"
    unusable.write_text("")
    string = pre.string("python3 -m http.server --help | head -2; echo $?")
    through = pre.run(string, env=pre.env(CORRAL_HOME=str(unusable)))
    direct = pre.run(string, through=False)
    assert (through.stdout, through.stderr, through.returncode) == (
        direct.stdout,
        direct.stderr,
        direct.returncode,
    )


def test_the_users_own_prefix_stays_chained(tmp_path: Path, corral_home: Path) -> None:
    theirs = tmp_path / "their-prefix"
    log = tmp_path / "their.log"
    theirs.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$1" >> {log}\nenv | grep -c {prefix.CHAINED} >> {log}\n'
        'exec /bin/bash -c "$1"\n'
    )
    theirs.chmod(0o755)
    pre = Prefix(tmp_path, chained=str(theirs))
    hook_string = "echo from-hook"
    plain = pre.string("echo plain")
    supervised = pre.string("python3 -m http.server --help >/dev/null; echo sup")
    assert pre.run(hook_string).stdout == "from-hook\n"
    assert pre.run(plain).stdout == "plain\n"
    assert pre.run(supervised).stdout == "sup\n"
    assert log.read_text().splitlines()[:4] == [hook_string, "0", plain, "0"]
    assert supervised in log.read_text()
    commands = [r["command"] for r in records(corral_home)]
    assert commands == ["python3 -m http.server --help >/dev/null; echo sup"]


def _reaches_python(tmp_path: Path, command: str) -> bool:
    marker = tmp_path / "python-ran"
    fake = tmp_path / "fake-python"
    if not fake.exists():
        fake.write_text(f"#!/bin/sh\ntouch {marker}\n")
        fake.chmod(0o755)
    pre = Prefix(tmp_path, python=str(fake))
    marker.unlink(missing_ok=True)
    env = {"PATH": "/usr/bin:/bin", "SHELL": "/bin/bash"}
    subprocess.run([str(pre.path), pre.string(command)], env=env, cwd=pre.work,
                   capture_output=True, check=False, timeout=30)  # fmt: skip
    return marker.exists()


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("ls -la", False),
        ("echo ping | grep -c pi", False),
        ("git status && git log", False),
        ("npm run dev", True),
        ("cd web && /usr/bin/npx vite", True),
        ("sleep 5 &", True),
        ("python3 app.py", True),
        ("x=1 node server.js", True),
        ("echo 'vite'", True),  # quotes are separators, as in the hook
    ],
)
def test_the_sh_fast_path_starts_python_only_for_candidates(
    tmp_path: Path, command: str, expected: bool
) -> None:
    assert _reaches_python(tmp_path, command) is expected


@settings(max_examples=60)
@given(
    st.lists(
        st.sampled_from([*sorted(WORDS)[:20], "python3.12", "ls", "echo", "&", "&&", ">&", "&>",
                         ";", "'", '"', "/usr/bin/", "=", " ", "\n", "|", "(", "x", "1", "nodes"]),
        max_size=8,
    ).map("".join)
)  # fmt: skip
def test_the_sh_fast_path_never_misses_what_the_line_reader_would_act_on(command: str) -> None:
    import tempfile

    from corral.core.shell.plan import decide

    with tempfile.TemporaryDirectory() as tmp:
        decision = decide(command, background=False, cwd=tmp, home=tmp)
        if decision.action != "untouched" or decision.jobs:
            assert _reaches_python(Path(tmp), command), (command, decision)
