"""Starting a detached job and waiting until it is ready: what `corral run -d`, `corral
restart` and the MCP server's `job_start` share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from corral.service.readiness import DEFAULT_TIMEOUT, Readiness, ReadySpec, wait_ready
from corral.service.runner import Started


@dataclass(frozen=True)
class StartResult:
    """A start: refused (nothing runs; `refusal` says what to reuse), or started, with how
    the wait for readiness ended (None when it could not be supervised)."""

    started: Started | None
    refusal: str | None = None
    readiness: Readiness | None = None
    name: str | None = None

    @property
    def ok(self) -> bool:
        s = self.started
        return s is not None and not s.error and (self.readiness is None or self.readiness.ready)

    def to_json(self) -> dict[str, Any]:
        s = self.started
        return {
            "id": s.id if s else None,
            "pid": s.pid if s else None,
            "name": self.name,
            "supervised": s.supervised if s else False,
            "mode": "detached" if s else None,  # every start of this API is detached
            "log": str(s.log) if s else None,
            "backend": s.backend if s else None,
            "tmux": s.tmux if s else None,
            "refusal": self.refusal,
            "error": s.error if s else None,
            "ready": self.readiness.to_json() if self.readiness else None,
        }


def default_spec(port: int | None) -> ReadySpec:
    """`port` for a line the long-runner table knows as a server (it has a port), else
    `none` (a short check that the job did not exit at once)."""
    return ReadySpec("port") if port is not None else ReadySpec("none")


def start(
    line: str,
    *,
    cwd: str,
    session: str | None = None,
    name: str | None = None,
    ready: ReadySpec | None = None,
    ready_timeout: float = DEFAULT_TIMEOUT,
    force: bool = False,
    grace: float | None = None,
    backend: str = "group",
    fallback: bool = False,
) -> StartResult:
    """Admit `line` as the hook would (refused duplicates name what to reuse), start it
    detached in `cwd`, and wait until it is ready by `ready` (default: see default_spec).
    A name must be free among the running jobs of `cwd`'s project (NameTaken otherwise).
    A job corral cannot record is not started (`started.error` says why) unless `fallback`
    lets it run untracked."""
    from corral.service import runner
    from corral.service.names import check_name, ensure_free

    if name is not None:
        ensure_free(check_name(name), cwd)
    admitted = runner.admit(line, cwd=cwd, force=force)
    if admitted.refusal is not None:
        return StartResult(None, admitted.refusal, name=name)
    started = runner.start_detached(
        line,
        session=session,
        grace=grace,
        cwd=cwd,
        backend=backend,
        token=admitted.token,
        identity=admitted.identity,
        port=admitted.port,
        job_cwd=admitted.job_cwd,
        name=name,
        fallback=fallback,
    )
    if not started.supervised or started.error:
        return StartResult(started, name=name)
    spec = ready or default_spec(admitted.port)
    readiness = wait_ready(started.id, spec, timeout=ready_timeout, log=str(started.log))
    return StartResult(started, readiness=readiness, name=name)


def started_line(started: Started) -> str:
    """How every surface says it started a job: its short id and its supervisor's pid, or
    that it runs unsupervised (corral could not record it)."""
    if started.supervised:
        return f"started job {started.id[:8]} (supervisor pid {started.pid})"
    return f"started unsupervised (corral could not supervise it; see {started.log})"


def readiness_line(readiness: Readiness) -> str | None:
    """How every surface says the wait for a started job ended: `ready: URL`, `finished:
    exited with code N` (a job that was to end), `not ready: why`; None when it runs and
    there is nothing to point at."""
    if not readiness.ready:
        return f"not ready: {readiness.reason}"
    if readiness.url:
        return f"ready: {readiness.url}"
    if readiness.ended:
        return f"finished: exited with code {readiness.exit_code}"
    return None


def start_lines(result: StartResult) -> list[str]:
    """What a start (a restart's too) says after it, every surface alike: why nothing was
    started (refused, or it could not be recorded and was not to run unsupervised), or
    `started_line` and `readiness_line`."""
    if result.started is None:
        return [f"not started: {result.refusal}"]
    if result.started.error:
        return [f"not started: {result.started.error}"]
    ready = result.readiness and readiness_line(result.readiness)
    return [started_line(result.started), *([ready] if ready else [])]
