"""The kit's own seams, fast: the fake API (script order, side requests, SSE) and the skip rule."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.claude import harness
from tests.claude.fake_api import EXHAUSTED_REPLY, SIDE_REPLY, FakeAPI, Text, ToolUse, Turn

MAIN = {"model": "claude-opus-5-5", "tools": [{"name": "Bash"}], "stream": True}


def post(api: FakeAPI, body: dict[str, Any], path: str = "/v1/messages?beta=true") -> bytes:
    request = urllib.request.Request(
        api.url + path, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        data: bytes = response.read()
        return data


def events(raw: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line.removeprefix("data: "))
        for line in raw.decode().splitlines()
        if line.startswith("data: ")
    ]


def test_main_requests_follow_the_script_and_side_requests_do_not() -> None:
    script: list[Turn] = [ToolUse("Bash", {"command": "ls"}), Text("done")]
    with FakeAPI(script) as api:
        first = events(post(api, {**MAIN, "messages": []}))
        side = json.loads(post(api, {"model": "claude-haiku-4-5", "max_tokens": 1, "messages": []}))
        tokens = json.loads(post(api, {"model": "x", "tools": []}, "/v1/messages/count_tokens"))
        result = {"type": "tool_result", "tool_use_id": "toolu_fake_0001", "content": "x"}
        user = {"role": "user", "content": [result]}
        second = events(post(api, {**MAIN, "messages": [user]}))
        third = events(post(api, {**MAIN, "messages": []}))
    types = [e["type"] for e in first]
    assert types[0] == "message_start" and types[-2:] == ["message_delta", "message_stop"]
    assert first[1]["content_block"] == {
        "type": "tool_use",
        "id": "toolu_fake_0001",
        "name": "Bash",
        "input": {},
    }
    assert json.loads(first[2]["delta"]["partial_json"]) == {"command": "ls"}
    assert first[-2]["delta"]["stop_reason"] == "tool_use"
    assert side["content"] == [{"type": "text", "text": SIDE_REPLY}]
    assert tokens == {"input_tokens": 10}
    assert second[2]["delta"] == {"type": "text_delta", "text": "done"}
    assert second[-2]["delta"]["stop_reason"] == "end_turn"
    assert third[2]["delta"]["text"] == EXHAUSTED_REPLY
    assert (api.turns_used, api.overruns) == (2, 1)
    assert [r.kind for r in api.requests] == ["main", "side", "count_tokens", "main", "main"]
    assert api.tool_results() == [result]


def test_missing_cli_skips_locally(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(harness, "CLAUDE_BIN", tmp_path / "absent")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"install-claude\.sh"):
        harness.claude_binary_or_skip()


def test_missing_cli_fails_in_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(harness, "CLAUDE_BIN", tmp_path / "absent")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"install-claude\.sh"):
        harness.claude_binary_or_skip()
