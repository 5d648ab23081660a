"""Refusal messages: say what is running, where, and exactly how to reuse or stop it."""

from __future__ import annotations

from collections.abc import Sequence

from corral.lowlevel.named import NamedTuple
from corral.lowlevel.redact import display_command


class LiveJob(NamedTuple):
    id: str
    pid: int
    identity: str | None
    cwd: str
    ports: tuple[int, ...]
    age_seconds: float
    command: str


class PortHolder(NamedTuple):
    port: int
    pid: int
    command: str
    job_id: str | None  # None: not started by corral


def age(seconds: float) -> str:
    whole = int(seconds) if 0 <= seconds < 1e12 else 0  # NaN compares False
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs}s"


def _ports(ports: Sequence[int]) -> str:
    if not ports:
        return "no port open yet"
    return ("port " if len(ports) == 1 else "ports ") + ", ".join(str(p) for p in ports)


def _reuse(job: LiveJob) -> str:
    where = f" at http://localhost:{job.ports[0]}" if job.ports else ""
    return (
        f"Reuse the running job{where} instead of starting another, "
        f"or stop it first with `corral stop {job.id}` and run this line again."
    )


def duplicate(display: str, job: LiveJob) -> str:
    return (
        f"corral refused: `{display}` is already running in {job.cwd} as corral job {job.id} "
        f"(pid {job.pid}, {_ports(job.ports)}, up {age(job.age_seconds)}, "
        f"`{display_command(job.command)}`). {_reuse(job)}"
    )


def port_held_by_job(display: str, port: int, job: LiveJob) -> str:
    return (
        f"corral refused: `{display}` asks for port {port}, which corral job {job.id} already "
        f"holds (pid {job.pid}, `{display_command(job.command)}` in {job.cwd}, "
        f"up {age(job.age_seconds)}). {_reuse(job)} "
        f"Or give this command another port."
    )


def port_held_by_other(display: str, port: int, holder: PortHolder) -> str:
    return (
        f"corral refused: `{display}` asks for port {port}, which pid {holder.pid} "
        f"(`{display_command(holder.command)}`) already holds; it was not started by corral, "
        f"so corral will not stop it. Give this command another port "
        f"(for example --port {port + 1 if port < 65535 else port - 1}), "
        f"or ask the user to stop pid {holder.pid}."
    )


def port_held_by_corral(display: str, port: int, holder: PortHolder) -> str:
    return (
        f"corral refused: `{display}` asks for port {port}, which corral job {holder.job_id} "
        f"already holds (pid {holder.pid}, `{display_command(holder.command)}`). Reuse it at "
        f"http://localhost:{port}, or stop it first with `corral stop {holder.job_id}`; "
        f"or give this command another port."
    )


def twice(display: str, cwd: str) -> str:
    return (
        f"corral refused: this line starts the same job twice at once (`{display}` in {cwd}). "
        f"Start it once; to run it again after it ends, use `&&` or `;` instead of `&`."
    )


def port_twice(port: int, first: str, second: str) -> str:
    return (
        f"corral refused: this line starts `{first}` and `{second}` at once, both on port "
        f"{port}. Give one of them another port."
    )


def being_started(display: str, cwd: str, port: int | None, token: str) -> str:
    what = f"`{display}` (port {port})" if port is not None else f"`{display}`"
    return (
        f"corral refused: {what} is being started right now in {cwd} (job {token[:8]}); "
        f"wait a moment and run `corral ls` to reuse it."
    )
