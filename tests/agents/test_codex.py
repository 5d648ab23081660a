"""The Codex CLI hook's contract: Codex 0.169's exact stdin shapes in, the exact output
shapes Codex acts on out (see /work/shared/agents.md: checked against the real CLI)."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corral.surfaces.agents import codex
from tests.agents.hooks import (
    COMMANDS,
    PAYLOADS,
    VALUES,
    briefed,
    garbage,
    in_process,
    output,
    run,
    told_the_url,
    words_after,
)
from tests.helpers import alive, corral, free_port, pids_with_env, start_job, wait_for

__all__ = ["in_process"]  # a fixture


def pre_tool_use(command: Any, cwd: Path | str, session: str = "thread-1") -> dict[str, Any]:
    """PreToolUse as Codex 0.169 sends it for a shell call."""
    return {
        "session_id": session,
        "turn_id": "turn-1",
        "transcript_path": "/nowhere/rollout.jsonl",
        "cwd": str(cwd),
        "hook_event_name": "PreToolUse",
        "model": "gpt-5",
        "permission_mode": "bypassPermissions",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": f"call_{uuid.uuid4().hex}",
    }


def test_background_server_is_rewritten_to_leave_codexs_group(tmp_path: Path) -> None:
    line = f"python3 -m http.server {free_port()} &"
    out = output(run("codex", "pre-tool-use", pre_tool_use(line, tmp_path)))
    answer = out["hookSpecificOutput"]
    assert set(answer) == {
        "hookEventName", "permissionDecision", "updatedInput", "additionalContext"
    }  # fmt: skip
    assert answer["hookEventName"] == "PreToolUse" and answer["permissionDecision"] == "allow"
    command = answer["updatedInput"]["command"]
    assert set(answer["updatedInput"]) == {"command"}
    assert words_after(command, "--session") == "thread-1"
    assert words_after(command, "--meta") == "agent=codex"
    assert "--detached" in command.split() and "--ready-fd 9" in command
    namespace = os.readlink("/proc/self/ns/pid")
    guard, rewrite, fallback, end = command.split("\n")
    assert guard == f"if [ \"$(readlink /proc/self/ns/pid 2>/dev/null)\" = '{namespace}' ]; then"
    assert rewrite.endswith("| { IFS= read -r _ || :; }")
    assert (fallback, end) == (f"else eval '{line}'", "fi")
    token = words_after(command, "--job")
    assert f"corral stop {token[:8]}" in answer["additionalContext"]


def test_in_codexs_sandbox_the_line_runs_as_written(tmp_path: Path, corral_home: Path) -> None:
    # the sandbox runs commands in a pid namespace of their own, ended with the command
    out = output(run("codex", "pre-tool-use", pre_tool_use("echo ran > ran.txt &", tmp_path)))
    command = out["hookSpecificOutput"]["updatedInput"]["command"]
    namespace = os.readlink("/proc/self/ns/pid")
    elsewhere = command.replace(f"'{namespace}'", "'pid:[1]'", 1)
    subprocess.run(["sh", "-c", elsewhere], cwd=tmp_path, check=True, timeout=30)
    wait_for((tmp_path / "ran.txt").exists, 30, "the line to run as written")
    # `echo ran > ran.txt &` is a subshell nothing supervises: the file exists as soon as it
    # opens it, before it ends, and the teardown fails a test whose subshell is still alive
    home = f"CORRAL_HOME={corral_home}".encode()
    wait_for(lambda: not pids_with_env(home), 30, "the unsupervised subshell to end")
    assert not list((corral_home / "ledger").glob("*.json"))
    subprocess.run(["sh", "-c", command], cwd=tmp_path, check=True, timeout=30)
    [entry] = (corral_home / "ledger").glob("*.json")  # here: supervised
    # the job is short: its supervisor ends with it (the teardown counts what is left)
    wait_for(lambda: not alive(json.loads(entry.read_text())["pid"]), 30, "the job to end")


def test_a_second_copy_of_the_hook_leaves_the_call_to_the_first(tmp_path: Path) -> None:
    # installed at user and project scope, Codex runs both for each call
    data = pre_tool_use(f"python3 -m http.server {free_port()} &", tmp_path)
    first = output(run("codex", "pre-tool-use", data))
    assert first["hookSpecificOutput"]["permissionDecision"] == "allow"
    second = run("codex", "pre-tool-use", data)
    assert (second.returncode, second.stdout, second.stderr) == (0, "", "")


def test_foreground_long_runner_runs_as_a_task(tmp_path: Path) -> None:
    out = output(run("codex", "pre-tool-use", pre_tool_use("npm run dev", tmp_path)))
    command = out["hookSpecificOutput"]["updatedInput"]["command"].split("\n")[1]
    assert "--task" in command.split() and command.endswith("-- 'npm run dev'")


@pytest.mark.parametrize("line", ["ls -la", "git status && echo ok", "npm run dev 'open"])
def test_plain_and_unreadable_lines_run_as_written(line: str, tmp_path: Path) -> None:
    result = run("codex", "pre-tool-use", pre_tool_use(line, tmp_path))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_second_copy_is_denied_with_the_reason_the_model_reads(
    tmp_path: Path, corral_home: Path
) -> None:
    line = f"python3 -m http.server {free_port()} --bind 127.0.0.1"
    job = start_job(line, cwd=tmp_path)
    try:
        out = output(run("codex", "pre-tool-use", pre_tool_use(f"{line} &", tmp_path)))
        assert out == {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": out["hookSpecificOutput"]["permissionDecisionReason"],
            }
        }
        reason = out["hookSpecificOutput"]["permissionDecisionReason"]
        assert reason.startswith("corral refused: ") and job["id"] in reason
        assert len(list((corral_home / "ledger").glob("*.json"))) == 1
    finally:
        corral("stop", "--all", check=True)


@pytest.mark.parametrize("data", garbage("Bash", "apply_patch"))
def test_garbage_input_fails_open(data: str | bytes, corral_home: Path) -> None:
    result = run("codex", "pre-tool-use", data)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert not (corral_home / "ledger").exists()


def test_session_start_briefs_the_model_on_running_jobs(tmp_path: Path) -> None:
    data = {"session_id": "s", "transcript_path": None, "hook_event_name": "SessionStart",
            "model": "gpt-5", "permission_mode": "default", "source": "startup"}  # fmt: skip
    briefed("codex", data, tmp_path)


def test_post_tool_use_tells_the_model_the_url(tmp_path: Path) -> None:
    data = pre_tool_use("", tmp_path)
    told_the_url("codex", "pre-tool-use", "post-tool-use", data, tmp_path)


def test_session_end_says_nothing(tmp_path: Path) -> None:
    data = {"session_id": str(uuid.uuid4()), "transcript_path": None, "cwd": str(tmp_path),
            "hook_event_name": "SessionEnd", "reason": "other"}  # fmt: skip
    result = run("codex", "session-end", data)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


@PAYLOADS
@given(
    call=st.tuples(COMMANDS, st.sampled_from(["Bash", "bash", None, 3]), st.booleans()),
    extra=st.dictionaries(st.text(max_size=8), VALUES, max_size=3),
)
def test_any_payload_gets_a_codex_shape_or_nothing(
    call: tuple[Any, Any, bool], extra: dict[str, Any], tmp_path: Path, in_process: None
) -> None:
    command, tool, cwd_is_real = call
    data = {**extra, **pre_tool_use(command, tmp_path if cwd_is_real else "/nope")}
    data["tool_name"] = tool
    text = codex.answer("pre-tool-use", data, os.environ["CORRAL_HOME"])
    if text is None:
        return
    answer = json.loads(text)["hookSpecificOutput"]
    assert answer["hookEventName"] == "PreToolUse"
    if answer["permissionDecision"] == "allow":
        assert set(answer["updatedInput"]) == {"command"}
        assert isinstance(command, str) and command in answer["updatedInput"]["command"]
    else:
        assert answer["permissionDecision"] == "deny"
        assert answer["permissionDecisionReason"].startswith("corral refused: ")
