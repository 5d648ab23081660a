"""The Claude Code hook as Claude Code runs it: a `python -I -S` process fed JSON on stdin."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corral.core.shell.plain import may_start_runner
from corral.core.shell.runners import trigger_words
from corral.surfaces import claude
from corral.surfaces.claude import hook, triggers
from tests.helpers import (
    alive,
    corral,
    free_port,
    job_pids,
    pids_with_env,
    record,
    start_job,
    wait_for,
)

HOOK = Path(hook.__file__).resolve()
# Session ids are global: a stop by session reaches every process that carries the id, so each
# test that ends a session uses its own.
SESSION = str(uuid.uuid4())


def payload(command: str, cwd: Path, **tool_input: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "session_id": SESSION,
        "cwd": str(cwd),
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_use_id": f"toolu_{uuid.uuid4().hex}",
        "tool_input": {"command": command, "description": "d", **tool_input},
    }


def run_hook(
    event: str, data: Any, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    text = data if isinstance(data, str) else json.dumps(data)
    return subprocess.run(
        hook.command(event), input=text, capture_output=True, text=True, timeout=60,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def answer(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    out: dict[str, Any] = json.loads(result.stdout)["hookSpecificOutput"]
    return out


def stop_all() -> None:
    corral("stop", "--all", check=True)


def test_command_is_absolute_and_isolated() -> None:
    argv = hook.command("pre-tool-use")
    assert argv[:3] == [sys.executable, "-I", "-S"]
    assert Path(argv[3]) == HOOK.with_name("run_hook.py") and argv[4] == "pre-tool-use"
    with pytest.raises(ValueError, match="unknown hook event"):
        hook.command("pre")


def test_plain_line_is_answered_with_nothing_and_loads_nothing_heavy(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *hook.command("pre-tool-use")[1:]],
        input=json.dumps(payload("ls -la | grep x > out.txt", tmp_path)),
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert result.stdout == ""
    modules = {line.split("|")[2].strip() for line in result.stderr.splitlines()[1:]}
    heavy = {"json", "re", "enum", "typing", "dataclasses", "pathlib", "tree_sitter", "psutil",
             "site", "socket", "corral.core.shell.plan"}  # fmt: skip
    assert not heavy & modules
    # the launcher imports the hook, from its cached bytecode: a script run by path would be
    # compiled from source on every call (~2 ms)
    assert "corral.surfaces.claude.hook" in modules


def test_wrapped_line_loads_no_dataclasses_logging_or_pathlib(tmp_path: Path) -> None:
    # The wrapped line's start-up budget (bench/bench_hook.py): its value classes are
    # NamedTuples, and the ledger, reservations and configuration are read through os.
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *hook.command("pre-tool-use")[1:]],
        input=json.dumps(payload("npm run dev", tmp_path, run_in_background=True)),
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "updatedInput" in result.stdout
    modules = {line.split("|")[2].strip() for line in result.stderr.splitlines()[1:]}
    assert {"corral.service.admission", "corral.core.claude.permissions"} <= modules
    heavy = {"dataclasses", "inspect", "ast", "logging", "pathlib", "urllib.parse", "ipaddress",
             "platformdirs", "tomllib", "psutil", "subprocess", "asyncio"}  # fmt: skip
    assert not heavy & modules


@pytest.mark.parametrize(
    "data",
    ["", "not json", "[1, 2", '{"tool_name": "Bash"} trailing', "NaN", json.dumps([1]),
     json.dumps({"tool_name": "Bash", "tool_input": {"command": 7}}),
     json.dumps({"tool_name": "Bash", "tool_input": "npm run dev"}),
     json.dumps({"tool_name": "Bash", "tool_input": {"command": "npm run dev"}, "cwd": "/nope"})],
)  # fmt: skip
def test_unreadable_input_fails_open(data: str, corral_home: Path) -> None:
    result = run_hook("pre-tool-use", data)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert not (corral_home / "ledger").exists()


def test_internal_error_fails_open_with_one_log_line(tmp_path: Path, corral_home: Path) -> None:
    (corral_home / "ledger").write_text("a file where the ledger folder should be")
    (corral_home / "admission.lock").mkdir()  # the admission lock cannot be opened
    result = run_hook("pre-tool-use", payload("npm run dev", tmp_path))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    [line] = (corral_home / "corral.log").read_text().splitlines()
    assert "hook" in line and "pre-tool-use" in line


def test_other_tools_are_left_alone(tmp_path: Path) -> None:
    data = {**payload("npm run dev", tmp_path), "tool_name": "Write"}
    assert run_hook("pre-tool-use", data).stdout == ""


def test_background_server_is_wrapped_keeping_every_field(tmp_path: Path) -> None:
    line = f"python3 -m http.server {free_port()}"  # a port held elsewhere would be refused
    result = answer(
        run_hook("pre-tool-use", payload(line, tmp_path, run_in_background=True, timeout=5000))
    )
    new = result["updatedInput"]
    assert {k: v for k, v in new.items() if k != "command"} == {
        "description": "d", "run_in_background": True, "timeout": 5000
    }  # fmt: skip
    words = new["command"].split(" ")
    launcher = str(HOOK.parents[2] / "supervisor" / "launcher.py")
    assert words[:4] == [sys.executable, "-I", "-S", launcher]
    assert "--task" in words and new["command"].endswith(f"-- '{line}'")
    token = words[words.index("--job") + 1]
    assert f"job {token[:8]}" in result["additionalContext"]
    assert f"corral stop {token[:8]}" in result["additionalContext"]
    assert "permissionDecision" not in result  # no rule speaks for this line


def test_trailing_ampersand_line_is_detached(tmp_path: Path) -> None:
    result = answer(run_hook("pre-tool-use", payload("sleep 300 > s.log 2>&1 &", tmp_path)))
    command = result["updatedInput"]["command"]
    assert "--detached" in command.split() and command.endswith("-- 'sleep 300 > s.log 2>&1 ' &")


def test_line_already_wrapped_is_not_wrapped_again(tmp_path: Path) -> None:
    first = answer(run_hook("pre-tool-use", payload("sleep 300 &", tmp_path)))
    again = run_hook("pre-tool-use", payload(first["updatedInput"]["command"], tmp_path))
    assert (again.returncode, again.stdout) == (0, "")


def test_second_copy_of_a_running_server_is_refused(tmp_path: Path, corral_home: Path) -> None:
    line = f"python3 -m http.server {free_port()} --bind 127.0.0.1"
    first = answer(run_hook("pre-tool-use", payload(line, tmp_path, run_in_background=True)))
    command = first["updatedInput"]["command"]
    token = command.split()[command.split().index("--job") + 1]
    shell = subprocess.Popen(["bash", "-c", command], cwd=tmp_path, stdout=subprocess.DEVNULL)
    try:
        wait_for((corral_home / "ledger" / f"{token}.json").exists, 30, "the record")
        again = answer(run_hook("pre-tool-use", payload(line, tmp_path, run_in_background=True)))
        assert again["permissionDecision"] == "deny"
        assert token[:8] in again["permissionDecisionReason"]
        assert "corral stop" in again["permissionDecisionReason"]
        assert "updatedInput" not in again
    finally:
        stop_all()
        shell.wait(timeout=20)


def test_user_long_runners_from_config_are_candidates(tmp_path: Path, corral_home: Path) -> None:
    (corral_home / "config.toml").write_text('long_runners = ["myserve dev"]\n')
    result = answer(run_hook("pre-tool-use", payload("./bin/myserve dev", tmp_path)))
    assert "--task" in result["updatedInput"]["command"].split()
    cache = (corral_home / "cache" / "long-runners").read_text().split()
    assert cache[1:] == ["myserve"]
    time.sleep(0.01)  # a new mtime for the edited file
    (corral_home / "config.toml").write_text('long_runners = ["otherserve"]\n')
    assert run_hook("pre-tool-use", payload("./bin/myserve dev", tmp_path)).stdout == ""
    assert (corral_home / "cache" / "long-runners").read_text().split()[1:] == ["otherserve"]


def test_session_start_names_running_jobs_and_sets_the_env_file(
    tmp_path: Path, corral_home: Path
) -> None:
    job = start_job("sleep 300", cwd=tmp_path)
    env_file = tmp_path / "claude-env"
    try:
        data = {"hook_event_name": "SessionStart", "session_id": SESSION, "cwd": str(tmp_path)}
        result = answer(run_hook("session-start", data, {"CLAUDE_ENV_FILE": str(env_file)}))
        assert job["id"][:8] in result["additionalContext"]
        assert "sleep 300" in result["additionalContext"]
        assert env_file.read_text() == f"export CORRAL_SESSION={SESSION}\n"
    finally:
        stop_all()


def test_session_start_with_nothing_running_says_nothing(tmp_path: Path) -> None:
    data = {"hook_event_name": "SessionStart", "session_id": SESSION, "cwd": str(tmp_path)}
    assert run_hook("session-start", data).stdout == ""


def test_session_end_terminate_policy_stops_the_sessions_jobs(
    tmp_path: Path, corral_home: Path
) -> None:
    (corral_home / "config.toml").write_text('session_end = "terminate"\n')
    session = str(uuid.uuid4())
    mine = start_job("sleep 300", "--session", session, cwd=tmp_path)
    other = start_job("sleep 301", "--session", str(uuid.uuid4()), cwd=tmp_path)
    try:
        data = {"hook_event_name": "SessionEnd", "session_id": session, "cwd": str(tmp_path)}
        result = run_hook("session-end", data)
        assert (result.returncode, result.stdout) == (0, "")
        wait_for(lambda: not alive(mine["pid"]), 30, "the session's job to stop")
        assert alive(other["pid"])
        assert record(corral_home, mine["id"])["state"] == "stopped"
    finally:
        stop_all()
    # the stop ran in `corral session end`, started in the background: it audits after the
    # job is gone, then exits (the teardown would find it still running)
    ending = f"CORRAL_HOME={corral_home}".encode()
    wait_for(lambda: not [p for p in pids_with_env(ending) if alive(p)], 30, "the end to finish")


def test_session_end_keep_policy_keeps_them(tmp_path: Path) -> None:
    session = str(uuid.uuid4())
    mine = start_job("sleep 300", "--session", session, cwd=tmp_path)
    try:
        data = {"hook_event_name": "SessionEnd", "session_id": session, "cwd": str(tmp_path)}
        assert run_hook("session-end", data).stdout == ""
        time.sleep(0.3)
        assert alive(mine["pid"])
    finally:
        stop_all()


def test_post_tool_use_of_a_background_task_answers_nothing(tmp_path: Path) -> None:
    data = {
        **payload("sleep 1", tmp_path, run_in_background=True),
        "hook_event_name": "PostToolUse",
        "tool_response": {"backgroundTaskId": "b1", "stdout": "", "stderr": ""},
    }
    result = run_hook("post-tool-use", data)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_trigger_words_match_the_runners_table() -> None:
    assert trigger_words(()) == triggers.WORDS
    assert Path(triggers.__file__).read_text() == triggers.source()


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list(" \t\n;|&<>()'\"`=/.-_~\u00a0\u2028abcnpmvitepython3")))
    | st.text()
)
def test_fast_path_agrees_with_the_line_reader(line: str) -> None:
    quick = hook.may_need_supervision(line, False)
    assert quick == ("&" in line or may_start_runner(line))


def test_parse_agrees_with_json() -> None:
    for text in ['{"a": [1, 2.5, true, null, "x\\u00e9"], "b": {}}', " [] ", '"s"', "-0.5e3"]:
        assert claude.parse(text) == json.loads(text)
    for bad in ["", "{", "[1,]", "NaN", "Infinity", "{} {}", "'x'"]:
        with pytest.raises(ValueError):
            claude.parse(bad)


def test_post_tool_use_of_a_supervised_background_task_takes_no_snapshot(tmp_path: Path) -> None:
    wrapped = answer(run_hook("pre-tool-use", payload("sleep 1", tmp_path, run_in_background=True)))
    data = {
        **payload(wrapped["updatedInput"]["command"], tmp_path, run_in_background=True),
        "hook_event_name": "PostToolUse",
        "tool_response": {"backgroundTaskId": "b2", "stdout": "", "stderr": ""},
    }
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *hook.command("post-tool-use")[1:]],
        input=json.dumps(data), capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert result.stdout == ""
    modules = {line.split("|")[2].strip() for line in result.stderr.splitlines()[1:]}
    assert "psutil" not in modules and "corral.service.sessions" not in modules


def test_a_job_that_changes_folder_first_is_refused_when_asked_again(tmp_path: Path) -> None:
    (tmp_path / "web").mkdir()
    line = f"cd web && python3 -m http.server {free_port()} --bind 127.0.0.1"
    first = answer(run_hook("pre-tool-use", payload(line, tmp_path, run_in_background=True)))
    command = first["updatedInput"]["command"]
    assert f"--meta job_cwd={tmp_path / 'web'}" in command
    shell = subprocess.Popen(["bash", "-c", command], cwd=tmp_path, stdout=subprocess.DEVNULL)
    try:
        token = command.split()[command.split().index("--job") + 1]
        wait_for(lambda: bool(corral("ls", "--json").stdout.count(token)), 30, "the job")
        again = answer(run_hook("pre-tool-use", payload(line, tmp_path, run_in_background=True)))
        assert (
            again["permissionDecision"] == "deny" and token[:8] in again["permissionDecisionReason"]
        )
    finally:
        stop_all()
        shell.wait(timeout=20)


def test_a_line_over_the_size_limit_runs_as_written_at_once(tmp_path: Path) -> None:
    """A 10 MB line took the hook ~2.6 s a MB (Claude Code allows 60 s): now it is left
    untouched at once, and `corral explain` says why. Timed against a tiny line in the same
    run: a ratio, never an absolute time."""
    from corral.core.shell import plan

    assert hook.LINE_LIMIT == plan.LINE_LIMIT
    huge = "sleep " + " ".join(["1"] * 5_000_000) + " &"  # 10 MB of words

    def timed(line: str) -> tuple[float, subprocess.CompletedProcess[str]]:
        start = time.monotonic()
        result = run_hook("pre-tool-use", payload(line, tmp_path))
        return time.monotonic() - start, result

    small_time, small = timed("sleep 1 &")
    assert small.returncode == 0 and small.stdout  # a small line is supervised
    stop_all()
    huge_time, result = timed(huge)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert huge_time < 5 * small_time, (huge_time, small_time)
    explained = corral("explain", "--json", "--", huge[: plan.LINE_LIMIT + 1])
    data = json.loads(explained.stdout)["data"]
    assert data["action"] == "untouched" and not data["readable"]
    limit = plan.LINE_LIMIT
    assert data["reason"] == (
        f"the line is {limit + 1} characters long; corral reads lines of up to {limit}"
    )
    human = corral("explain", "--", huge[: plan.LINE_LIMIT + 1]).stdout
    assert "characters long; corral reads lines of up to 65536" in human


def _start_wrapped(line: str, tmp_path: Path) -> tuple[str, subprocess.Popen[bytes]]:
    """What Claude Code does with a background Bash call: the hook rewrites it, the shell
    runs it with its output in a task file."""
    wrapped = answer(run_hook("pre-tool-use", payload(line, tmp_path, run_in_background=True)))
    command: str = wrapped["updatedInput"]["command"]
    out = open(tmp_path / "task-output.txt", "wb")  # noqa: SIM115 - the shell holds it
    shell = subprocess.Popen(["bash", "-c", command], cwd=tmp_path, stdout=out, stderr=out)
    out.close()
    return command, shell


def _post(command: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    data = {
        **payload(command, tmp_path, run_in_background=True),
        "hook_event_name": "PostToolUse",
        "tool_response": {"backgroundTaskId": "b3", "stdout": "", "stderr": ""},
    }
    return run_hook("post-tool-use", data)


def test_post_tool_use_tells_the_model_the_url_of_a_wrapped_server(tmp_path: Path) -> None:
    port = free_port()
    command, shell = _start_wrapped(f"python3 -m http.server {port} --bind 127.0.0.1", tmp_path)
    try:
        out = answer(_post(command, tmp_path))
        assert out["hookEventName"] == "PostToolUse"
        assert f"is ready at http://localhost:{port}" in out["additionalContext"]
    finally:
        stop_all()
        shell.wait(timeout=20)


def test_post_tool_use_reports_a_server_that_crashed_at_start(tmp_path: Path) -> None:
    port = free_port()
    line = f"python3 -m http.server {port} --bind 127.0.0.1 --no-such-flag"
    command, shell = _start_wrapped(line, tmp_path)
    try:
        out = answer(_post(command, tmp_path))
        text = out["additionalContext"]
        assert "is NOT running: it exited with code 2 right after it started" in text
        assert "unrecognized arguments: --no-such-flag" in text
    finally:
        stop_all()
        shell.wait(timeout=20)


def test_post_tool_use_finds_a_job_supervised_without_a_rewrite(tmp_path: Path) -> None:
    """The shell prefix runs a background call whole under a supervisor: the command Claude
    Code reports is the model's, and the job is found by session and command."""
    port = free_port()
    line = f"python3 -m http.server {port} --bind 127.0.0.1"
    started = corral("run", "-d", "--session", SESSION, "--ready", "none", "-c", line)
    assert started.returncode == 0, started.stderr
    try:
        out = answer(_post(line, tmp_path))
        assert f"is ready at http://localhost:{port}" in out["additionalContext"]
        other = {**payload(line, tmp_path, run_in_background=True), "session_id": "other"}
        data = {**other, "hook_event_name": "PostToolUse",
                "tool_response": {"backgroundTaskId": "b4"}}  # fmt: skip
        assert run_hook("post-tool-use", data).stdout == ""
    finally:
        stop_all()


def test_a_server_slow_to_open_its_port_is_told_at_a_later_call_once(tmp_path: Path) -> None:
    """The hook does not hold the agent while a server starts: PostToolUse answers after a
    short wait, and the URL comes with the next PostToolUse of the session, once."""
    from corral.surfaces.claude import started

    port = free_port()
    slow = f"sleep {started.SERVER_WAIT + 1.5}; exec python3 -m http.server {port} --bind 127.0.0.1"
    line = f"python3 -c pass --port {port}; sh -c '{slow}'"
    command, shell = _start_wrapped(line, tmp_path)
    try:
        first = answer(_post(command, tmp_path))["additionalContext"]
        assert f"opened no port yet (waited {started.SERVER_WAIT:g} s)" in first, first
        assert "corral will tell its URL after a later tool call" in first, first
        later = payload("echo hi", tmp_path)
        later.update(hook_event_name="PostToolUse", tool_response={"stdout": "hi\n"})
        wait_for(lambda: listening(port), what="the server's port")
        other = {**later, "session_id": "another-session", "tool_use_id": "toolu_2"}
        assert run_hook("post-tool-use", other).stdout == ""  # not that session's
        told = answer(run_hook("post-tool-use", {**later, "tool_use_id": "toolu_3"}))
        assert f"is ready at http://localhost:{port}" in told["additionalContext"], told
        again = run_hook("post-tool-use", {**later, "tool_use_id": "toolu_4"})
        assert again.stdout == ""  # once
    finally:
        stop_all()
        shell.wait(timeout=20)


def _late(line: str, tmp_path: Path) -> str:
    """A background call whose PostToolUse came before its supervisor recorded it (as on a
    loaded machine): the rewritten command; the job is noted as pending."""
    wrapped = answer(run_hook("pre-tool-use", payload(line, tmp_path, run_in_background=True)))
    command: str = wrapped["updatedInput"]["command"]
    assert _post(command, tmp_path).stdout == ""
    return command


def _later(tmp_path: Path, call: str, session: str = SESSION) -> subprocess.CompletedProcess[str]:
    """A later foreground call's PostToolUse in `session`."""
    later = {**payload("echo hi", tmp_path), "session_id": session, "tool_use_id": call}
    later.update(hook_event_name="PostToolUse", tool_response={"stdout": "hi\n"})
    return run_hook("post-tool-use", later)


@pytest.mark.parametrize(
    ("end", "happened"),
    [("exit 3", "exited with code 3"), ("kill -KILL $$", "was killed by signal 9")],
)
def test_a_job_recorded_late_that_failed_is_told_once_without_a_port(
    tmp_path: Path, end: str, happened: str
) -> None:
    """The same for a job that is no server and failed: how it ended and its last lines,
    with no word of a port (it never was to open one)."""
    line = f"echo broken >&2; {end}"
    command = _late(line, tmp_path)
    with open(tmp_path / "task-output.txt", "wb") as out:  # as Claude Code runs it
        shell = subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, stdout=out, stderr=out, timeout=30
        )
    assert shell.returncode != 0, shell
    text = answer(_later(tmp_path, "toolu_9"))
    assert text["additionalContext"] == (
        f"corral: job {wrapped_token(command)[:8]} (`{line}`) is NOT running: it {happened}. "
        "The last lines of its output:\n  broken"
    ), text
    assert _later(tmp_path, "toolu_10").stdout == ""


def test_a_job_recorded_late_and_stopped_on_request_or_running_is_told_nothing(
    tmp_path: Path, corral_home: Path
) -> None:
    """A late job that is no server and still runs has nothing to tell; one stopped on
    request since is no failure. Either way its note goes, told nothing."""
    running = _late("sleep 301", tmp_path)
    stopped = _late("sleep 302", tmp_path)
    pending = corral_home / "hook-pending"
    assert len(list(pending.iterdir())) == 2
    shells = [
        subprocess.Popen(["bash", "-c", c], cwd=tmp_path, stdin=subprocess.DEVNULL)
        for c in (running, stopped)
    ]
    try:
        for command in (running, stopped):
            recorded = corral_home / "ledger" / f"{wrapped_token(command)}.json"
            wait_for(recorded.exists, what="the job's record")
        assert corral("stop", wrapped_token(stopped)).returncode == 0
        assert _later(tmp_path, "toolu_11").stdout == ""
        assert list(pending.iterdir()) == []
    finally:
        stop_all()
        for shell in shells:
            shell.wait(timeout=20)


def test_a_note_of_any_session_is_dropped_after_pending_for(
    tmp_path: Path, corral_home: Path
) -> None:
    """A session that made no call after its job was noted leaves the note behind: another
    session's call drops it once PENDING_FOR has passed, and tells it nothing."""
    from corral.surfaces.claude import started

    _late("sleep 303", tmp_path)  # never run: no record comes
    [note] = (corral_home / started.PENDING_FOLDER).iterdir()
    assert _later(tmp_path, "toolu_12", session="another-session").stdout == ""
    assert note.exists()  # not that session's, and not old
    old = time.time() - started.PENDING_FOR - 1
    os.utime(note, (old, old))
    assert _later(tmp_path, "toolu_13", session="another-session").stdout == ""
    assert not note.exists()


def wrapped_token(command: str) -> str:
    from corral.surfaces.claude import started

    token = started.token_of(command)
    assert token is not None, command
    return token


def test_a_job_recorded_after_the_hooks_wait_is_told_at_a_later_call(tmp_path: Path) -> None:
    """On a loaded machine the supervisor may record its job after PostToolUse stopped
    waiting for the record: the job is noted as pending all the same, and the next
    PostToolUse of the session tells its URL once it is recorded and serving."""
    from corral.surfaces.claude import started

    port = free_port()
    # PostToolUse before the shell runs the line: no record comes within RECORD_WAIT
    command = _late(f"python3 -m http.server {port} --bind 127.0.0.1", tmp_path)
    assert started.RECORD_WAIT < started.RECORD_LATE
    shell = subprocess.Popen(["bash", "-c", command], cwd=tmp_path, stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: listening(port), what="the server's port")
        told = answer(_later(tmp_path, "toolu_5"))
        assert f"is ready at http://localhost:{port}" in told["additionalContext"], told
        assert _later(tmp_path, "toolu_6").stdout == ""
    finally:
        stop_all()
        shell.wait(timeout=20)


def test_a_pending_job_never_recorded_is_dropped_after_record_late(
    tmp_path: Path, corral_home: Path
) -> None:
    """A job noted before its record came, whose record never comes (its line was never
    run), is not awaited past RECORD_LATE: its note is removed and nothing is told."""
    from corral.surfaces.claude import started

    _late("vite", tmp_path)
    [note] = (corral_home / started.PENDING_FOLDER).iterdir()
    assert _later(tmp_path, "toolu_7").stdout == ""
    assert note.exists()  # still awaited
    old = time.time() - started.RECORD_LATE - 1
    os.utime(note, (old, old))
    assert _later(tmp_path, "toolu_8").stdout == ""
    assert not note.exists()


def test_a_note_that_is_not_utf_8_silences_nothing(tmp_path: Path, corral_home: Path) -> None:
    """A note that is not UTF-8 (a disk's fault, a stray file) failed every PostToolUse of
    every session while it lay there: it is no session's, and the URL of the job the call
    started is told all the same; it goes once PENDING_FOR has passed, as any note."""
    from corral.surfaces.claude import started

    pending = corral_home / started.PENDING_FOLDER
    pending.mkdir(mode=0o700)
    bad = pending / ("b" * 32)
    bad.write_bytes(b"\xff\xfe not a session id")
    port = free_port()
    command, shell = _start_wrapped(f"python3 -m http.server {port} --bind 127.0.0.1", tmp_path)
    try:
        out = answer(_post(command, tmp_path))
        assert f"is ready at http://localhost:{port}" in out["additionalContext"], out
        old = time.time() - started.PENDING_FOR - 1
        os.utime(bad, (old, old))
        assert _later(tmp_path, "toolu_14").stdout == ""
        assert not bad.exists()
    finally:
        stop_all()
        shell.wait(timeout=20)


def test_a_note_that_fails_to_be_told_is_dropped_and_silences_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Whatever error telling a pending note meets (here: corral's own, made up) is one
    line in corral's log: the note is dropped (kept, it would fail every later call) and
    the job the call started is told all the same."""
    from corral.surfaces.claude import started

    port = free_port()
    command = _late(f"python3 -m http.server {port} --bind 127.0.0.1", tmp_path)
    shell = subprocess.Popen(["bash", "-c", command], cwd=tmp_path, stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: listening(port), what="the server's port")
        [note] = Path(started._pending_dir()).iterdir()

        def broken(*args: Any, **kwargs: Any) -> str:
            raise RuntimeError("made up")

        about = started._about
        monkeypatch.setattr(started, "_about", broken)
        assert started.pending_notes(SESSION) is None
        assert not note.exists()
        assert f"pending note {note.name}: RuntimeError: made up; dropped" in caplog.text

        def failing(session: str | None) -> str:
            raise RuntimeError("made up too")

        monkeypatch.setattr(started, "_about", about)
        monkeypatch.setattr(started, "pending_notes", failing)
        told = started.answer(command, SESSION)
        assert told is not None and f"is ready at http://localhost:{port}" in told, told
        assert "pending notes: RuntimeError: made up too" in caplog.text
    finally:
        stop_all()
        shell.wait(timeout=20)


def test_an_error_telling_the_new_job_loses_no_pending_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A pending note is removed as it is told: an error telling the job the call started
    (here: corral's own, made up) is one line in corral's log, and the pending URL is told."""
    from corral.surfaces.claude import started

    port = free_port()
    command = _late(f"python3 -m http.server {port} --bind 127.0.0.1", tmp_path)
    shell = subprocess.Popen(["bash", "-c", command], cwd=tmp_path, stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: listening(port), what="the server's port")

        def broken(*args: Any, **kwargs: Any) -> str:
            raise RuntimeError("made up")

        monkeypatch.setattr(started, "note", broken)
        told = started.answer(command, SESSION)
        assert told is not None and f"is ready at http://localhost:{port}" in told, told
        assert list(Path(started._pending_dir()).iterdir()) == []
        assert "the job's note: RuntimeError: made up" in caplog.text
    finally:
        stop_all()
        shell.wait(timeout=20)


def _supervisor_killed(tmp_path: Path, corral_home: Path, whole: bool) -> tuple[str, str, int]:
    """A background call's job whose supervisor was killed (SIGKILL) before PostToolUse, with
    its job (`whole`) or alone; the job's id, PostToolUse's text and how many processes of
    the job were left (the shell's and sleep's under dash, sleep's alone under bash)."""
    line = "echo up; sleep 300"
    command, shell = _start_wrapped(line, tmp_path)
    token = wrapped_token(command)
    try:
        recorded = corral_home / "ledger" / f"{token}.json"
        wait_for(lambda: recorded.exists() and job_pids(token), what="the job running")
        supervisor = record(corral_home, token)["pid"]
        if whole:
            os.killpg(supervisor, signal.SIGKILL)
        else:
            os.kill(supervisor, signal.SIGKILL)
        wait_for(lambda: not alive(supervisor), what="the supervisor's end")
        if whole:
            wait_for(lambda: not job_pids(token), what="the job's end")
        left = len(job_pids(token))
        text: str = answer(_post(command, tmp_path))["additionalContext"]
    finally:
        stop_all()
        shell.wait(timeout=20)
    return token, text, left


def test_a_job_whose_supervisor_was_killed_with_it_is_told_as_ended_unrecorded(
    tmp_path: Path, corral_home: Path
) -> None:
    token, text, _ = _supervisor_killed(tmp_path, corral_home, whole=True)
    assert text == (
        f"corral: job {token[:8]} (`echo up; sleep 300`) is NOT running: it ended without "
        "its supervisor recording how right after it started. The last lines of its output:"
        "\n  up"
    ), text


def test_a_job_that_outlived_its_supervisor_is_told_as_running_unsupervised(
    tmp_path: Path, corral_home: Path
) -> None:
    """Its processes still run: 'is NOT running' would be false. The model is told what the
    listing says of it (how many remain, how to stop them)."""
    token, text, left = _supervisor_killed(tmp_path, corral_home, whole=False)
    assert left in (1, 2)
    assert text == (
        f"corral: job {token[:8]} (`echo up; sleep 300`) runs unsupervised right after it "
        f"started: supervisor gone; {left} process(es) of the job remain: `corral stop "
        f"{token[:8]}` ends them after checking each one. The last lines of its output:\n  up"
    ), text


def listening(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("source", ["compact", "resume"])
def test_session_start_after_compact_or_resume_retells_the_sessions_own_jobs(
    tmp_path: Path, source: str
) -> None:
    session = str(uuid.uuid4())
    mine = start_job("sleep 302", "--session", session, cwd=tmp_path)
    try:
        data = {"hook_event_name": "SessionStart", "session_id": session, "cwd": str(tmp_path)}
        # a fresh start of the same session has nothing to be told: the jobs are its own
        assert run_hook("session-start", {**data, "source": "startup"}).stdout == ""
        text = answer(run_hook("session-start", {**data, "source": source}))["additionalContext"]
        first = text.splitlines()[0]
        assert first.startswith("corral: 1 job(s) this session started are still running")
        assert ("compaction" if source == "compact" else "resuming") in first
        assert f"- job {mine['id'][:8]}: `sleep 302` in {tmp_path}, no port open" in text
        assert "started earlier" not in text
    finally:
        stop_all()


def test_with_corrals_mod_the_hook_leaves_compaction_and_session_end_to_it(
    tmp_path: Path, corral_home: Path
) -> None:
    """The mod sets CORRAL_MOD for everything Claude Code runs after the session started: it
    re-tells the session after a compaction or a /clear and hands the session's end to the
    daemon itself. A resume is still the hook's (it runs before the mod could set it)."""
    session = str(uuid.uuid4())
    mine = start_job("sleep 303", "--session", session, cwd=tmp_path)
    (corral_home / "config.toml").write_text('session_end = "terminate"\n')
    mod = {"CORRAL_MOD": "1"}
    try:
        data = {"hook_event_name": "SessionStart", "session_id": session, "cwd": str(tmp_path)}
        for source in ("compact", "clear"):
            assert run_hook("session-start", {**data, "source": source}, mod).stdout == ""
        text = answer(run_hook("session-start", {**data, "source": "resume"}, mod))
        assert mine["id"][:8] in text["additionalContext"]
        end = {"hook_event_name": "SessionEnd", "session_id": session, "reason": "other"}
        assert run_hook("session-end", end, mod).stdout == ""
        time.sleep(1.0)  # a stop the hook started would have taken the job by now
        assert alive(mine["pid"])
        assert run_hook("session-end", end).stdout == ""  # without the mod: the hook's
        wait_for(lambda: not alive(mine["pid"]), what="the session's job stopped")
    finally:
        stop_all()
    # the stop ran in `corral session end`, started in the background: it audits after the
    # job is gone, then exits (CI's teardown found it still running)
    ending = f"CORRAL_HOME={corral_home}".encode()
    wait_for(lambda: not [p for p in pids_with_env(ending) if alive(p)], 30, "the end to finish")
