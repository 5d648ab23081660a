"""The daemon on loopback TCP under a local flood: partial requests are cut off, a cap keeps its
descriptors for the Unix socket's clients, the token is checked before any body is read, its log
stays short, and a bad or busy port is one clear line. Real sockets on 127.0.0.1, bounded loops."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from corral.surfaces import guard
from tests.helpers import alive, corral, free_port, wait_for


def _ensure(*extra: str) -> int:
    out = corral("daemon", "--ensure", *extra, check=True)
    return int(out.stdout.split("pid ")[1].split(",")[0])


@pytest.fixture
def tcp_daemon(corral_home: Path) -> Iterator[tuple[int, int]]:
    port = free_port()
    pid = _ensure("--tcp", f"127.0.0.1:{port}")
    yield pid, port
    try:
        os.kill(pid, 15)
    except ProcessLookupError:
        return
    wait_for(lambda: not alive(pid), what="daemon gone")


def _unix_health(home: Path) -> int:
    transport = httpx.HTTPTransport(uds=str(home / "corral.sock"))
    with httpx.Client(transport=transport, base_url="http://corral", timeout=20) as c:
        return c.get("/api/health").status_code


def _sockets_of(pid: int) -> int:
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            count += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            continue
    return count


def _partial(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n")  # the headers never end
    return s


def _closed_by_server(s: socket.socket) -> bool:
    try:
        return s.recv(4096) == b""
    except ConnectionResetError:
        return True


def test_a_flood_of_partial_requests_is_capped_cut_off_and_unix_clients_are_served(
    corral_home: Path, tcp_daemon: tuple[int, int]
) -> None:
    pid, port = tcp_daemon
    before = _sockets_of(pid)
    flood = []
    try:
        for _ in range(300):
            try:
                flood.append(_partial(port))
            except OSError:
                break  # refused at once: the cap at work
        # the Unix socket's clients are served while the flood holds its connections
        assert _unix_health(corral_home) == 200
        # past the cap, connections are closed at once: the daemon holds at most the cap
        assert _sockets_of(pid) <= before + guard.TCP_CONNECTIONS + 2
        # and those within the cap are cut off once the header timeout passes
        for s in flood:
            s.settimeout(guard.HEADER_TIMEOUT * 6)
            assert _closed_by_server(s)
    finally:
        for s in flood:
            s.close()
    assert _unix_health(corral_home) == 200
    # its log holds a few lines, not one per connection
    log = (corral_home / "daemon.log").read_text(errors="replace").splitlines()
    assert len(log) <= 2 * guard.LOG_BURST, log[-5:]


def test_a_trickled_header_is_cut_off_however_it_keeps_sending(
    tcp_daemon: tuple[int, int],
) -> None:
    _, port = tcp_daemon
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"GET /api/health HTTP/1.1\r\n")
        started = time.monotonic()
        closed = False
        # one byte every half second for up to six header timeouts: it must be cut off
        while time.monotonic() - started < guard.HEADER_TIMEOUT * 6:
            try:
                s.sendall(b"X")
            except OSError:
                closed = True
                break
            s.settimeout(0.5)
            try:
                if s.recv(4096) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
            except ConnectionResetError:
                closed = True
                break
        assert closed


def test_the_token_is_checked_before_the_body_is_read(
    corral_home: Path, tcp_daemon: tuple[int, int]
) -> None:
    _, port = tcp_daemon
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        # a body announced but never sent: without the token the answer comes at once
        s.sendall(
            b"POST /api/processes/terminate HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n"
        )
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = s.recv(4096)
            assert chunk, answer
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 401")
        assert b"connection: close" in answer.lower()
        s.settimeout(10)
        while chunk := s.recv(4096):  # and the connection is closed, not kept for the body
            answer += chunk


def test_deeply_nested_json_gets_a_400_envelope(corral_home: Path) -> None:
    pid = _ensure()
    try:
        transport = httpx.HTTPTransport(uds=str(corral_home / "corral.sock"))
        with httpx.Client(transport=transport, base_url="http://corral", timeout=20) as c:
            for body in (b"[" * 50000, b'{"targets": ' + b"[" * 30000 + b"]" * 30000 + b"}"):
                response = c.post("/api/processes/terminate", content=body)
                assert response.status_code == 400, response.text
                got = response.json()
                assert got["schema"] == 1 and got["data"] is None
                assert "nested" in got["errors"][0]
            assert c.get("/api/health").status_code == 200
    finally:
        os.kill(pid, 15)
        wait_for(lambda: not alive(pid), what="daemon gone")


@pytest.mark.parametrize("value", ["127.0.0.1:99999", "127.0.0.1:0", "127.0.0.1:", "[::1]:70000"])
def test_a_bad_tcp_port_is_one_usage_line(corral_home: Path, value: str) -> None:
    for extra in ((), ("--ensure",)):
        result = corral("daemon", *extra, "--tcp", value)
        assert result.returncode == 2, result
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
        assert "--tcp" in result.stderr and "1-65535" in result.stderr
    assert not (corral_home / "corral.sock").exists()


def test_a_busy_tcp_port_is_one_clear_line_and_leaves_no_socket_file(corral_home: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = corral("daemon", "--tcp", f"127.0.0.1:{port}")
        assert result.returncode == 1, result
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
        assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
        assert "in use" in result.stderr
        leftovers = {"corral.sock", "daemon.events"} & set(os.listdir(corral_home))
        assert not leftovers
        ensured = corral("daemon", "--ensure", "--tcp", f"127.0.0.1:{port}")
        assert ensured.returncode == 1 and "Traceback" not in ensured.stderr
        assert f"cannot listen on 127.0.0.1:{port}" in ensured.stderr
        assert not {"corral.sock", "daemon.events"} & set(os.listdir(corral_home))
    # the lock was released: a daemon starts on the same home now
    pid = _ensure()
    os.kill(pid, 15)
    wait_for(lambda: not alive(pid), what="daemon gone")
