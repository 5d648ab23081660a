"""Waiting until a job just started is ready, or has failed: `corral run -d --ready SPEC`.

SPEC: `port` (any TCP port the job's processes listen on), `port:N`, `http://…` (an answer of
2xx or 3xx), `log:REGEX` (a line of its log matches), or `none` (the job did not exit at once).
Events are watched, not slept on: the supervisor's exit through a pidfd, the log through
inotify, and listening sockets through one socket dump plus the job's own fd folders every
few milliseconds (the kernel has no event for "a process started listening").
"""

from __future__ import annotations

import os
import re
import select
import time
from dataclasses import dataclass, field
from typing import Any

from corral.errors import UsageError

DEFAULT_TIMEOUT = 30.0
QUICK_EXIT_CHECK = 0.5  # `none`: how long a job must survive to count as started
TAIL_LINES = 20
_PORT_STEP = 0.01  # seconds between socket dumps while waiting for a port
_HTTP_STEP = 0.02


@dataclass(frozen=True)
class ReadySpec:
    kind: str  # "port", "http", "log" or "none"
    port: int | None = None
    url: str | None = None
    pattern: str | None = None

    def __str__(self) -> str:
        if self.kind == "port":
            return f"port:{self.port}" if self.port is not None else "port"
        if self.kind == "http":
            return str(self.url)
        if self.kind == "log":
            return f"log:{self.pattern}"
        return "none"


def parse_spec(text: str) -> ReadySpec:
    """A readiness SPEC as `--ready` takes it; UsageError names the accepted forms."""
    text = text.strip()
    if text in ("port", "none"):
        return ReadySpec(text)
    if text.startswith("port:"):
        digits = text[5:]
        if digits.isascii() and digits.isdigit() and 0 < int(digits) < 65536:
            return ReadySpec("port", port=int(digits))
    elif text.startswith(("http://", "https://")) and len(text) > 8:
        return ReadySpec("http", url=text)
    elif text.startswith("log:") and len(text) > 4:
        try:
            re.compile(text[4:])
        except re.error as exc:
            raise UsageError(f"--ready log:REGEX: the regex does not compile: {exc}") from None
        return ReadySpec("log", pattern=text[4:])
    raise UsageError(f"--ready takes port, port:N, http://..., log:REGEX or none, not {text!r}")


@dataclass(frozen=True)
class Readiness:
    """How the wait ended. `ready` False: `reason` says why (exited / timed out) and `tail`
    holds the last lines of the job's log, as the job wrote them."""

    ready: bool
    spec: str
    seconds: float
    url: str | None = None
    port: int | None = None
    reason: str | None = None
    exit_code: int | None = None
    ended: bool = False
    tail: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "ready": self.ready,
            "spec": self.spec,
            "seconds": round(self.seconds, 3),
            "url": self.url,
            "port": self.port,
            "reason": self.reason,
            "exit_code": self.exit_code,
            "ended": self.ended,
            "tail": list(self.tail),
        }


def tail_lines(path: str | None, count: int = TAIL_LINES) -> list[str]:
    """The last `count` lines of a log file ([] when there is none)."""
    if not path or count <= 0:
        return []
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - 64 * 1024))
            data = f.read()
    except OSError:
        return []
    lines = data.decode("utf-8", "replace").splitlines()
    if size > len(data) and lines:
        lines = lines[1:]  # the first one is cut
    return lines[-count:]


def job_processes(root: int) -> list[int]:
    """The supervisor's descendants: the kernel's children lists where it keeps them (no
    full /proc walk), else one process table (lowlevel.procfs, the one /proc reader)."""
    from corral.lowlevel import procfs

    return procfs.descendants(root)


def listening_ports(root: int) -> list[int]:
    """TCP ports the processes under supervisor `root` listen on, lowest first."""
    from corral.lowlevel import sockets

    pids = job_processes(root)
    if not pids:
        return []
    tcp = {inode: s for inode, s in sockets.listening().items() if s.proto == "tcp"}
    if not tcp:
        return []
    held = sockets.owners(tcp.keys(), pids)
    return sorted({tcp[inode].port for inode in held})


def _http_ok(url: str, timeout: float) -> bool:
    import http.client
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    conn_type = (
        http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    )
    conn = conn_type(parts.hostname or "localhost", parts.port, timeout=max(timeout, 0.05))
    try:
        conn.request("GET", (parts.path or "/") + (f"?{parts.query}" if parts.query else ""))
        status = conn.getresponse().status
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()
    return 200 <= status < 400


def _ended(job_id: str) -> tuple[int | None, str]:
    """The job's recorded end: its exit code and the reason as a person reads it."""
    from corral.adapters import ledger

    record = next((r for r in ledger.read_all().records if r.id == job_id), None)
    if record is None or not record.final:
        return None, "its supervisor ended without recording the job's end"
    if record.signal:
        return record.exit_code, f"killed by signal {record.signal}"
    return record.exit_code, f"exited with code {record.exit_code}"


def wait_ready(
    job_id: str,
    spec: ReadySpec,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    log: str | None = None,
) -> Readiness:
    """Wait until job `job_id` (just started) is ready by `spec`, has ended, or `timeout`
    seconds pass. `none` waits QUICK_EXIT_CHECK seconds only: a job that ends in that time
    with code 0 is ready (it did its work); any other end is a failure."""
    from corral.adapters import ledger, procs
    from corral.adapters.filewatch import FALLBACK_STEP, FileWatch
    from corral.adapters.identity import ProcessIdentity

    began = time.monotonic()
    record = next((r for r in ledger.read_all().records if r.id == job_id), None)
    handle = None
    if record is not None and record.started_at is not None and not record.final:
        handle = procs.open_verified(ProcessIdentity(record.pid, record.started_at))
    watch = FileWatch(log) if spec.kind == "log" and log else None
    pattern = re.compile(spec.pattern or "") if spec.kind == "log" else None
    log_seen = 0
    limit = min(timeout, QUICK_EXIT_CHECK) if spec.kind == "none" else timeout
    poller = select.poll()
    if handle is not None and handle.fd is not None:
        poller.register(handle.fd, select.POLLIN)
    if watch is not None and watch.fileno() is not None:
        poller.register(watch.fileno() or 0, select.POLLIN)

    def result(ready: bool, **kw: Any) -> Readiness:
        return Readiness(ready, str(spec), time.monotonic() - began, **kw)

    try:
        while True:
            if handle is None or procs.has_exited(handle):
                code, why = _ended(job_id)
                if spec.kind == "none" and code == 0:
                    return result(True, exit_code=0, ended=True)
                return result(False, reason=why, exit_code=code, ended=True, tail=tail_lines(log))
            if spec.kind == "port" and record is not None:
                ports = listening_ports(record.pid)
                if spec.port is not None:
                    ports = [p for p in ports if p == spec.port]
                if ports:
                    return result(True, port=ports[0], url=f"http://localhost:{ports[0]}")
            elif spec.kind == "http" and spec.url:
                remaining = limit - (time.monotonic() - began)
                if _http_ok(spec.url, min(1.0, remaining)):
                    return result(True, url=spec.url)
            elif pattern is not None and log:
                if watch is not None:
                    watch.drain()
                found, log_seen = _grep_new(log, pattern, log_seen)
                if found:
                    return result(True)
            remaining = limit - (time.monotonic() - began)
            if remaining <= 0:
                if spec.kind == "none":
                    return result(True)
                return result(False, reason=f"not ready after {timeout:g} s", tail=tail_lines(log))
            step = {"port": _PORT_STEP, "http": _HTTP_STEP}.get(spec.kind)
            if spec.kind == "log" and (watch is None or watch.fileno() is None):
                step = FALLBACK_STEP
            wait = remaining if step is None else min(step, remaining)
            poller.poll(max(1, int(wait * 1000)))
    finally:
        if watch is not None:
            watch.close()
        if handle is not None:
            handle.close()


def _grep_new(path: str, pattern: re.Pattern[str], seen: int) -> tuple[bool, int]:
    """Whether a whole line written since byte `seen` matches; the new `seen`."""
    try:
        with open(path, "rb") as f:
            if f.seek(0, os.SEEK_END) < seen:
                seen = 0  # trimmed meanwhile
            f.seek(seen)
            data = f.read()
    except OSError:
        return False, seen
    cut = data.rfind(b"\n") + 1
    for line in data[:cut].decode("utf-8", "replace").splitlines():
        if pattern.search(line):
            return True, seen + cut
    return False, seen + cut
