"""The daemon's guard against its TCP clients: any local user can connect to a loopback port,
token or not, so a TCP connection gets a deadline for its request's headers (however slowly
they trickle in) and for each pause in its body, at most TCP_CONNECTIONS are open at once (more
are closed as they are accepted, so the Unix socket's clients keep their descriptors), and the
log says what happened a few times a minute, not once per connection.

The token itself is checked by the app as soon as a request's headers are complete, before
anything reads its body (`surfaces.http`); a refusal closes the connection.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

log = logging.getLogger("corral.daemon")

TCP_CONNECTIONS = 32  # open TCP connections at once; more are closed as they are accepted
HEADER_TIMEOUT = 5.0  # seconds for a request's headers, from the connection or the last answer
IDLE_TIMEOUT = 10.0  # seconds a request's body may pause
KEEP_ALIVE = 5  # seconds an idle connection is kept between requests (every client)
LOG_BURST = 20  # log records let through per LOG_WINDOW; the rest are counted
LOG_WINDOW = 60.0


class RateLimit(logging.Filter):
    """At most `burst` records per `window` seconds; the first record let through after a
    window with dropped ones says how many were dropped."""

    def __init__(self, burst: int = LOG_BURST, window: float = LOG_WINDOW) -> None:
        super().__init__()
        self.burst = burst
        self.window = window
        self.started = -window
        self.passed = 0
        self.dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        if now - self.started >= self.window:
            self.started, self.passed = now, 0
        self.passed += 1
        if self.passed > self.burst:
            self.dropped += 1
            return False
        if self.dropped:
            record.msg = f"({self.dropped} log lines dropped before this one) {record.getMessage()}"
            record.args = None
            self.dropped = 0
        return True


def configure_logging() -> None:
    """The daemon's log (its stderr): warnings and errors of every logger, rate-limited."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RateLimit())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)


def protocol_class(tcp_connections: int = TCP_CONNECTIONS) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol with the guard on its TCP connections (the ones with a peer
    address; a Unix socket's have none)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    open_tcp: set[object] = set()

    class Guarded(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if self.client is None:
                return
            if len(open_tcp) >= tcp_connections:
                log.warning(
                    "closed a TCP connection from %s:%d: %d are open, the most allowed",
                    *self.client,
                    len(open_tcp),
                )
                transport.abort()
                return
            open_tcp.add(self)
            self._arm(HEADER_TIMEOUT, "no whole request headers")

        def connection_lost(self, exc: Exception | None) -> None:
            open_tcp.discard(self)
            self._disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._follow(new_request=False)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._follow(new_request=True)

        def _follow(self, *, new_request: bool) -> None:
            """Set the deadline for what the connection waits for now."""
            if self.client is None or self.transport.is_closing():
                return
            cycle = self.cycle
            if cycle is None or cycle.response_complete:  # waiting for a request's headers
                if new_request or self._deadline is None:
                    self._arm(HEADER_TIMEOUT, "no whole request headers")
            elif cycle.more_body:
                self._arm(IDLE_TIMEOUT, "its request body stopped")
            else:
                self._disarm()  # a whole request: the app answers it, however long it takes

        def _arm(self, seconds: float, why: str) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(seconds, self._expire, seconds, why)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self, seconds: float, why: str) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                client: Any = self.client or ("?", 0)
                log.warning("closed a TCP connection from %s:%d: %s in %g s", *client, why, seconds)
                self.transport.abort()

    return Guarded
