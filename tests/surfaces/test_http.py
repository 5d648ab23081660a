"""The daemon over a real Unix socket (and loopback TCP): every route, every bad request,
a SIGKILLed daemon restarted, and nothing changed by a refused request."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from corral.adapters.identity import identity_of
from corral.store import db
from tests.helpers import alive, corral, execed, free_port, start_job, wait_for

# A session's processes are found by their marker machine-wide (listing and "terminate all"
# alike): ids unique to this run, so that two suites side by side never see or stop each
# other's marked processes.
SESSION = f"h-{uuid.uuid4().hex[:8]}"


def _ensure(*extra: str) -> int:
    out = corral("daemon", "--ensure", *extra, check=True)
    return int(out.stdout.split("pid ")[1].split(",")[0])


def _kill(pid: int, sig: int = signal.SIGTERM) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
    wait_for(lambda: not alive(pid), 30, "daemon gone")


@pytest.fixture
def daemon(corral_home: Path) -> Iterator[int]:
    pid = _ensure()
    yield pid
    _kill(pid)


@pytest.fixture
def client(corral_home: Path, daemon: int) -> Iterator[httpx.Client]:
    transport = httpx.HTTPTransport(uds=str(corral_home / "corral.sock"))
    with httpx.Client(transport=transport, base_url="http://corral", timeout=30) as c:
        yield c


@pytest.fixture
def marked() -> Iterator[subprocess.Popen[bytes]]:
    proc = _session_sleep()
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def _session_sleep() -> subprocess.Popen[bytes]:
    """A `sleep 300` of SESSION, once it is one: the child has an identity at once, but its
    environment, with CORRAL_SESSION, only once its exec is done."""
    proc = subprocess.Popen(["sleep", "300"], env={**os.environ, "CORRAL_SESSION": SESSION})
    wait_for(lambda: execed(proc), what="start")
    return proc


def data(response: httpx.Response, status: int = 200) -> Any:
    body = response.json()
    assert response.status_code == status, body
    assert set(body) == {"schema", "data", "errors"} and body["schema"] == 1
    return body["data"]


def test_health_socket_mode_and_ensure_is_idempotent(
    corral_home: Path, daemon: int, client: httpx.Client
) -> None:
    sock = corral_home / "corral.sock"
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    health = data(client.get("/api/health"))
    assert health["status"] == "ok" and health["pid"] == daemon
    assert _ensure() == daemon
    assert corral("daemon").returncode == 0  # a second foreground daemon steps aside


def test_session_processes_lists_jobs_and_unsupervised_processes_with_attribution(
    client: httpx.Client, marked: subprocess.Popen[bytes]
) -> None:
    job = start_job("sleep 300", "--session", SESSION)
    got = data(client.get(f"/api/sessions/{SESSION}/processes"))
    assert [(j["id"], j["attribution"]) for j in got["jobs"]] == [(job["id"], "supervised")]
    rows = {(p["pid"], p["attribution"]) for p in got["processes"]}
    assert (marked.pid, "env") in rows and (job["pid"], "supervised") in rows
    corral("stop", job["id"], check=True)


def test_session_processes_lists_env_rows_without_environments(
    client: httpx.Client, marked: subprocess.Popen[bytes]
) -> None:
    got = data(client.get(f"/api/sessions/{SESSION}/processes"))
    assert got["session"] == SESSION
    assert [(p["pid"], p["attribution"]) for p in got["processes"]] == [(marked.pid, "env")]
    text = json.dumps(got)
    assert "CORRAL_HOME" not in text and "PATH=" not in text and "environ" not in text
    assert data(client.get("/api/sessions/nobody/processes"))["processes"] == []


def test_session_terminate_by_targets_and_by_all(
    client: httpx.Client, marked: subprocess.Popen[bytes]
) -> None:
    twin = subprocess.Popen(["sleep", "300"])
    try:
        me = identity_of(marked.pid)
        assert me is not None
        body = {"targets": [{"pid": me.pid, "started_at": me.started_at}]}
        got = data(client.post(f"/api/sessions/{SESSION}/processes/terminate", json=body))
        assert got["ok"] and got["targets"][0]["result"] == "terminated"
        marked.wait(30)
        again = _session_sleep()
        try:
            got = data(
                client.post(f"/api/sessions/{SESSION}/processes/terminate", json={"all": True})
            )
            assert [t["pid"] for t in got["targets"]] == [again.pid]
            again.wait(30)
        finally:
            if again.poll() is None:
                again.kill()
            again.wait()
        assert alive(twin.pid)
        events = db.audit_events()
        assert len(events) == 2 and {e.surface for e in events} == {"http"}
    finally:
        twin.kill()
        twin.wait()


def test_processes_orphaned_and_global_terminate(client: httpx.Client) -> None:
    token = uuid.uuid4().hex
    orphan = subprocess.Popen(["sleep", "300"], env={**os.environ, "CORRAL_JOB": token})
    try:
        # the environment that makes it an orphan is there only once its exec is done
        ident = wait_for(lambda: execed(orphan) and identity_of(orphan.pid), what="exec")
        got = data(
            client.get("/api/processes", params={"orphaned": "true", "all_projects": "true"})
        )
        assert orphan.pid in [p["pid"] for p in got["processes"]]
        assert isinstance(got["other_listeners"], list)
        target = {"pid": ident.pid, "started_at": ident.started_at}
        got = data(client.post("/api/processes/terminate", json={"targets": [target]}))
        assert got["targets"][0]["result"] == "terminated"
        orphan.wait(30)
        stale = {"pid": ident.pid, "started_at": ident.started_at + "0"}
        got = data(client.post("/api/processes/terminate", json={"targets": [stale]}))
        assert got["targets"][0]["result"] in ("already_exited", "identity_mismatch")
    finally:
        if orphan.poll() is None:
            orphan.kill()
        orphan.wait()


BAD_SESSION_BODIES = [
    {"all": True, "targets": [{"pid": 1, "started_at": "x"}]},
    {},
    {"all": False},
    {"all": 1},
    {"all": True, "force": True},
    {"targets": "everything"},
    {"targets": []},
    {"targets": [{"pid": "1", "started_at": "x"}]},
    {"targets": [{"pid": True, "started_at": "x"}]},
    {"targets": [{"pid": -4, "started_at": "x"}]},
    {"targets": [{"pid": 1, "started_at": 5}]},
    {"targets": [{"pid": 1}]},
    {"targets": [{"pid": 1, "started_at": "x", "signal": 9}]},
    [{"pid": 1, "started_at": "x"}],
]


@pytest.mark.parametrize("body", BAD_SESSION_BODIES)
def test_bad_session_terminate_requests_are_refused_and_change_nothing(
    client: httpx.Client, marked: subprocess.Popen[bytes], body: Any
) -> None:
    response = client.post(f"/api/sessions/{SESSION}/processes/terminate", json=body)
    assert response.status_code == 400
    assert data(response, 400) is None and response.json()["errors"][0]
    assert alive(marked.pid) and not db.audit_events()


def test_other_bad_requests(client: httpx.Client, marked: subprocess.Popen[bytes]) -> None:
    ident = identity_of(marked.pid)
    assert ident is not None
    post = client.post
    cases = [
        (post("/api/processes/terminate", json={"all": True}), 400),
        (
            post(
                "/api/processes/terminate",
                json={"all": True, "targets": [{"pid": ident.pid, "started_at": ident.started_at}]},
            ),
            400,
        ),
        (post("/api/processes/terminate", content=b"{not json"), 400),
        (post("/api/processes/terminate", content=b"[" + b"1," * 40000 + b"1]"), 413),
        (post(f"/api/sessions/{SESSION}/processes/terminate", content=b" " * (70 * 1024)), 413),
        (client.get("/api/processes", params={"orphaned": "maybe"}), 400),
        (client.get("/api/processes", params={"project": "relative/path"}), 400),
        (client.get("/api/processes", params={"env": "true"}), 400),
        (client.get("/api/processes/terminate"), 405),
        (client.delete("/api/health"), 405),
        (client.get("/api/nothing"), 404),
    ]
    for response, status in cases:
        assert response.status_code == status, (response.request.url, response.text)
        assert data(response, status) is None and response.json()["errors"]
    assert alive(marked.pid) and not db.audit_events()


def test_sigkilled_daemon_restarts_with_the_same_rows_and_signals_nothing(
    corral_home: Path, marked: subprocess.Popen[bytes]
) -> None:
    transport = httpx.HTTPTransport(uds=str(corral_home / "corral.sock"))
    first = _ensure()
    with httpx.Client(transport=transport, base_url="http://corral", timeout=30) as c:
        before = data(c.get(f"/api/sessions/{SESSION}/processes"))["processes"]
        _kill(first, signal.SIGKILL)
        second = _ensure()
        assert second != first
        try:
            after = data(c.get(f"/api/sessions/{SESSION}/processes"))["processes"]
        finally:
            _kill(second)
    keys = ("pid", "started_at", "attribution", "session", "job")
    assert [[r[k] for k in keys] for r in before] == [[r[k] for k in keys] for r in after]
    assert alive(marked.pid) and not db.audit_events()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_tcp_needs_the_bearer_token_from_a_0600_file(corral_home: Path) -> None:
    port = _free_port()
    assert corral("daemon", "--tcp", "0.0.0.0:80").returncode == 2  # loopback only
    pid = _ensure("--tcp", f"127.0.0.1:{port}")
    try:
        token_file = corral_home / "daemon.token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = token_file.read_text().strip()
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as c:
            assert c.get("/api/health").status_code == 401
            bad = c.get("/api/health", headers={"Authorization": "Bearer nope"})
            assert bad.status_code == 401
            ok = c.get("/api/health", headers={"Authorization": f"Bearer {token}"})
            assert data(ok)["pid"] == pid
    finally:
        _kill(pid)


def test_a_tool_call_in_flight_keeps_the_snapshot_fresh_without_requests(
    corral_home: Path, daemon: int, client: httpx.Client
) -> None:
    from corral.service import activity

    def health() -> dict[str, Any]:
        found: dict[str, Any] = data(client.get("/api/health"))  # not a list: not a client
        return found

    events = corral_home / "daemon.events"
    assert stat.S_IMODE(events.stat().st_mode) == 0o600
    idle = health()
    assert idle["tool_calls_in_flight"] == 0 and idle["events_socket"] == str(events)
    activity.tool_call(str(corral_home), "start", "s-1", "toolu_1")
    wait_for(lambda: health()["snapshots_taken"] >= idle["snapshots_taken"] + 3, what="refresh")
    busy = health()
    assert busy["tool_calls_in_flight"] == 1 and busy["tool_call_reports"] == 1
    # those refreshes read only what changed since the one before
    assert busy["snapshots_incremental"] >= 2
    activity.tool_call(str(corral_home), "end", "s-1", "toolu_1")
    wait_for(lambda: health()["tool_calls_in_flight"] == 0, what="the end counted")
    settled = health()["snapshots_taken"]
    # Nothing in flight and no client: no more snapshots (at most one that had already
    # started when the end arrived), over a pause that would have held several.
    time.sleep(6 * 0.25)
    assert health()["snapshots_taken"] <= settled + 1
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.sendto(b"not a report", str(events))
    wait_for(lambda: health()["tool_call_reports_ignored"] == 1, what="garbage counted")
    assert health()["tool_calls_in_flight"] == 0


def test_the_activity_service_loads_nothing_on_the_hooks_path(corral_home: Path) -> None:
    # The daemon reaches the tool-call socket through it; the hook imports it on every call.
    src = str(Path(__file__).resolve().parents[2] / "src")
    code = (
        "import sys\n"
        f"sys.path.insert(0, {src!r})\n"
        "before = set(sys.modules)\n"
        "from corral.service import activity\n"
        "print(' '.join(sorted(set(sys.modules) - before)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert set(out) == {"corral", "corral.service", "corral.service.activity"}


def test_the_daemon_removes_its_socket_files_on_sigterm(corral_home: Path) -> None:
    pid = _ensure()
    files = [corral_home / "daemon.events", corral_home / "corral.sock"]
    assert all(f.exists() for f in files)
    _kill(pid)
    assert not any(f.exists() for f in files)


def test_a_home_too_deep_for_a_unix_socket_fails_at_once_with_what_to_do(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True, mode=0o700)  # an existing CORRAL_HOME must be private
    result = corral("daemon", "--ensure", env={**os.environ, "CORRAL_HOME": str(deep)})
    assert result.returncode == 1
    assert "the daemon could not start" in result.stderr
    assert "set CORRAL_HOME to a shorter folder" in result.stderr
    assert "did not answer" not in result.stderr  # not after the 15 s wait


def test_admit_wraps_reserves_and_refuses_a_second_start_with_what_to_reuse(
    client: httpx.Client, tmp_path: Path
) -> None:
    """POST /api/admit: the hook's locked decision (service.admission) for another agent's
    hook or a plugin: the supervised line to run in its place, a reservation that makes a
    concurrent second start lose, and a refusal that names the running job's port."""
    port = free_port()
    line = f"python3 -m http.server {port} --bind 127.0.0.1"
    body = {"line": line, "cwd": str(tmp_path), "background": True}
    first = data(client.post("/api/admit", json=body))
    assert first["action"] == "wrap" and first["mode"] == "task"
    assert first["job_token"] and f"--job {first['job_token']}" in first["rewritten"]
    assert [(j["cwd"], j["port"]) for j in first["jobs"]] == [(str(tmp_path), port)]
    second = data(client.post("/api/admit", json=body))
    assert second["action"] == "refuse" and second["job_token"] is None
    assert second["refusal"].startswith("corral refused:")
    assert first["job_token"][:8] in second["refusal"]
    # without a reservation: only the verdict, nothing held
    other = tmp_path / "other"
    other.mkdir()
    asked = {"line": "npm run dev", "cwd": str(other), "reserve": False}
    for _ in range(2):
        assert data(client.post("/api/admit", json=asked))["action"] == "wrap"
    plain = data(client.post("/api/admit", json={"line": "ls -la", "cwd": str(tmp_path)}))
    assert (plain["action"], plain["rewritten"], plain["job_token"]) == ("untouched", None, None)


def test_admit_refuses_a_job_that_runs_naming_the_port_it_holds(
    client: httpx.Client, tmp_path: Path
) -> None:
    port = free_port()
    line = f"python3 -m http.server {port} --bind 127.0.0.1"
    job = start_job(line, cwd=tmp_path)
    try:
        wait_for(lambda: port in _listening(), 30, "the server's port")
        got = data(client.post("/api/admit", json={"line": line, "cwd": str(tmp_path)}))
        assert got["action"] == "refuse" and f"http://localhost:{port}" in got["refusal"]
        assert job["id"][:8] in got["refusal"]
    finally:
        corral("stop", job["id"], check=True)


def _listening() -> set[int]:
    from corral.lowlevel import sockets

    return {s.port for s in sockets.listening().values()}


@pytest.mark.parametrize(
    "body",
    [{}, {"line": "npm run dev"}, {"line": "npm run dev", "cwd": "relative"},
     {"line": "npm run dev", "cwd": "/nonexistent-corral-folder"},
     {"line": 7, "cwd": "/"}, {"line": "npm run dev", "cwd": "/", "background": "yes"},
     {"line": "npm run dev", "cwd": "/", "reserve": 1},
     {"line": "npm run dev", "cwd": "/", "extra": True}, {"line": "x" * 70000, "cwd": "/"}],
)  # fmt: skip
def test_bad_admit_requests_are_refused_and_reserve_nothing(
    client: httpx.Client, corral_home: Path, body: Any
) -> None:
    response = client.post("/api/admit", json=body)
    assert response.status_code in (400, 413), response.text
    assert response.json()["errors"] and response.json()["data"] is None
    assert not list((corral_home / "reservations").glob("*.json"))
