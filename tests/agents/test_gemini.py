"""The Gemini CLI hook's contract: Gemini 0.61's exact stdin shapes in, the exact output
shapes Gemini acts on out (see /work/shared/agents.md: checked against the real CLI)."""

from __future__ import annotations

import itertools
import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corral.surfaces.agents import gemini
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
from tests.helpers import (
    alive,
    corral,
    free_port,
    pids_with_env,
    record,
    start_job,
    wait_for,
)

__all__ = ["in_process"]  # a fixture


_SECONDS = itertools.count()


def before_tool(
    command: Any, cwd: Path | str, session: str = "g-1", **tool_input: Any
) -> dict[str, Any]:
    """BeforeTool as Gemini 0.61 sends it for run_shell_command (every argument)."""
    return {
        "session_id": session,
        "transcript_path": "/nowhere/session.jsonl",
        "cwd": str(cwd),
        "hook_event_name": "BeforeTool",
        "timestamp": f"2026-12-03T09:38:{next(_SECONDS) % 60:02d}.{next(_SECONDS) % 1000:03d}Z",
        "tool_name": "run_shell_command",
        "tool_input": {"command": command, "description": "serve", **tool_input},
    }


def test_background_call_is_rewritten_keeping_every_argument(tmp_path: Path) -> None:
    line = f"python3 -m http.server {free_port()}"
    data = before_tool(line, tmp_path, is_background=True, dir_path="", delay_ms=500)
    out = output(run("gemini", "before-tool", data))
    assert set(out) == {"hookSpecificOutput"}
    answer = out["hookSpecificOutput"]
    assert set(answer) == {"hookEventName", "tool_input"}
    assert answer["hookEventName"] == "BeforeTool"
    new = answer["tool_input"]
    assert {k: v for k, v in new.items() if k != "command"} == {
        "description": "serve", "is_background": True, "dir_path": "", "delay_ms": 500
    }  # fmt: skip
    command = new["command"]
    assert words_after(command, "--session") == "g-1"  # Gemini's children carry no session id
    assert words_after(command, "--meta") == "agent=gemini"
    assert "--task" in command.split() and command.endswith(f"-- '{line}'")


def test_a_second_copy_of_the_hook_leaves_the_call_to_the_first(tmp_path: Path) -> None:
    # installed at user and project scope, Gemini runs both for each call (BeforeTool has
    # no call id: its time and input tell calls apart)
    data = before_tool(f"python3 -m http.server {free_port()}", tmp_path, is_background=True)
    first = output(run("gemini", "before-tool", data))
    assert "tool_input" in first["hookSpecificOutput"]
    second = run("gemini", "before-tool", data)
    assert (second.returncode, second.stdout, second.stderr) == (0, "", "")
    later = run("gemini", "before-tool", {**data, "timestamp": "2026-12-03T10:00:00.000Z"})
    assert output(later)["decision"] == "deny"  # another call: the first's server is starting


def test_trailing_ampersand_is_detached(tmp_path: Path) -> None:
    out = output(run("gemini", "before-tool", before_tool("sleep 300 &", tmp_path)))
    command = out["hookSpecificOutput"]["tool_input"]["command"]
    assert "--detached" in command.split() and command.endswith("-- 'sleep 300 ' &")


@pytest.mark.parametrize("line", ["ls -la", "git status && echo ok", "npm run dev 'open"])
def test_plain_and_unreadable_lines_run_as_written(line: str, tmp_path: Path) -> None:
    result = run("gemini", "before-tool", before_tool(line, tmp_path, is_background=False))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_second_copy_is_denied_with_the_reason_the_model_reads(
    tmp_path: Path, corral_home: Path
) -> None:
    line = f"python3 -m http.server {free_port()} --bind 127.0.0.1"
    job = start_job(line, cwd=tmp_path)
    try:
        data = before_tool(line, tmp_path, is_background=True)
        out = output(run("gemini", "before-tool", data))
        assert set(out) == {"decision", "reason"} and out["decision"] == "deny"
        assert out["reason"].startswith("corral refused: ") and job["id"] in out["reason"]
        assert len(list((corral_home / "ledger").glob("*.json"))) == 1
    finally:
        corral("stop", "--all", check=True)


@pytest.mark.parametrize("data", garbage("run_shell_command", "write_file"))
def test_garbage_input_fails_open(data: str | bytes, corral_home: Path) -> None:
    result = run("gemini", "before-tool", data)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert not (corral_home / "ledger").exists()


def test_session_start_briefs_the_model_on_running_jobs(tmp_path: Path) -> None:
    data = {"session_id": "s", "transcript_path": "/x", "hook_event_name": "SessionStart",
            "timestamp": "t", "source": "startup"}  # fmt: skip
    briefed("gemini", data, tmp_path)


def test_after_tool_tells_the_model_the_url(tmp_path: Path) -> None:
    data = before_tool("", tmp_path, is_background=False, dir_path="")
    told_the_url("gemini", "before-tool", "after-tool", data, tmp_path)


def test_session_end_twice_stops_the_sessions_jobs_once(tmp_path: Path, corral_home: Path) -> None:
    (corral_home / "config.toml").write_text('session_end = "terminate"\n')
    session = str(uuid.uuid4())
    job = start_job("sleep 300", "--session", session, cwd=tmp_path)
    data = {"session_id": session, "transcript_path": "/x", "cwd": str(tmp_path),
            "hook_event_name": "SessionEnd", "timestamp": "t", "reason": "exit"}  # fmt: skip
    for _ in range(2):
        result = run("gemini", "session-end", data)
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    wait_for(lambda: not alive(job["pid"]), 30, "the session's job to stop")
    # `corral session end` runs in the background: it audits the stop after the job is gone
    # and then exits; the audit is whole, and the teardown finds nothing, once it has ended
    ending = f"CORRAL_HOME={corral_home}".encode()
    wait_for(lambda: not [p for p in pids_with_env(ending) if alive(p)], 30, "the end to finish")
    assert record(corral_home, job["id"])["state"] == "stopped"
    audit = corral("audit", "--json", check=True).stdout
    assert len(json.loads(audit)["data"]) == 1  # one stop, though told twice


def test_a_session_that_ends_again_later_is_acted_on_again(
    tmp_path: Path, corral_home: Path
) -> None:
    # a resumed session ends once more; only an end told again within seconds is ignored
    (corral_home / "config.toml").write_text('session_end = "terminate"\n')
    session = str(uuid.uuid4())
    data = {"session_id": session, "transcript_path": "/x", "cwd": str(tmp_path),
            "hook_event_name": "SessionEnd", "timestamp": "t", "reason": "exit"}  # fmt: skip
    assert run("gemini", "session-end", data).returncode == 0
    [marker] = (corral_home / "ended-sessions").iterdir()
    os.utime(marker, (1, 1))  # that end was long ago
    job = start_job("sleep 300", "--session", session, cwd=tmp_path)
    assert run("gemini", "session-end", data).returncode == 0
    wait_for(lambda: not alive(job["pid"]), 30, "the resumed session's job to stop")
    other = {**data, "session_id": str(uuid.uuid4())}
    os.utime(marker, (1, 1))
    assert run("gemini", "session-end", other).returncode == 0
    assert not marker.exists()  # old markers are removed as others are written
    ending = f"CORRAL_HOME={corral_home}".encode()  # `corral session end`, in the background
    wait_for(lambda: not [p for p in pids_with_env(ending) if alive(p)], 30, "the ends to finish")


@PAYLOADS
@given(
    call=st.tuples(COMMANDS, st.sampled_from(["run_shell_command", "shell", None]), VALUES),
    extra=st.dictionaries(st.text(max_size=8), VALUES, max_size=3),
)
def test_any_payload_gets_a_gemini_shape_or_nothing(
    call: tuple[Any, Any, Any], extra: dict[str, Any], tmp_path: Path, in_process: None
) -> None:
    command, tool, background = call
    data = before_tool(command, tmp_path, is_background=background, **extra)
    data["tool_name"] = tool
    text = gemini.answer("before-tool", data, os.environ["CORRAL_HOME"])
    if text is None:
        return
    out = json.loads(text)
    if "decision" in out:
        assert out["decision"] == "deny" and out["reason"].startswith("corral refused: ")
        return
    new = out["hookSpecificOutput"]["tool_input"]
    assert set(new) == set(data["tool_input"])  # every original key, only `command` changed
    assert {k: v for k, v in new.items() if k != "command"} == {
        k: v for k, v in data["tool_input"].items() if k != "command"
    }
    assert isinstance(command, str) and command.rstrip(" &") in new["command"]
