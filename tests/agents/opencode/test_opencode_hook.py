"""The opencode hook's contract: what corral's plugin sends for a `bash` call (opencode
1.18's `tool.execute.before` input and `output.args`, recorded from the real CLI) in, the
plugin's three answers out: `{"command"}` (rewrite), `{"deny"}` (refuse), nothing (pass)."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corral.surfaces.agents import opencode
from tests.agents.hooks import COMMANDS, PAYLOADS, VALUES, in_process, output, run, words_after
from tests.helpers import corral, free_port, start_job

__all__ = ["in_process"]  # a fixture

SESSION = "ses_dc4c3d933ffediGHcmUTsXCkIe"


def tool_before(command: Any, directory: Path | str, **args: Any) -> dict[str, Any]:
    """What the plugin sends for one bash call (opencode 1.18.33)."""
    return {
        "tool": "bash",
        "sessionID": SESSION,
        "callID": f"call_{uuid.uuid4().hex[:24]}",  # each call its own
        "args": {"command": command, "description": "serve", **args},
        "directory": str(directory),
        "worktree": "/",
    }


def test_background_line_is_rewritten_carrying_the_session(tmp_path: Path) -> None:
    line = f"python3 -m http.server {free_port()} --bind 127.0.0.1"
    out = output(run("opencode", "tool-before", tool_before(f"{line} &", tmp_path)))
    assert set(out) == {"command", "context"}
    command = out["command"]
    assert out["context"].startswith("corral supervises `") and SESSION not in out["context"]
    assert words_after(command, "--session") == SESSION  # opencode's shells carry none
    assert words_after(command, "--meta") == "agent=opencode"
    assert "--detached" in command.split() and f"-- '{line} '" in command


def test_workdir_is_the_calls_folder(tmp_path: Path) -> None:
    (tmp_path / "web").mkdir()
    for workdir in ("web", str(tmp_path / "web")):
        fresh = tool_before(f"sleep {len(workdir)} &", tmp_path, workdir=workdir)
        command = output(run("opencode", "tool-before", fresh))["command"]
        assert "job_cwd" not in command  # the call runs in web: the job's own folder
        line = f"python3 -m http.server {free_port()}"
        held = start_job(line, cwd=tmp_path / "web")
        try:
            data = tool_before(line, tmp_path, workdir=workdir, timeout=120000)
            refused = output(run("opencode", "tool-before", data))
            assert set(refused) == {"deny"} and held["id"][:8] in refused["deny"]
        finally:
            corral("stop", "--all", check=True)


@pytest.mark.parametrize(
    "line", ["ls -la", "git status && echo ok", "npm run dev 'open", "npm test"]
)
def test_plain_and_unreadable_lines_run_as_written(line: str, tmp_path: Path) -> None:
    result = run("opencode", "tool-before", tool_before(line, tmp_path))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_second_copy_is_denied_with_the_reason_the_model_reads(
    tmp_path: Path, corral_home: Path
) -> None:
    line = f"python3 -m http.server {free_port()} --bind 127.0.0.1"
    job = start_job(line, cwd=tmp_path)
    try:
        out = output(run("opencode", "tool-before", tool_before(f"{line} &", tmp_path)))
        assert set(out) == {"deny"}
        assert out["deny"].startswith("corral refused: ") and job["id"][:8] in out["deny"]
        assert len(list((corral_home / "ledger").glob("*.json"))) == 1
    finally:
        corral("stop", "--all", check=True)


@pytest.mark.parametrize(
    "data",
    ["", "not json", "[1, 2", "NaN", json.dumps([1]), b"\xff\xfe{", "null",
     json.dumps({"tool": "bash", "args": {"command": 7}, "directory": "/"}),
     json.dumps({"tool": "bash", "args": "npm run dev", "directory": "/"}),
     json.dumps({"tool": "read", "args": {"command": "npm run dev"}, "directory": "/"}),
     json.dumps({"tool": "bash", "args": {"command": "npm run dev"}, "directory": "/nope"}),
     json.dumps({"tool": "bash", "args": {"command": "npm run dev"}})],
)  # fmt: skip
def test_garbage_input_fails_open(data: str | bytes, corral_home: Path) -> None:
    result = run("opencode", "tool-before", data)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert not (corral_home / "ledger").exists()


@PAYLOADS
@given(
    call=st.tuples(COMMANDS, st.sampled_from(["bash", "edit", None]), VALUES),
    extra=st.dictionaries(st.text(max_size=8), VALUES, max_size=3),
)
def test_any_payload_gets_a_plugin_answer_or_nothing(
    call: tuple[Any, Any, Any], extra: dict[str, Any], tmp_path: Path, in_process: None
) -> None:
    command, tool, workdir = call
    data = tool_before(command, tmp_path, workdir=workdir, **extra)
    data["tool"] = tool
    text = opencode.answer("tool-before", data, os.environ["CORRAL_HOME"])
    if text is None:
        return
    out = json.loads(text)
    assert isinstance(command, str) and tool == "bash"
    if "deny" in out:
        assert set(out) == {"deny"} and out["deny"].startswith("corral refused: ")
        return
    assert set(out) == {"command", "context"} and command.rstrip(" &") in out["command"]


def briefing_request(directory: Path | str, session: str = SESSION) -> dict[str, Any]:
    """What the plugin sends from `experimental.chat.system.transform`."""
    return {"sessionID": session, "directory": str(directory), "worktree": str(directory)}


def test_briefing_names_the_running_jobs_and_the_folder_to_watch(
    tmp_path: Path, corral_home: Path
) -> None:
    port = free_port()
    line = f"python3 -m http.server {port} --bind 127.0.0.1"
    job = start_job(line, "--ready", "port", "--session", "s-own", cwd=tmp_path)
    try:
        out = output(run("opencode", "briefing", briefing_request(tmp_path)))
        assert set(out) == {"context", "watch"} and out["watch"] == str(corral_home / "ledger")
        first, listed = out["context"].splitlines()
        assert first.startswith("corral: 1 job(s) started earlier are still running")
        assert listed.startswith(f"- job {job['id'][:8]}: `{line}` in {tmp_path}, ")
        assert f"http://localhost:{port}" in listed
        # The job's own session is told of it only after a compaction.
        own = briefing_request(tmp_path, session="s-own")
        assert output(run("opencode", "briefing", own)) == {"watch": out["watch"]}
        compacted = output(run("opencode", "briefing", {**own, "source": "compact"}))
        first, listed = compacted["context"].splitlines()
        assert first.startswith("corral: 1 job(s) this session started are still running")
        assert f"http://localhost:{port}" in listed
    finally:
        corral("stop", "--all", check=True)
    quiet = output(run("opencode", "briefing", briefing_request(tmp_path)))
    assert quiet == {"watch": str(corral_home / "ledger")}  # nothing to tell


@pytest.mark.parametrize(
    "data",
    ["", "not json", "[1, 2", b"\xff\xfe{", "null", json.dumps(["ses_1"])],
)
def test_a_briefing_request_it_cannot_read_gets_nothing(data: str | bytes) -> None:
    result = run("opencode", "briefing", data)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


@pytest.mark.parametrize(
    "data",
    [{}, {"sessionID": 7, "directory": None}, {"sessionID": "s", "directory": "/nope"}],
)
def test_a_briefing_for_no_folder_says_nothing_but_where_to_watch(
    data: dict[str, Any], corral_home: Path
) -> None:
    out = output(run("opencode", "briefing", data))
    assert out == {"watch": str(corral_home / "ledger")}


@PAYLOADS
@given(
    request=st.tuples(
        VALUES, st.one_of(VALUES, st.just("TMP")), st.one_of(VALUES, st.just("compact"))
    ),
    extra=st.dictionaries(st.text(max_size=8), VALUES, max_size=3),
)
def test_any_briefing_request_with_no_job_running_gets_only_the_folder_to_watch(
    request: tuple[Any, Any, Any], extra: dict[str, Any], tmp_path: Path, in_process: None
) -> None:
    session, directory, source = request
    data = {**extra, "sessionID": session, "source": source}
    data["directory"] = str(tmp_path) if directory == "TMP" else directory
    out = json.loads(opencode.answer("briefing", data, os.environ["CORRAL_HOME"]) or "null")
    assert out == {"watch": os.path.join(os.environ["CORRAL_HOME"], "ledger")}
