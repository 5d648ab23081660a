"""The daemon's request checks, the same words and status on its own routes and on the mod's
(surfaces/http_checks.py is their one home): an unknown query parameter, an unknown body
field, a query parameter that must be an absolute path, a flag, a body that is too large,
not JSON or not an object. Each bad request gets its 4xx and changes nothing."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from corral.surfaces import http

SURFACES = Path(http.__file__).parent


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(http.create_app(token="t"), headers={"Authorization": "Bearer t"}) as c:
        yield c


def _refused(response: Any, status: int = 400) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["data"] is None and len(body["errors"]) == 1
    return str(body["errors"][0])


@pytest.mark.parametrize(
    "url",
    ["/api/health?x=1&a=2", "/api/processes?x=1&a=2", "/api/claude/band?folder=/&x=1&a=2",
     "/api/claude/procs?folder=/&x=1&a=2", "/api/jobs/abcd/logs?x=1&a=2"],
)  # fmt: skip
def test_an_unknown_query_parameter(client: TestClient, url: str) -> None:
    assert _refused(client.get(url)) == "unknown query parameter(s) a, x"


@pytest.mark.parametrize(
    ("url", "body", "allowed"),
    [
        ("/api/processes/terminate", {"targets": [], "x": 1, "all": True}, "['targets']"),
        ("/api/sessions/s/processes/terminate", {"all": True, "x": 1, "a": 2},
         "['all', 'targets']"),
        ("/api/admit", {"line": "x", "cwd": "/", "x": 1, "a": 2},
         "['background', 'cwd', 'line', 'reserve']"),
        ("/api/claude/session-end", {"session": "s", "x": 1, "a": 2}, "['session']"),
        ("/api/claude/withdraw", {"tokens": ["t"], "x": 1, "a": 2}, "['tokens']"),
        ("/api/claude/supervise", {"command": "x", "cwd": "/", "x": 1, "a": 2},
         "['background', 'command', 'cwd', 'prefix']"),
        ("/api/claude/procs", {"action": "clean", "x": 1, "a": 2},
         "['action', 'folder', 'job', 'pid', 'session', 'started_at']"),
    ],
)  # fmt: skip
def test_an_unknown_body_field(
    client: TestClient, url: str, body: dict[str, Any], allowed: str
) -> None:
    unknown = ", ".join(sorted(set(body) - set(ast.literal_eval(allowed))))
    expected = f"unknown field(s) {unknown}; allowed: {allowed}"
    assert _refused(client.post(url, json=body)) == expected


@pytest.mark.parametrize(
    ("url", "name"),
    [("/api/processes?project=rel/ative", "project"), ("/api/board?project=rel", "project"),
     ("/api/board", "project"), ("/api/claude/band?folder=rel", "folder"),
     ("/api/claude/band", "folder"), ("/api/claude/procs?folder=", "folder"),
     ("/api/claude/briefing?folder=rel", "folder")],
)  # fmt: skip
def test_a_query_parameter_that_must_be_an_absolute_path(
    client: TestClient, url: str, name: str
) -> None:
    assert _refused(client.get(url)) == f"query parameter {name} must be an absolute path"


def test_a_flag(client: TestClient) -> None:
    for name in ("orphaned", "all_projects"):
        refused = _refused(client.get(f"/api/processes?{name}=maybe"))
        assert refused == f"query parameter {name} must be true or false"
    refused = _refused(client.get("/api/board?project=/&quick=yes"))
    assert refused == "query parameter quick must be true or false"


@pytest.mark.parametrize(
    "url", ["/api/processes/terminate", "/api/admit", "/api/claude/session-end",
            "/api/claude/procs"],
)  # fmt: skip
def test_a_body_too_large_not_json_or_not_an_object(client: TestClient, url: str) -> None:
    huge = b"[" + b"1," * 40000 + b"1]"
    assert _refused(client.post(url, content=huge), 413) == (
        "request body too large: at most 65536 bytes"
    )
    assert _refused(client.post(url, content=b"{not json")).startswith("body is not JSON: ")
    assert _refused(client.post(url, content=b"[1]")) == "body must be a JSON object"
    deep = b"[" * 30000 + b"]" * 30000
    assert _refused(client.post(url, content=deep)) == "body is JSON nested too deeply"


def test_each_check_has_one_home() -> None:
    """The words of each check are written once, in http_checks.py; http and http_claude
    import it (not each other: http imports http_claude's routes)."""
    words = ("unknown query parameter(s)", "unknown field(s)", "} must be an absolute path",
             "} must be true or false", "request body too large", "must be a JSON object",
             "nested too deeply")  # fmt: skip
    for text in words:
        homes = [p.name for p in SURFACES.glob("*.py") if text in p.read_text()]
        assert homes == ["http_checks.py"], (text, homes)
    for module in ("http.py", "http_claude.py"):
        tree = ast.parse((SURFACES / module).read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "corral.surfaces.http_checks" in imported or any(
            isinstance(n, ast.ImportFrom)
            and n.module == "corral.surfaces"
            and any(a.name == "http_checks" for a in n.names)
            for n in ast.walk(tree)
        ), module
