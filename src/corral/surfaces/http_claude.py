"""The daemon's routes for corral's Claude Code mod (`mod/register.ts` in the plugin): the band,
the `/procs` pane and its actions, a job's last lines, what a session is told, the session-end
policy and the supervision of a Bash call. Each one calls the service API; nothing here
computes a fact a second way.

The band is asked every ~2 s by every session: the request gets the answer kept for its
folder at once (one socket round trip, no thread, no /proc read) and the answer is read again
in the background; a change of the ledger folder (every start, stop and end of a job renames
a file there) is read before answering (`Band`). `bench/bench_mod.py` measures both.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from corral.surfaces.http_checks import BadRequest, body, only_fields, only_params, path_param

BAND_SECONDS = 1.0
BAND_FOLDERS = 64  # folders whose band is kept (one per project with a session open)
ACTIONS = ("stop-all", "stop", "stop-pid", "clean", "earlier")
LOG_LINES = 20
SOURCES = ("startup", "resume", "compact", "clear")  # SessionStart's `source`, as the mod tells it

Reply = Callable[..., JSONResponse]
Handler = Callable[[Request], Awaitable[JSONResponse]]


class Band:
    """The band's answer per folder. A request gets the kept answer at once, without leaving
    the event loop; one older than BAND_SECONDS is read again in the background for the next
    request (a port that opens shows one refresh later). When the ledger folder changed (a job
    started, stopped or ended) the request waits for a new answer: the band is right at once
    after a Bash call that started or stopped a job."""

    def __init__(self) -> None:
        self.kept: dict[str, tuple[float, int, dict[str, Any]]] = {}
        self.reading: set[str] = set()
        self.tasks: set[asyncio.Task[dict[str, Any]]] = set()

    async def answer(self, folder: str) -> dict[str, Any]:
        from corral.lowlevel import locations

        ledger = locations.ledger_dir()
        try:
            stamp = os.stat(ledger).st_mtime_ns
        except OSError:
            stamp = 0
        kept = self.kept.get(folder)
        if kept is None or kept[1] != stamp:
            return await self._read(folder, ledger, stamp)
        if time.monotonic() - kept[0] >= BAND_SECONDS and folder not in self.reading:
            task = asyncio.ensure_future(self._read(folder, ledger, stamp))
            self.tasks.add(task)  # the answer is kept, not awaited
            task.add_done_callback(self.tasks.discard)
        return kept[2]

    async def _read(self, folder: str, ledger: str, stamp: int) -> dict[str, Any]:
        self.reading.add(folder)
        try:
            body = await asyncio.to_thread(self._body, folder, ledger, stamp)
        finally:
            self.reading.discard(folder)
        if len(self.kept) >= BAND_FOLDERS and folder not in self.kept:
            self.kept.clear()
        self.kept[folder] = (time.monotonic(), stamp, body)
        return body

    @staticmethod
    def _body(folder: str, ledger: str, stamp: int) -> dict[str, Any]:
        from corral.service import claude
        from corral.service.projects import project_root
        from corral.surfaces.claude import statusline

        root = str(project_root(Path(folder)))
        text = statusline.band(root, ledger) if stamp else None
        failed = [
            {
                "id": r.id,
                "name": r.extra.get("name") or None,
                "command": r.command,
                "exit_code": r.exit_code,
                "signal": r.signal,
                "ended_at": r.ended_at,
                "label": _failure(r),
            }
            for r in (claude.recent_failures(root) if stamp else [])
        ]
        return {"folder": root, "text": text, "failed": failed}


def _failure(record: Any) -> str:
    """`✖ web exited 1`: the job's name, else its command's first word."""
    words = record.command.split()
    who = record.extra.get("name") or (os.path.basename(words[0]) if words else record.id[:8])
    how = f"killed by signal {record.signal}" if record.signal else f"exited {record.exit_code}"
    return f"✖ {who} {how}"


def routes(
    *,
    reply: Reply,
    checked: Callable[[Handler], Handler],
    recent: Callable[[], Awaitable[Any]],
    seen: Callable[[], None],
    pending: set[asyncio.Task[Any]],
    woken: Callable[[], None],
) -> list[Route]:
    """The mod's routes, given the app's helpers: the envelope `reply`, the 4xx wrapper
    `checked` (requests are checked by http_checks, as the app's own are), the warm snapshot
    (taken anew unless one is recent), the note that a client is around (the daemon keeps its
    snapshot warm while the band asks), the set of stops that finish even when their client
    goes away, and the warm snapshot's wake-up."""
    band = Band()

    def folder_param(request: Request) -> str:
        return str(path_param(request, "folder", required=True))

    def text_field(data: dict[str, Any], name: str, *, required: bool = True) -> str | None:
        value = data.get(name)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value or len(value) > 64 * 1024:
            raise BadRequest(f'"{name}" must be a non-empty string')
        return value

    async def get_band(request: Request) -> JSONResponse:
        only_params(request, {"folder"})
        folder = folder_param(request)
        seen()
        return reply(await band.answer(folder))

    async def get_procs(request: Request) -> JSONResponse:
        only_params(request, {"folder", "session"})
        folder = folder_param(request)
        from corral.service import claude

        observed = await recent()
        view = await asyncio.to_thread(
            claude.overview,
            request.query_params.get("session") or None,
            Path(folder),
            observed=observed,
            cpu_interval=0.0,
        )
        return reply(view.to_json(), view.warnings)

    async def post_procs(request: Request) -> JSONResponse:
        data = await body(request)
        only_fields(data, {"action", "session", "folder", "job", "pid", "started_at"})
        action = data.get("action")
        if action not in ACTIONS:
            raise BadRequest(f'"action" must be one of {", ".join(ACTIONS)}')
        session = text_field(data, "session", required=action == "stop-all")
        folder = text_field(data, "folder", required=action == "earlier")
        if folder is not None and not os.path.isabs(folder):
            raise BadRequest('"folder" must be an absolute path')
        job = text_field(data, "job", required=action == "stop")
        pid, started = data.get("pid", 0), data.get("started_at")
        if not isinstance(pid, int) or isinstance(pid, bool) or pid < 0:
            raise BadRequest('"pid" must be a positive integer')
        if action == "stop-pid" and not (pid and isinstance(started, str) and started):
            raise BadRequest('"stop-pid" needs "pid" and "started_at"')

        def run() -> tuple[dict[str, Any], list[str]]:
            from corral.service import stopping

            if action == "clean":
                from corral.service.jobs import clean

                done = clean()
                return {"forgotten": done.forgotten, "outcomes": []}, []
            if action == "stop":
                stopped = stopping.stop([str(job)], surface="claude")
            elif action == "stop-pid":
                stopped = stopping.stop_identity(pid, str(started), surface="claude")
            elif action == "stop-all":
                stopped = stopping.stop(every=True, session=session, surface="claude")
            else:
                stopped = stopping.stop_earlier(session, Path(str(folder)))
            outcomes = [o.to_json() for o in stopped.outcomes]
            return {"outcomes": outcomes, "ok": stopped.ok, "nothing": stopped.nothing}, list(
                stopped.errors
            )

        task = asyncio.ensure_future(asyncio.to_thread(run))
        pending.add(task)
        task.add_done_callback(pending.discard)
        try:
            result, errors = await asyncio.shield(task)
        except Exception as exc:  # a job not found, an ambiguous prefix: the person reads it
            from corral.errors import CorralError

            if not isinstance(exc, CorralError):
                raise
            return reply(None, [str(exc)], 404)
        woken()
        return reply(result, errors)

    async def get_logs(request: Request) -> JSONResponse:
        only_params(request, {"lines"})
        raw = request.query_params.get("lines", str(LOG_LINES))
        if not raw.isdigit() or not 0 < int(raw) <= 1000:
            raise BadRequest("query parameter lines must be 1-1000")
        from corral.errors import CorralError
        from corral.service import jobs, logs

        try:
            record = await asyncio.to_thread(jobs.resolve, request.path_params["job"])
            read = await asyncio.to_thread(logs.read, record, tail=int(raw), redact=True)
        except CorralError as exc:
            return reply(None, [str(exc)], 404)
        return reply({"job": record.id, "lines": [line.text for line in read.lines]})

    async def get_briefing(request: Request) -> JSONResponse:
        only_params(request, {"folder", "session", "source"})
        folder = folder_param(request)
        session = request.query_params.get("session") or None
        source = request.query_params.get("source", "startup")
        if source not in SOURCES:
            raise BadRequest(f"query parameter source must be one of {', '.join(SOURCES)}")
        from corral.service.hooks import briefing

        return reply({"text": await asyncio.to_thread(briefing, folder, session, source)})

    async def post_session_end(request: Request) -> JSONResponse:
        data = await body(request)
        only_fields(data, {"session"})
        session = str(text_field(data, "session"))
        from corral import config

        policy = config.session_end()
        if policy == "terminate":  # answered at once; the stop finishes on its own
            from corral.service import sessions

            task = asyncio.ensure_future(
                asyncio.to_thread(sessions.end_session, session, "terminate", surface="claude")
            )
            pending.add(task)
            task.add_done_callback(pending.discard)
        return reply({"session": session, "policy": policy})

    async def post_supervise(request: Request) -> JSONResponse:
        data = await body(request)
        only_fields(data, {"command", "cwd", "background", "prefix"})
        line = str(text_field(data, "command"))
        cwd = str(text_field(data, "cwd"))
        background = data.get("background", False)
        prefix = data.get("prefix") or ""
        if not isinstance(background, bool) or not isinstance(prefix, str):
            raise BadRequest('"background" must be a boolean and "prefix" a string')
        return reply(await asyncio.to_thread(supervise, line, cwd, background, prefix))

    async def post_withdraw(request: Request) -> JSONResponse:
        data = await body(request)
        only_fields(data, {"tokens"})
        tokens = data.get("tokens")
        if (
            not isinstance(tokens, list)
            or not 0 < len(tokens) <= 100
            or not all(isinstance(t, str) and t.isalnum() and len(t) <= 64 for t in tokens)
        ):
            raise BadRequest('"tokens" must be a list of the job tokens `supervise` answered')
        from corral.service import admission

        await asyncio.to_thread(admission.withdraw, tokens)
        return reply({"withdrawn": tokens})

    return [
        Route("/api/claude/band", checked(get_band), methods=["GET"]),
        Route("/api/claude/withdraw", checked(post_withdraw), methods=["POST"]),
        Route("/api/claude/procs", checked(get_procs), methods=["GET"]),
        Route("/api/claude/procs", checked(post_procs), methods=["POST"]),
        Route("/api/claude/briefing", checked(get_briefing), methods=["GET"]),
        Route("/api/claude/session-end", checked(post_session_end), methods=["POST"]),
        Route("/api/claude/supervise", checked(post_supervise), methods=["POST"]),
        Route("/api/jobs/{job}/logs", checked(get_logs), methods=["GET"]),
    ]


def supervise(line: str, cwd: str, background: bool, prefix: str) -> dict[str, Any]:
    """The mod's question before a Bash call runs: `wrap` (run `rewritten` instead, tell the
    model `context`), `refuse` (a duplicate or a held port: `reason`), or `none` (run it as
    written: corral's shell prefix supervises it at execution, corral's wrapper is already
    there, or the line starts nothing to supervise). The mod asks Claude Code's permission
    check about the original line itself, before and after the rewrite; a wrap's `tokens`
    hold its reservations, which the mod withdraws when Claude Code refuses the call."""
    from corral.lowlevel import locations
    from corral.service.hooks import admit_line, started_context
    from corral.surfaces.claude import notes

    if notes.active({notes.PREFIX: prefix}):
        return {"action": "none", "why": "corral's shell prefix supervises at execution"}
    if locations.runs_corral_program(line):
        return {"action": "none", "why": "already runs under corral"}
    if not os.path.isdir(cwd):
        return {"action": "none", "why": "no such folder"}
    from corral.surfaces.claude import hook

    extra = hook.extra_words(locations.home_dir(), locations.config_path())
    if not hook.may_need_supervision(line, background, extra):  # the hook's own fast path
        return {"action": "none", "why": "nothing to supervise"}
    decision = admit_line(line, cwd=cwd, background=background)
    if decision.action == "refuse" and decision.refusal:
        return {"action": "refuse", "reason": decision.refusal}
    if decision.action == "wrap" and decision.rewritten:
        from corral.core.shell.decision import reservations

        return {
            "action": "wrap",
            "rewritten": decision.rewritten,
            "context": started_context(decision),
            "tokens": sorted({token for _, token in reservations(decision)}),
        }
    return {"action": "none", "why": "nothing to supervise"}
