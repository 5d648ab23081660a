"""The Qwen Code hook's contract: Qwen 0.24.4's exact stdin shapes in (recorded from the real
CLI, see /work/shared/agents.md), the exact output shapes Qwen acts on out. Qwen ignores
`updatedInput`, so every answer is a deny: corral's refusal, or the `corral run -d` line to
run instead."""

from __future__ import annotations

import json
import os
import shlex
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corral.surfaces.agents import qwen
from tests.agents.hooks import (
    COMMANDS,
    PAYLOADS,
    VALUES,
    briefed,
    garbage,
    in_process,
    output,
    run,
)
from tests.helpers import corral, corral_json, free_port, start_job

__all__ = ["in_process"]  # a fixture

SESSION = "54e52b92-f3e7-441c-80ce-8d76175e5bb3"


def pre_tool_use(command: Any, cwd: Path | str, **tool_input: Any) -> dict[str, Any]:
    """PreToolUse as Qwen Code 0.24.4 sends it for run_shell_command."""
    return {
        "session_id": SESSION,
        "transcript_path": f"/home/u/.qwen/projects/-p/chats/{SESSION}.jsonl",
        "cwd": str(cwd),
        "hook_event_name": "PreToolUse",
        "timestamp": "2026-12-03T09:28:04.596Z",
        "permission_mode": "yolo",
        "prompt_id": f"{SESSION}########0",
        "tool_name": "run_shell_command",
        "tool_input": {"command": command, "is_background": False, "description": "serve",
                       **tool_input},
        "tool_use_id": f"toolu_1796290084596_{uuid.uuid4().hex[:9]}",  # each call its own
        "tool_call_id": "call_fake_0001",
    }  # fmt: skip


def deny_reason(out: dict[str, Any]) -> str:
    assert set(out) == {"hookSpecificOutput"}
    answer = out["hookSpecificOutput"]
    assert set(answer) == {"hookEventName", "permissionDecision", "permissionDecisionReason"}
    assert (answer["hookEventName"], answer["permissionDecision"]) == ("PreToolUse", "deny")
    reason: str = answer["permissionDecisionReason"]
    return reason


def suggested(reason: str) -> list[list[str]]:
    """The `corral run -d` lines between backticks in a deny's reason."""
    start = [*qwen.corral_program(), "run", "-d"]
    parts = reason.split("`")[1::2]
    return [w for w in (shlex.split(p) for p in parts) if w[: len(start)] == start]


def test_background_call_is_denied_with_the_exact_corral_line(tmp_path: Path) -> None:
    line = f"python3 -m http.server {free_port()}"
    out = output(run("qwen", "pre-tool-use", pre_tool_use(line, tmp_path, is_background=True)))
    reason = deny_reason(out)
    assert reason.startswith("corral: not run. ")
    [words] = suggested(reason)
    assert words[len(qwen.corral_program()) :] == ["run", "-d", "--session", SESSION, "-c", line]
    assert not (tmp_path / "ledger").exists()


def test_trailing_ampersand_becomes_the_line_without_it(tmp_path: Path) -> None:
    line = f"cd web && python3 -m http.server {free_port()} > 'the log' 2>&1"
    (tmp_path / "web").mkdir()
    reason = deny_reason(output(run("qwen", "pre-tool-use", pre_tool_use(f"{line} &", tmp_path))))
    [words] = suggested(reason)
    assert words[-2:] == ["-c", line]


def test_midline_background_jobs_are_each_named(tmp_path: Path) -> None:
    line = "npm run dev & tsc -w & sleep 2; curl localhost:3000"
    reason = deny_reason(output(run("qwen", "pre-tool-use", pre_tool_use(line, tmp_path))))
    assert [w[-1] for w in suggested(reason)] == ["npm run dev", "tsc -w"]
    assert "then run the rest of your line without them" in reason


@pytest.mark.parametrize(
    "line", ["ls -la", "git status && echo ok", "npm run dev 'open", "npm test"]
)
def test_plain_and_unreadable_lines_run_as_written(line: str, tmp_path: Path) -> None:
    result = run("qwen", "pre-tool-use", pre_tool_use(line, tmp_path))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


@pytest.mark.parametrize("background", [False, True])
def test_the_redirected_line_is_not_redirected_again(background: bool, tmp_path: Path) -> None:
    # A model may send the corral line with is_background: it is not denied again (a loop).
    line = qwen.start_line("python3 -m http.server 8765", SESSION)
    data = pre_tool_use(line, tmp_path, is_background=background)
    result = run("qwen", "pre-tool-use", data)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_the_redirected_line_starts_the_job_in_the_session(
    tmp_path: Path, corral_home: Path
) -> None:
    port = free_port()
    line = f"python3 -m http.server {port} --bind 127.0.0.1"
    reason = deny_reason(output(run("qwen", "pre-tool-use", pre_tool_use(f"{line} &", tmp_path))))
    [words] = suggested(reason)
    try:
        # Run as the model's shell would (corral's own CLI here, whatever word starts it).
        done = corral(*words[len(qwen.corral_program()) :], cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        [job] = corral_json("ls")["data"]
        assert (job["session"], job["command"], job["ports"]) == (SESSION, line, [port])
    finally:
        corral("stop", "--all", check=True)


def test_second_copy_is_denied_with_corrals_refusal(tmp_path: Path, corral_home: Path) -> None:
    line = f"python3 -m http.server {free_port()} --bind 127.0.0.1"
    job = start_job(line, cwd=tmp_path)
    try:
        reason = deny_reason(output(run("qwen", "pre-tool-use", pre_tool_use(line, tmp_path))))
        assert reason.startswith("corral refused: ") and job["id"][:8] in reason
        assert suggested(reason) == []
        assert len(list((corral_home / "ledger").glob("*.json"))) == 1
    finally:
        corral("stop", "--all", check=True)


@pytest.mark.parametrize("data", garbage("run_shell_command", "write_file"))
def test_garbage_input_fails_open(data: str | bytes, corral_home: Path) -> None:
    result = run("qwen", "pre-tool-use", data)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert not (corral_home / "ledger").exists()


def test_session_start_briefs_the_model_on_running_jobs(tmp_path: Path) -> None:
    data = {"session_id": str(uuid.uuid4()), "transcript_path": "/x.jsonl",
            "hook_event_name": "SessionStart", "timestamp": "2026-12-03T09:28:03.318Z",
            "permission_mode": "yolo", "source": "startup", "model": "fake-model"}  # fmt: skip
    briefed("qwen", data, tmp_path)


def test_session_start_with_nothing_running_says_nothing(tmp_path: Path) -> None:
    data = {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "SessionStart",
            "source": "startup"}  # fmt: skip
    result = run("qwen", "session-start", data)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


@PAYLOADS
@given(
    call=st.tuples(COMMANDS, st.sampled_from(["run_shell_command", "shell", None]), VALUES),
    extra=st.dictionaries(st.text(max_size=8), VALUES, max_size=3),
)
def test_any_payload_gets_a_deny_or_nothing(
    call: tuple[Any, Any, Any], extra: dict[str, Any], tmp_path: Path, in_process: None
) -> None:
    command, tool, background = call
    data = pre_tool_use(command, tmp_path, is_background=background, **extra)
    data["tool_name"] = tool
    text = qwen.answer("pre-tool-use", data, os.environ["CORRAL_HOME"])
    if text is None:
        return
    reason = deny_reason(json.loads(text))
    assert isinstance(command, str)
    if reason.startswith("corral refused: "):
        return
    starts = suggested(reason)
    assert starts and all(w[-2] == "-c" and w[-1] in command for w in starts)
