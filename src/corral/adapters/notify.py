"""Tool calls reported to a running daemon: the hooks' one-datagram messages and the daemon's
end of the socket. The one chokepoint for that socket.

The sending half runs on the hook's fast path (`python -I -S`, a budget of a few ms): at
import this module loads nothing, and `tool_call` loads only the C module `_socket` — no
`socket`, `os`, `json` or `enum` — and that only when the daemon's socket file exists. The
receiving half imports what it needs when called.

Contract (version 1):
- Socket: a Unix datagram socket `<corral home>/daemon.events` (mode 0600), bound by the
  daemon while it runs, removed when it exits, replaced when a new daemon starts.
- Datagram: UTF-8 text, four fields joined by "\\n": `corral-tool-call/1`, the phase
  (`start` or `end`), the session id, the tool-use id. Each id is 1 to 256 bytes with no
  "\\n" and no NUL. Anything else is not a datagram of this version and is ignored.
"""

EVENTS_NAME = "daemon.events"
MAGIC = b"corral-tool-call/1"
PHASES = ("start", "end")
MAX_ID = 256  # bytes of a session id or a tool-use id
MAX_DATAGRAM = len(MAGIC) + 3 + len("start") + 2 * MAX_ID

EXPIRY = 600.0  # a call that started and never ended stops counting after this many seconds
MAX_IN_FLIGHT = 1024  # the oldest calls are dropped beyond this many
_S_IFMT, _S_IFSOCK = 0o170000, 0o140000  # stat's file type bits, and a socket's


def encode(phase: str, session_id: str, tool_use_id: str) -> bytes | None:
    """The datagram for one report, or None when the values cannot be sent as one."""
    if phase not in PHASES:
        return None
    session, call = session_id.encode("utf-8"), tool_use_id.encode("utf-8")
    for value in (session, call):
        if not 0 < len(value) <= MAX_ID or b"\n" in value or b"\0" in value:
            return None
    return b"\n".join((MAGIC, phase.encode("ascii"), session, call))


def parse(data: bytes) -> tuple[str, str, str] | None:
    """(phase, session id, tool-use id) from a datagram; None for anything malformed."""
    if len(data) > MAX_DATAGRAM or b"\0" in data:
        return None
    fields = data.split(b"\n")
    if len(fields) != 4 or fields[0] != MAGIC:
        return None
    _, phase, session, call = fields
    if phase not in (b"start", b"end"):
        return None
    if not (0 < len(session) <= MAX_ID and 0 < len(call) <= MAX_ID):
        return None
    try:
        return phase.decode("ascii"), session.decode("utf-8"), call.decode("utf-8")
    except UnicodeDecodeError:
        return None


def tool_call(home: str, phase: str, session_id: str, tool_use_id: str) -> None:
    """Tell the daemon of corral home `home` that a tool call started (`phase` "start") or
    ended ("end"). Sends one non-blocking datagram to `<home>/daemon.events` and returns: a
    no-op when no daemon listens (no socket file), when its queue is full, or when the values
    cannot be sent (see the module's contract). Never raises, never waits; loads `_socket`
    only, and only when the socket file is there (one `posix.stat` says)."""
    try:
        data = encode(phase, session_id, tool_use_id)
        if data is None:
            return
        import posix  # built in, loaded by every Python process before any import

        path = home.rstrip("/") + "/" + EVENTS_NAME
        if posix.stat(path).st_mode & _S_IFMT != _S_IFSOCK:
            return  # no daemon bound it: nothing to load, nothing to send
        import _socket

        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_DGRAM)
        try:
            sock.setblocking(False)
            sock.sendto(data, path)
        finally:
            sock.close()
    except Exception:  # noqa: BLE001, S110 - a report that cannot be sent is dropped
        pass


# -- the daemon's end -------------------------------------------------------------------------


class Events:
    """The daemon's datagram socket: bound at `<home>/daemon.events` with mode 0600 (a stale
    file there is replaced: the caller holds the daemon's lock), non-blocking."""

    def __init__(self, home: str) -> None:
        import os
        import socket

        self.path = os.path.join(home, EVENTS_NAME)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        old = os.umask(0o177)
        try:
            self.sock.bind(self.path)
        except OSError:
            self.sock.close()
            raise
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        self.sock.setblocking(False)
        self._inode = os.stat(self.path).st_ino
        self.received = 0  # well-formed reports
        self.ignored = 0  # datagrams that were not

    def fileno(self) -> int:
        return self.sock.fileno()

    def receive(self) -> list[tuple[str, str, str]]:
        """Every report waiting on the socket; malformed datagrams are counted and dropped."""
        found: list[tuple[str, str, str]] = []
        while True:
            try:
                data = self.sock.recv(MAX_DATAGRAM + 1)
            except OSError:  # nothing more waiting (BlockingIOError), or the socket is closed
                return found
            report = parse(data)
            if report is None:
                self.ignored += 1
            else:
                self.received += 1
                found.append(report)

    def close(self) -> None:
        """Close the socket and remove its file (unless another daemon's replaced it)."""
        import os

        self.sock.close()
        try:
            if os.stat(self.path).st_ino == self._inode:
                os.unlink(self.path)
        except OSError:
            pass


class InFlight:
    """Tool calls that started and have not ended, by (session id, tool-use id). A start
    with no end stops counting after `expiry` seconds; past `limit` calls the oldest go."""

    def __init__(self, expiry: float = EXPIRY, limit: int = MAX_IN_FLIGHT) -> None:
        self.expiry = expiry
        self.limit = limit
        self._started: dict[tuple[str, str], float] = {}  # oldest first

    def note(self, phase: str, session_id: str, tool_use_id: str, now: float) -> None:
        key = (session_id, tool_use_id)
        self._started.pop(key, None)
        if phase == "start":
            self._started[key] = now
            while len(self._started) > self.limit:
                del self._started[next(iter(self._started))]

    def count(self, now: float) -> int:
        """Calls in flight at `now` (expired ones are dropped)."""
        while self._started:
            key = next(iter(self._started))
            if now - self._started[key] < self.expiry:
                break
            del self._started[key]
        return len(self._started)
