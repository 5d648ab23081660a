"""Running the HTTP API: one daemon per CORRAL_HOME (a lock file says which), on a Unix socket
of mode 0600, optionally also on loopback TCP behind a bearer token from a 0600 file."""

from __future__ import annotations

import fcntl
import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from corral import paths
from corral.errors import CorralError, UsageError
from corral.lowlevel.record import SESSION_VARIABLES

MARKERS = ("CORRAL_JOB", *SESSION_VARIABLES, "CLAUDE_PID")


def socket_path() -> Path:
    return paths.home() / "corral.sock"


def token_path() -> Path:
    return paths.home() / "daemon.token"


def _lock_path() -> Path:
    return paths.home() / "daemon.lock"


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(str(self.path))
        except OSError:
            sock.close()
            raise
        self.sock = sock


def health(timeout: float = 2.0) -> dict[str, Any] | None:
    """The running daemon's health answer, or None when none answers on the socket."""
    answer = get("/api/health", timeout)
    return answer[0] if answer is not None else None


def get(path: str, timeout: float = 5.0) -> tuple[Any, list[str]] | None:
    """The data and errors of the daemon's answer to `GET path` (a 200), or None when none
    answers on the socket (or answers something else)."""
    answer = get_unless(path, None, timeout)
    return None if answer is None else (answer[0], answer[1])


def get_unless(
    path: str, etag: str | None, timeout: float = 5.0
) -> tuple[Any, list[str], str | None] | None:
    """`get` with the ETag of what the caller has: (None, [], etag) when the daemon answers
    that it is unchanged (304), else the data, errors and ETag of its answer (a 200); None
    when none answers on the socket (or answers something else)."""
    conn = _UnixConnection(socket_path(), timeout)
    try:
        conn.request("GET", path, headers={"If-None-Match": etag} if etag else {})
        answer = conn.getresponse()
        body = answer.read()
        if answer.status == 304 and etag:
            return None, [], etag
        if answer.status != 200:
            return None
        doc = json.loads(body)
        return doc["data"], list(doc["errors"]), answer.getheader("ETag")
    except (OSError, ValueError, KeyError, TypeError, http.client.HTTPException):
        return None
    finally:
        conn.close()


def parse_tcp(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    host = host.strip("[]")
    if (
        host not in ("127.0.0.1", "::1", "localhost")
        or not port.isdigit()
        or not 0 < int(port) < 65536
    ):
        raise UsageError(
            "--tcp takes a loopback address and a port 1-65535: 127.0.0.1:PORT or [::1]:PORT"
        )
    return host, int(port)


def _bind_tcp(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        shown = f"[{host}]" if ":" in host else host
        raise CorralError(
            f"cannot listen on {shown}:{port}: {exc.strerror or exc} (choose another port)"
        ) from None
    return sock


def read_token(create: bool) -> str:
    """The bearer token for TCP clients, from a 0600 file (created when asked)."""
    path = token_path()
    if create and not path.exists():
        paths.ensure_private_dir(path.parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(32) + "\n")
    mode = path.stat().st_mode & 0o777
    if mode != 0o600:
        raise CorralError(f"{path} has mode {mode:o}; make it 0600 (chmod 600 {path})")
    return path.read_text().strip()


def _bind_unix(path: Path) -> socket.socket:
    try:
        path.unlink()  # we hold the lock: a socket file here is a dead daemon's
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        size = len(os.fsencode(path))
        hint = ""
        if size > 100:  # sun_path holds 104 (macOS) or 108 (Linux) bytes
            hint = f" (its path is {size} bytes long: set CORRAL_HOME to a shorter folder)"
        raise CorralError(f"cannot listen on {path}: {exc.strerror or exc}{hint}") from exc
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(128)
    return sock


def serve(tcp: str | None = None) -> int:
    """Serve in the foreground until SIGTERM/SIGINT. Returns 0 if another daemon already runs."""
    import asyncio

    import uvicorn

    from corral.service import activity
    from corral.surfaces import guard
    from corral.surfaces.http import create_app

    paths.ensure_private_dir(paths.home())
    lock = os.open(_lock_path(), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock)
        sys.stderr.write("corral daemon: already running for this CORRAL_HOME\n")
        return 0
    sockets: list[socket.socket] = []
    events = None
    try:
        token = None
        if tcp is not None:  # first: a port that is taken leaves no socket file behind
            host, port = parse_tcp(tcp)
            token = read_token(create=True)
            sockets.append(_bind_tcp(host, port))
        sockets.insert(0, _bind_unix(socket_path()))
        events = activity.tool_call_events()  # the hooks' reports of tool calls in flight
        guard.configure_logging()
        app = create_app(token=token, socket_path=socket_path(), events=events)
        config = uvicorn.Config(
            app,
            http=guard.protocol_class(),
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_keep_alive=guard.KEEP_ALIVE,
        )
        server = _quiet_server_class()(config)
        asyncio.run(server.serve(sockets=sockets))
    finally:
        if events is not None:
            events.close()
        for sock in sockets:
            if sock.family == socket.AF_UNIX:
                try:
                    socket_path().unlink()
                except FileNotFoundError:
                    pass
            sock.close()
        os.close(lock)
    for sig in reversed(server.signals):  # end as the signal would have ended us
        signal.raise_signal(sig)
    return 0


def ensure(tcp: str | None = None, timeout: float = 15.0) -> dict[str, Any]:
    """Start the daemon unless one answers; idempotent. Returns its health answer."""
    found = health()
    if found is not None:
        return found
    paths.ensure_private_dir(paths.home())
    argv = [sys.executable, "-m", "corral", "daemon"]
    if tcp is not None:
        argv += ["--tcp", tcp]
    # The daemon belongs to no session: it must never be listed as one's process.
    env = {k: v for k, v in os.environ.items() if k not in MARKERS}
    log = os.open(paths.home() / "daemon.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        child = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=env,
            start_new_session=True,
            cwd="/",
        )
    finally:
        os.close(log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = health()
        if found is not None:
            return found
        if child.poll() not in (None, 0):  # 0: another daemon holds the lock; it will answer
            raise CorralError(f"the daemon could not start: {_last_error()}")
        time.sleep(0.05)
    raise CorralError(f"the daemon did not answer within {timeout:g} s: see {log_name()}")


def _last_error() -> str:
    """The daemon's last words in its log (where its stderr goes)."""
    try:
        lines = log_name().read_text(errors="replace").strip().splitlines()
    except OSError:
        lines = []
    last = lines[-1].strip() if lines else ""
    return f"{last} (see {log_name()})" if last else f"see {log_name()}"


def log_name() -> Path:
    return paths.home() / "daemon.log"


def _quiet_server_class() -> type:
    import asyncio
    import contextlib
    import threading
    from collections.abc import Iterator

    import uvicorn

    class QuietServer(uvicorn.Server):
        """uvicorn wakes ten times a second to check for exit; once a second is plenty. And
        it re-raises SIGTERM/SIGINT as it returns, which would end the process before its
        socket files are removed: here the caller re-raises them (`signals`) afterwards."""

        signals: tuple[int, ...] = ()

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            handled = (signal.SIGINT, signal.SIGTERM)
            original = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
            try:
                yield
            finally:
                for sig, handler in original.items():
                    signal.signal(sig, handler)
                self.signals = tuple(self._captured_signals)

        async def main_loop(self) -> None:
            counter = 0
            should_exit = await self.on_tick(counter)
            while not should_exit:
                counter = (counter + 10) % 864000
                await asyncio.sleep(1.0)
                should_exit = await self.on_tick(counter)

    return QuietServer
