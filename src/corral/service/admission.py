"""Deciding whether a line may start: the line reader's verdict against the live jobs and
ports, plus a reservation so that of two concurrent starts of one job exactly one wins.

Imports only the standard library, the pure core and stdlib adapters: the hook calls this.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

from corral import paths
from corral.adapters import ledger
from corral.adapters.identity import environ_has
from corral.core.shell.plan import Decision, LiveJob, PortHolder, decide, reservations
from corral.lowlevel import sockets as listeners
from corral.lowlevel.redact import command_digest, display_command

RESERVATION_SECONDS = 15.0


def job_folder(record: ledger.JobRecord) -> str:
    """The folder the job runs in: recorded apart from the supervisor's own folder when the
    line changes directory first (`cd web && npm run dev`)."""
    where = record.extra.get("job_cwd")
    return where if isinstance(where, str) and where.startswith("/") else record.cwd


def live_jobs() -> list[LiveJob]:
    """Running jobs from the ledger whose supervisor is still the recorded process."""
    now = time.time()
    jobs = []
    for record in ledger.read_all().records:
        if record.final or not ledger.supervisor_alive(record):
            continue
        ports: tuple[int, ...] = (record.port,) if record.port else ()
        jobs.append(
            LiveJob(
                id=record.id,
                pid=record.pid,
                identity=record.identity,
                cwd=job_folder(record),
                ports=ports,
                age_seconds=max(0.0, now - record.created_at),
                command=record.command,
            )
        )
    return jobs


def _job_of(pid: int, jobs: Sequence[LiveJob]) -> str | None:
    for job in jobs:
        if job.pid == pid or environ_has(pid, "CORRAL_JOB", job.id):
            return job.id
    return None


class PortHolders(Mapping[int, PortHolder]):
    """Held ports, looked up lazily: only the ports a line asks for cost anything."""

    def __init__(self, jobs: Sequence[LiveJob]) -> None:
        self._jobs = jobs
        self._raw = listeners.LazyHolders()

    def __getitem__(self, port: int) -> PortHolder:
        found = self._raw[port]
        command = display_command(" ".join(found.argv)) if found.argv else "?"
        job = _job_of(found.pid, self._jobs) if found.pid else None
        return PortHolder(port=port, pid=found.pid or 0, command=command, job_id=job)

    def __contains__(self, port: object) -> bool:
        return port in self._raw

    def __iter__(self) -> Iterator[int]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


def _reservation(identity: str, cwd: str) -> str:
    """The file that holds the reservation for this job identity and folder."""
    folder = paths.ensure_private_dir(os.path.join(paths.home_dir(), "reservations"))
    return os.path.join(folder, f"{_key(identity, cwd)}.json")


def _reserved(identity: str, cwd: str, now: float, recorded: set[str]) -> str | None:
    """The token of a live reservation for this job identity and folder, if any."""
    try:
        with open(_reservation(identity, cwd), encoding="utf-8") as f:
            data = json.loads(f.read())
    except (OSError, ValueError):
        return None
    token = data.get("token")
    if not isinstance(token, str) or token in recorded:
        return None  # its supervisor checked in: the ledger speaks for it now
    if now - float(data.get("at", 0)) > RESERVATION_SECONDS:
        return None
    return token


def _key(identity: str, cwd: str) -> str:
    return command_digest(f"{identity}\0{cwd}")[:32]


def admit(
    line: str,
    *,
    background: bool,
    cwd: str,
    wrapper: Sequence[str] = ("corral-run",),
    extra_runners: Sequence[str] | None = None,
    package_scripts: Mapping[str, str] | None = None,
    reserve: bool = True,
    accept: Callable[[Decision], bool] | None = None,
) -> Decision:
    """The verdict for `line`; with `reserve`, a reservation held for each job it starts.
    `extra_runners`: the user's long-runner patterns (None: from the configuration).
    `accept(decision)`, asked under the lock before reserving: False means the caller will
    not start the wrapped line, so nothing is reserved."""
    if extra_runners is None:
        from corral import config

        extra_runners = config.extra_runners()
    home = os.path.expanduser("~")
    lock_path = os.path.join(paths.ensure_private_dir(paths.home_dir()), "admission.lock")
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        jobs = live_jobs()
        decision = decide(
            line,
            background=background,
            cwd=cwd,
            home=home,
            live=jobs,
            held_ports=PortHolders(jobs),
            wrapper=wrapper,
            extra_runners=extra_runners,
            package_scripts=package_scripts or {},
        )
        if decision.action != "wrap" or decision.job_token is None or not reserve:
            return decision
        if accept is not None and not accept(decision):
            return decision
        now = time.time()
        recorded = {r.id for r in ledger.read_all().records}
        starts = reservations(decision)
        for job, _ in starts:
            other = _reserved(job.identity, job.cwd, now, recorded)
            if other is not None:
                return decision._replace(
                    action="refuse",
                    mode=None,
                    rewritten=None,
                    job_token=None,
                    in_place=(),
                    refusal=(
                        f"`{job.display}` is being started right now in {job.cwd} (job "
                        f"{other[:8]}); wait a moment and run `corral ls` to reuse it."
                    ),
                )
        for job, token in starts:
            path = _reservation(job.identity, job.cwd)
            temp = f"{path.removesuffix('.json')}.{os.getpid()}.tmp"
            with open(temp, "w", encoding="utf-8") as f:
                f.write(json.dumps({"token": token, "at": now}))
            os.replace(temp, path)
        return decision
