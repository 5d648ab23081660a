"""`corral mcp`: corral's tools for any agent, as a stdio MCP server (the official SDK).

The session is the one the server is started in, named by the variables every corral program
reads (lowlevel.record.SESSION_VARIABLES, corral's own first), the project the one of its
working folder. Tools call the same service API as every surface and follow the same safety rules: a
destructive call reaches only this session's jobs; anything else is reported `unproven`,
never signalled.
Log lines handed to the agent have secret-looking values hidden. Every result is the
versioned envelope as structured content, plus a short text for clients that show text.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio.to_thread
from mcp.server import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from corral.core.envelope import envelope

DEFAULT_TAIL = 100
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)  # fmt: skip
STARTS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                         open_world_hint=False)  # fmt: skip
STOPS = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                        open_world_hint=False)  # fmt: skip
RESTARTS = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                           open_world_hint=False)  # fmt: skip


def _result(data: Any, text: str, errors: list[str] | None = None) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=envelope(data, errors),
        is_error=bool(errors) and data is None,
    )


class Tools:
    """The tools' logic, synchronous (run in a worker thread by the server)."""

    def __init__(self, session: str | None, cwd: str) -> None:
        from corral.service.names import project_of

        self.session = session
        self.cwd = cwd
        self.project = project_of(cwd)

    def _in_project(self, folder: str) -> bool:
        return folder == self.project or folder.startswith(self.project.rstrip("/") + "/")

    def jobs_list(self, scope: str, include_finished: bool, processes: bool) -> CallToolResult:
        from corral.service.jobs import list_jobs
        from corral.service.listing import Rows, list_rows, process_row

        if scope not in ("session", "project", "all"):
            return _result(None, "scope is session, project or all", ["bad scope"])
        session = self.session if scope == "session" else None
        if scope == "session" and session is None:
            return _result(None, "corral mcp runs without a session id", ["no session"])
        if processes:  # jobs, then the unsupervised processes of the session or project
            rows = list_rows(
                session=session,
                project=Path(self.project) if scope == "project" else None,
                include_finished=include_finished,
                cpu_interval=0,
            )
        else:  # jobs only: no look at the machine's other processes
            listing = list_jobs(session=session, include_finished=include_finished, cpu_interval=0)
            rows = Rows(listing.jobs, [], listing.warnings)
        jobs = [j.to_json() for j in rows.jobs if scope != "project" or self._in_project(j.cwd)]
        data: dict[str, Any] = {"session": self.session, "project": self.project, "jobs": jobs}
        if processes:
            data["processes"] = [process_row(p) for p in rows.processes]
        rows_json = jobs
        lines = [
            f"{j['id'][:8]} {j['name'] or ''} {j['state']} "
            f"{' '.join(f':{p}' for p in j['ports']) or '-'} {j['command']}".replace("  ", " ")
            for j in rows_json
        ]
        text = "\n".join(lines) if lines else "no jobs"
        return _result(data, text, rows.warnings)

    def job_start(
        self,
        line: str,
        cwd: str | None,
        name: str | None,
        ready: str | None,
        ready_timeout: float,
    ) -> CallToolResult:
        from corral.errors import CorralError
        from corral.service import starting
        from corral.service.readiness import parse_spec

        folder = os.path.abspath(os.path.join(self.cwd, cwd)) if cwd else self.cwd
        try:
            spec = parse_spec(ready) if ready else None
            result = starting.start(
                line,
                cwd=folder,
                session=self.session,
                name=name,
                ready=spec,
                ready_timeout=max(0.1, min(ready_timeout, 600.0)),
            )
        except CorralError as exc:
            return _result(None, str(exc), [str(exc)])
        data = result.to_json()
        if data.get("ready"):
            data["ready"] = dict(data["ready"], tail=_redacted(data["ready"]["tail"]))
        lines = starting.start_lines(result)  # what every surface says after a start
        readiness = result.readiness
        if readiness is not None and not readiness.ready:
            lines += _redacted(readiness.tail)  # why it is not ready, in its own words
        why = result.refusal or (result.started.error if result.started is not None else None)
        return _result(data, "\n".join(lines), [why] if why else None)

    def job_logs(
        self, job: str, tail: int | None, grep: str | None, after: int | None
    ) -> CallToolResult:
        from corral.errors import CorralError
        from corral.service import jobs, logs

        try:
            record = jobs.resolve(job)
            got = logs.read(
                record,
                tail=DEFAULT_TAIL if tail is None and after is None else tail,
                grep=grep,
                after=after,
                redact=True,
            )
        except CorralError as exc:
            return _result(None, str(exc), [str(exc)])
        text = "\n".join(line.text for line in got.lines) or "(no new lines)"
        notes = ["some lines asked for were dropped (size cap)"] if got.missed else []
        return _result(got.to_json(), f"{text}\n[cursor {got.cursor}]", notes)

    def _mine(self, record: Any) -> bool:
        return self.session is not None and record.session == self.session

    def _not_mine(self, ref: str, record: Any) -> dict[str, Any]:
        from corral.service.jobs import not_signalled

        why = (
            "not a job of this session; not signalled"
            if self.session
            else "corral mcp runs without a session id; not signalled"
        )
        return {
            "target": ref,
            "id": record.id,
            "ok": False,
            "targets": [not_signalled(record.pid, record.started_at, why).to_json()],
        }

    def job_stop(
        self, jobs_: list[str] | None, pid: int | None, started_at: str | None
    ) -> CallToolResult:
        from corral.errors import CorralError
        from corral.service import jobs
        from corral.service.jobs import not_signalled
        from corral.service.names import all_records

        records = all_records()
        results: list[dict[str, Any]] = []
        chosen = []
        for ref in jobs_ or []:
            try:
                record = jobs.resolve(ref, records)
            except CorralError as exc:
                results.append({"target": ref, "ok": False, "error": str(exc)})
                continue
            if self._mine(record):
                chosen.append((ref, record))
            else:
                results.append(self._not_mine(ref, record))
        if pid is not None:
            ref = f"{pid}@{started_at}"
            match = next((r for r in records if r.pid == pid and r.started_at == started_at), None)
            if match is not None and self._mine(match):
                chosen.append((ref, match))
            elif match is not None:
                results.append(self._not_mine(ref, match))
            else:
                target = not_signalled(pid, started_at, "not a job of this session")
                results.append(
                    {"target": ref, "ok": target.result.ok, "targets": [target.to_json()]}
                )
        errors: list[str] = []
        if chosen:
            outcomes, errors = jobs.stop_records([r for _, r in chosen], surface="mcp")
            for (ref, _), outcome in zip(chosen, outcomes, strict=True):
                results.append({"target": ref, **outcome.to_json()})
        lines = [
            f"{r['target']}: "
            + (", ".join(t["result"] for t in r.get("targets", [])) or r.get("error", "?"))
            for r in results
        ]
        return _result(results, "\n".join(lines) or "nothing to stop", errors)

    def job_restart(self, job: str, ready: str | None, ready_timeout: float) -> CallToolResult:
        from corral.errors import CorralError
        from corral.service import jobs
        from corral.service.readiness import parse_spec
        from corral.service.restart import restart
        from corral.service.starting import start_lines

        try:
            record = jobs.resolve(job)
            if not self._mine(record):
                data = self._not_mine(job, record)
                return _result(data, f"{job}: unproven (not this session's job)", ["refused"])
            result = restart(
                record,
                session=self.session,
                ready=parse_spec(ready) if ready else None,
                ready_timeout=max(0.1, min(ready_timeout, 600.0)),
                surface="mcp",
            )
        except CorralError as exc:
            return _result(None, str(exc), [str(exc)])
        data = result.to_json()
        text = "\n".join([*([result.note] if result.note else []), *start_lines(result.start)])
        if result.start.started is None:
            return _result(data, text, [str(result.start.refusal)])
        return _result(data, text)

    def line_explain(self, line: str, cwd: str | None, background: bool) -> CallToolResult:
        from corral.core.shell.plan import explain_json, started_by_corral
        from corral.service.admission import admit
        from corral.service.claude import wrapper

        folder = os.path.abspath(os.path.join(self.cwd, cwd)) if cwd else self.cwd
        decision = admit(line, background=background, cwd=folder, wrapper=wrapper(), reserve=False)
        data = explain_json(decision)
        if not data["readable"]:
            text = f"untouched: corral cannot read this line with certainty ({data['reason']})"
        elif data["action"] == "refuse":
            text = f"refused: {data['refusal']}"
        elif data["action"] == "wrap":
            text = f"supervised ({data['mode']} mode)"
        elif not data["jobs"] and started_by_corral(line, folder, os.path.expanduser("~")):
            text = (
                "untouched: corral's own `run` starts the job under its supervisor and refuses "
                "a duplicate or a held port itself; no second supervisor wraps it"
            )
        else:
            text = "untouched: no long-running job to supervise"
        return _result(data, text)


def _redacted(lines: list[str]) -> list[str]:
    from corral.service.logs import redact_text

    return [redact_text(line) for line in lines]


def build(session: str | None = None, cwd: str | None = None) -> MCPServer:
    """The server with its six tools, for `session` in folder `cwd` (defaults: from the
    environment and the working folder)."""
    from corral.lowlevel.record import session_from

    tools = Tools(session if session is not None else session_from(os.environ), cwd or os.getcwd())
    server = MCPServer(
        "corral",
        instructions=(
            "corral supervises the dev servers, watchers and background jobs you start: start "
            "them with job_start (it refuses a second copy and says what to reuse), read their "
            "output with job_logs (pass the cursor back as `after` for what is new), stop them "
            "with job_stop."
        ),
    )

    def run(fn: Any, *args: Any) -> Any:
        return anyio.to_thread.run_sync(lambda: fn(*args))

    @server.tool(annotations=READ_ONLY)
    async def jobs_list(
        scope: str = "project", include_finished: bool = False, processes: bool = False
    ) -> CallToolResult:
        """List jobs: of this session, this project (default) or all; with `processes`,
        also processes not started through corral (this session's, or the project's
        orphans). Each job has its id, name, state, ports, log and command."""
        result: CallToolResult = await run(tools.jobs_list, scope, include_finished, processes)
        return result

    @server.tool(annotations=STARTS)
    async def job_start(
        line: str,
        cwd: str | None = None,
        name: str | None = None,
        ready: str | None = None,
        ready_timeout: float = 30.0,
    ) -> CallToolResult:
        """Start a shell line as a supervised background job and wait until it is ready.
        `ready`: port (any port it opens), port:N, http://..., log:REGEX or none (default:
        port for a known dev server, else a 0.5 s check that it did not exit at once).
        A second copy of a running server is refused, with the running one to reuse."""
        result: CallToolResult = await run(tools.job_start, line, cwd, name, ready, ready_timeout)
        return result

    @server.tool(annotations=READ_ONLY)
    async def job_logs(
        job: str, tail: int | None = None, grep: str | None = None, after: int | None = None
    ) -> CallToolResult:
        """A job's output (by name or id): the last `tail` lines (default 100), lines
        matching `grep`, or only what came after `after` (the cursor of an earlier call).
        Secret-looking values are hidden."""
        result: CallToolResult = await run(tools.job_logs, job, tail, grep, after)
        return result

    @server.tool(annotations=STOPS)
    async def job_stop(
        jobs: list[str] | None = None, pid: int | None = None, started_at: str | None = None
    ) -> CallToolResult:
        """Stop jobs of this session by name or id, or one by `pid` and `started_at` (as
        jobs_list shows them). Each target reports terminated, already_exited,
        identity_mismatch, failed or unproven; others' jobs are never signalled."""
        result: CallToolResult = await run(tools.job_stop, jobs, pid, started_at)
        return result

    @server.tool(annotations=RESTARTS)
    async def job_restart(
        job: str, ready: str | None = None, ready_timeout: float = 30.0
    ) -> CallToolResult:
        """Stop a job of this session and start the same line again (same folder, name and
        backend); reports the new id, pid and readiness."""
        result: CallToolResult = await run(tools.job_restart, job, ready, ready_timeout)
        return result

    @server.tool(annotations=READ_ONLY)
    async def line_explain(
        line: str, cwd: str | None = None, background: bool = False
    ) -> CallToolResult:
        """Whether corral would supervise, refuse or leave alone a shell line, and why."""
        result: CallToolResult = await run(tools.line_explain, line, cwd, background)
        return result

    return server


def serve() -> None:
    """Serve over stdin/stdout until the client goes away."""
    build().run("stdio")
