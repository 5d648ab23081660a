"""The HTTP API of `corral daemon`: a Starlette app over the service API, no logic of its own.

Every response is the versioned envelope. Requests are checked strictly (unknown fields, wrong
types, both `all` and `targets`, huge bodies): a bad one gets a 4xx and changes nothing.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import time
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from corral.core.envelope import envelope
from corral.core.shell.plan import LINE_LIMIT, explain_json, too_long
from corral.service import activity, admission, board, claude, jobs, sessions
from corral.surfaces import http_claude
from corral.surfaces.http_checks import (
    BadRequest,
    body,
    flag,
    only_fields,
    only_params,
    path_param,
)

log = logging.getLogger("corral.daemon")

MAX_TARGETS = 1000
REFRESH = 5.0  # the warm snapshot's period while clients are around
IN_FLIGHT_REFRESH = 0.25  # its period while an agent's tool call is in flight
CLIENT_WINDOW = 30.0  # a client that asked within this many seconds counts as connected
WHOLE_EVERY = 60.0  # a periodic refresh reads every process again at least this often
RECENT = 0.5  # a board asked for (once a second by the tui) reuses a snapshot this young
BOARDS_KEPT = 16  # boards kept for the warm snapshot (one per project and kind asked for)


def _reply(data: Any, errors: list[str] | None = None, status: int = 200) -> JSONResponse:
    return JSONResponse(envelope(data, errors), status_code=status)


class Warm:
    """The last snapshot: fresh at once when a list is asked for, then every IN_FLIGHT_REFRESH
    seconds while a tool call is in flight (the hooks report them), every REFRESH seconds while
    clients are around, and never otherwise: no wake-ups at all when nobody asks.

    A request gets a whole snapshot. A periodic refresh reads only what changed since the last
    one (`sessions.refresh`: new processes, a changed ledger), and everything again at least
    every WHOLE_EVERY seconds."""

    def __init__(self) -> None:
        self.observed: sessions.Observed | None = None
        self.last_client = -CLIENT_WINDOW
        self.last_taken = -REFRESH
        self.last_whole = -WHOLE_EVERY
        self.snapshots = 0
        self.incremental = 0  # of the snapshots, those that read only what changed
        self.in_flight = activity.in_flight()
        self.wake = asyncio.Event()
        self.lock = asyncio.Lock()

    async def _refresh(self, min_age: float = 0.0, whole: bool = True) -> sessions.Observed | None:
        async with self.lock:
            now = time.monotonic()
            if self.observed and now - self.last_taken < min_age:
                return self.observed  # taken for a request while this one waited
            previous = self.observed
            try:
                if whole or previous is None or now - self.last_whole >= WHOLE_EVERY:
                    before = previous.snapshot if previous else None
                    self.observed = await asyncio.to_thread(sessions.observe, before)
                    self.last_whole = now
                else:
                    self.observed = await asyncio.to_thread(sessions.refresh, previous)
                    self.incremental += 1
                self.snapshots += 1
            finally:
                self.last_taken = time.monotonic()  # a failed one waits its period too
            return self.observed

    async def fresh(self) -> sessions.Observed:
        self.last_client = time.monotonic()
        self.wake.set()
        observed = await self._refresh()
        if observed is None:  # _refresh(min_age=0) always takes one; kept honest for mypy
            raise RuntimeError("the daemon took no snapshot")
        return observed

    async def recent(self, max_age: float = RECENT) -> sessions.Observed:
        """A snapshot at most `max_age` seconds old, else the last one brought up to date
        reading only what changed: for a client asking every second (the tui)."""
        self.seen()
        observed = await self._refresh(min_age=max_age, whole=False)
        if observed is None:  # _refresh takes one when it has none; kept honest for mypy
            raise RuntimeError("the daemon took no snapshot")
        return observed

    def seen(self) -> None:
        """A client is around: keep the snapshot warm (every REFRESH seconds)."""
        if time.monotonic() - self.last_client >= CLIENT_WINDOW:
            self.wake.set()
        self.last_client = time.monotonic()

    def tool_call(self, phase: str, session: str, call: str) -> None:
        self.in_flight.note(phase, session, call, time.monotonic())
        if phase == "start":
            self.wake.set()

    def period(self, now: float) -> float | None:
        """Seconds between snapshots now; None: take none until something happens."""
        if self.in_flight.count(now):
            return IN_FLIGHT_REFRESH
        if now - self.last_client < CLIENT_WINDOW:
            return REFRESH
        return None

    async def run(self) -> None:
        while True:
            now = time.monotonic()
            period = self.period(now)
            if period is None:
                await self.wake.wait()
                self.wake.clear()
                continue
            delay = self.last_taken + period - now
            if delay > 0:
                try:
                    await asyncio.wait_for(self.wake.wait(), delay)
                    self.wake.clear()
                except TimeoutError:
                    pass
                continue  # look again: a request may have refreshed it, or a call ended
            try:
                await self._refresh(min_age=period / 2, whole=False)
            except Exception:  # the next request or period tries again
                log.exception("the warm snapshot could not be taken")


# -- request checking -------------------------------------------------------------------------


def _targets(value: Any) -> list[sessions.Target]:
    if not isinstance(value, list) or not value:
        raise BadRequest('"targets" must be a non-empty list of {"pid", "started_at"} objects')
    if len(value) > MAX_TARGETS:
        raise BadRequest(f'"targets" holds at most {MAX_TARGETS} entries')
    found = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or set(item) != {"pid", "started_at"}:
            raise BadRequest(f'targets[{i}] must have exactly the fields "pid" and "started_at"')
        pid, when = item["pid"], item["started_at"]
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
            raise BadRequest(f"targets[{i}].pid must be a positive integer")
        if not isinstance(when, str) or not when or len(when) > 200:
            raise BadRequest(f"targets[{i}].started_at must be the text `corral ls` shows")
        found.append(sessions.Target(pid, when))
    return found


def _terminate_request(data: dict[str, Any], allow_all: bool) -> list[sessions.Target] | None:
    only_fields(data, {"all", "targets"} if allow_all else {"targets"})
    if allow_all and ("all" in data) == ("targets" in data):
        raise BadRequest('give exactly one of {"all": true} or {"targets": [...]}')
    if "all" in data:
        if data["all"] is not True:
            raise BadRequest('"all" must be true')
        return None
    if "targets" not in data:
        raise BadRequest('"targets" is required')
    return _targets(data["targets"])


def _admit_request(data: dict[str, Any]) -> tuple[str, str, bool, bool]:
    only_fields(data, {"line", "cwd", "background", "reserve"})
    line, cwd = data.get("line"), data.get("cwd")
    if not isinstance(line, str) or not line:
        raise BadRequest('"line" must be the command line, a non-empty string')
    if len(line) > LINE_LIMIT:
        raise BadRequest(too_long(line))
    if not isinstance(cwd, str) or not os.path.isabs(cwd) or not os.path.isdir(cwd):
        raise BadRequest('"cwd" must be the absolute path of the folder the line runs in')
    background, reserve = data.get("background", False), data.get("reserve", True)
    for name, value in (("background", background), ("reserve", reserve)):
        if not isinstance(value, bool):
            raise BadRequest(f'"{name}" must be true or false')
    return line, cwd, background, reserve


# -- routes -----------------------------------------------------------------------------------

Handler = Callable[[Request], Awaitable[JSONResponse]]
Answer = TypeVar("Answer", bound=Response)


def _checked(
    handler: Callable[[Request], Awaitable[Answer]],
) -> Callable[[Request], Awaitable[Answer | JSONResponse]]:
    async def run(request: Request) -> Answer | JSONResponse:
        try:
            return await handler(request)
        except BadRequest as exc:
            return _reply(None, [str(exc)], exc.status)

    return run


def create_app(
    *,
    token: str | None = None,
    socket_path: Path | None = None,
    events: activity.ToolCallEvents | None = None,
) -> Starlette:
    """The daemon's app. With `token`, requests that come over TCP need `Bearer <token>`.
    With `events`, the hooks' tool-call reports arriving there drive the refresh."""
    warm = Warm()
    pending: set[asyncio.Task[sessions.Termination]] = set()
    me = sessions.self_identity()

    async def health(request: Request) -> JSONResponse:
        only_params(request, set())
        return _reply(
            {
                "status": "ok",
                "pid": os.getpid(),
                "started_at": me.started_at if me else None,
                "socket": str(socket_path) if socket_path else None,
                "events_socket": events.path if events else None,
                "snapshots_taken": warm.snapshots,
                "snapshots_incremental": warm.incremental,
                "tool_calls_in_flight": warm.in_flight.count(time.monotonic()),
                "tool_call_reports": events.received if events else 0,
                "tool_call_reports_ignored": events.ignored if events else 0,
            }
        )

    async def session_processes(request: Request) -> JSONResponse:
        only_params(request, set())
        session = request.path_params["session_id"]
        obs = await warm.fresh()
        listing = sessions.list_processes(session, observed=obs)
        agent = obs.attributed.agents.get(session, "unknown")
        job_rows = await asyncio.to_thread(jobs.list_jobs, session=session)
        body = {
            "session": session,
            "agent": agent,
            "jobs": [j.to_json() for j in job_rows.jobs],  # the rows `corral ls --session` has
            **listing.to_json(),
        }
        return _reply(body, [*listing.warnings, *job_rows.warnings])

    async def processes(request: Request) -> JSONResponse:
        only_params(request, {"orphaned", "all_projects", "project", "session"})
        orphaned, all_projects = flag(request, "orphaned"), flag(request, "all_projects")
        project_arg = path_param(request, "project")
        project = None if all_projects or project_arg is None else Path(project_arg)
        obs = await warm.fresh()
        listing = sessions.list_processes(
            request.query_params.get("session"), orphaned=orphaned, project=project, observed=obs
        )
        return _reply(listing.to_json(), listing.warnings)

    # the last board built per (project, quick) from a snapshot (held weakly: an old one is
    # not kept alive for it), with its tag and when: a client asking while the snapshot is
    # still the warm one gets it without a new build
    Built = tuple[weakref.ref[sessions.Observed], dict[str, Any], list[str], str, float]
    boards: dict[tuple[str, float], Built] = {}

    async def board_view(request: Request) -> Response:
        only_params(request, {"project", "quick"})
        project = str(path_param(request, "project", required=True))
        interval = 0.0 if flag(request, "quick") else 0.1  # quick: CPU not measured
        obs = await warm.recent(RECENT)
        last = boards.get((project, interval))
        if last is None or last[0]() is not obs:
            view = await asyncio.to_thread(
                board.board, Path(project), observed=obs, cpu_interval=interval
            )
            data = view.to_json()
            tag = board.tag(data, view.warnings)
            last = (weakref.ref(obs), data, view.warnings, tag, time.monotonic())
            if len(boards) >= BOARDS_KEPT:
                boards.clear()
            boards[(project, interval)] = last
        _, data, warnings, etag, built = last
        if request.headers.get("if-none-match") == etag:  # the tui has it (ages aside)
            return Response(status_code=304, headers={"ETag": etag})
        answer = _reply(board.aged(data, time.monotonic() - built), warnings)
        answer.headers["ETag"] = etag
        return answer

    async def _run_stop(session: str | None, targets: list[sessions.Target] | None) -> JSONResponse:
        # Shielded: an accepted stop finishes even if the client goes away.
        task = asyncio.ensure_future(
            asyncio.to_thread(sessions.terminate, session, targets, surface="http")
        )
        pending.add(task)
        task.add_done_callback(pending.discard)
        result = await asyncio.shield(task)
        warm.wake.set()
        return _reply(result.to_json(), result.errors)

    async def session_terminate(request: Request) -> JSONResponse:
        only_params(request, set())
        targets = _terminate_request(await body(request), allow_all=True)
        return await _run_stop(request.path_params["session_id"], targets)

    async def terminate(request: Request) -> JSONResponse:
        only_params(request, set())
        targets = _terminate_request(await body(request), allow_all=False)
        return await _run_stop(None, targets)

    async def admit(request: Request) -> JSONResponse:
        """The hook's decision for a line another program is about to run: wrap (run
        `rewritten` instead; with `reserve`, a second start of the same job is refused for a
        few seconds while this one records itself), refuse (what to reuse) or untouched."""
        only_params(request, set())
        line, cwd, background, reserve = _admit_request(await body(request))
        decision = await asyncio.to_thread(
            admission.admit,
            line,
            background=background,
            cwd=cwd,
            wrapper=claude.wrapper(),
            reserve=reserve,
        )
        return _reply({**explain_json(decision), "job_token": decision.job_token})

    routes = [
        Route("/api/health", _checked(health), methods=["GET"]),
        Route("/api/admit", _checked(admit), methods=["POST"]),
        Route("/api/sessions/{session_id}/processes", _checked(session_processes), methods=["GET"]),
        Route(
            "/api/sessions/{session_id}/processes/terminate",
            _checked(session_terminate),
            methods=["POST"],
        ),
        Route("/api/processes", _checked(processes), methods=["GET"]),
        Route("/api/board", _checked(board_view), methods=["GET"]),
        Route("/api/processes/terminate", _checked(terminate), methods=["POST"]),
        *http_claude.routes(
            reply=_reply,
            checked=_checked,
            recent=lambda: warm.recent(REFRESH),  # /procs: the warm snapshot when fresh enough
            seen=warm.seen,
            pending=pending,
            woken=warm.wake.set,
        ),
    ]

    from contextlib import asynccontextmanager

    def reports() -> None:
        if events is None:
            return
        for phase, session, call in events.receive():
            warm.tool_call(phase, session, call)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        runner = asyncio.ensure_future(warm.run())
        loop = asyncio.get_running_loop()
        if events is not None:
            loop.add_reader(events.fileno(), reports)
        try:
            yield
        finally:
            if events is not None:
                loop.remove_reader(events.fileno())
            runner.cancel()
            if pending:
                await asyncio.wait(pending, timeout=30)

    app = Starlette(routes=routes, lifespan=lifespan)
    app.add_exception_handler(404, _not_found)
    app.add_exception_handler(405, _not_allowed)
    app.add_exception_handler(Exception, _internal_error)
    app.add_middleware(_Bearer, token=token)
    return app


async def _not_found(request: Request, exc: Exception) -> JSONResponse:
    return _reply(None, [f"no route {request.url.path}: see GET /api/health"], 404)


async def _not_allowed(request: Request, exc: Exception) -> JSONResponse:
    return _reply(None, [f"{request.method} is not allowed on {request.url.path}"], 405)


async def _internal_error(request: Request, exc: Exception) -> JSONResponse:
    # still an envelope; the traceback goes to the daemon's (rate-limited) log
    return _reply(None, [f"internal error ({type(exc).__name__}): see the daemon's log"], 500)


class _Bearer:
    """Requests over TCP (they have a client address; Unix-socket ones do not) need the token."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("client"):
            given = ""
            for name, value in scope.get("headers", []):
                if name == b"authorization":
                    given = value.decode("latin-1")
            expected = f"Bearer {self.token}" if self.token else None
            if expected is None or not hmac.compare_digest(given.encode(), expected.encode()):
                # before anything reads the body, and the connection is not kept for it
                response = _reply(None, ["missing or wrong bearer token"], 401)
                response.headers["connection"] = "close"
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
