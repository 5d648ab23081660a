"""Deciding whether a line may start: the line reader's verdict against the live jobs and
ports, plus a reservation so that of two concurrent starts of one job exactly one wins.

Imports only the standard library, the pure core and stdlib adapters: the hook calls this.
Two steps, as the line decision has: `read` (the line reader, loaded only then) and
`admit_reading` (the verdict against what runs now, and the reservation); `admit` is both.
corral's shell prefix, given the line the PreToolUse hook already read, runs only the second.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence

from corral import paths
from corral.adapters import ledger, members
from corral.adapters.identity import environ_has, started_at
from corral.core.shell import messages
from corral.core.shell.check import check
from corral.core.shell.decision import Decision, JobSpec, Reading, reservations
from corral.core.shell.messages import LiveJob, PortHolder
from corral.lowlevel import sockets as listeners
from corral.lowlevel.redact import command_digest, display_command

RESERVATION_SECONDS = 15.0


def job_folder(record: ledger.JobRecord) -> str:
    """The folder the job runs in: recorded apart from the supervisor's own folder when the
    line changes directory first (`cd web && npm run dev`)."""
    where = record.extra.get("job_cwd")
    return where if isinstance(where, str) and where.startswith("/") else record.cwd


def _key_of(record: ledger.JobRecord) -> members.JobKey:
    return members.JobKey(record.id, record.pid, record.pgid, record.started_at)


def live_jobs(records: Sequence[ledger.JobRecord] | None = None) -> list[LiveJob]:
    """Running jobs from the ledger (`records`, default: read now): those whose supervisor is
    still the recorded process, and those whose supervisor died while processes of the job
    still run (unsupervised: a second copy would collide with them just the same)."""
    now = time.time()
    alive: list[ledger.JobRecord] = []
    orphaned: list[ledger.JobRecord] = []
    for record in ledger.read_all().records if records is None else records:
        if record.final:
            continue
        (alive if ledger.supervisor_alive(record) else orphaned).append(record)
    if orphaned:  # rare (a supervisor was SIGKILLed): only then is the process table read
        left = members.find([_key_of(r) for r in orphaned])
        alive += [r for r in orphaned if left.get(r.id)]
        alive.sort(key=lambda r: r.created_at)
    return [
        LiveJob(
            id=record.id,
            pid=record.pid,
            identity=record.identity,
            cwd=job_folder(record),
            ports=(record.port,) if record.port else (),
            age_seconds=max(0.0, now - record.created_at),
            command=record.command,
        )
        for record in alive
    ]


def with_held_ports(
    jobs: Sequence[LiveJob], records: Sequence[ledger.JobRecord], wanted: Collection[str]
) -> list[LiveJob]:
    """`jobs` with the ports their processes actually hold (found from their sockets, not
    only a port written in the line), for the jobs whose identity is in `wanted`."""
    by_id = {r.id: r for r in records}
    keys = [_key_of(by_id[j.id]) for j in jobs if j.id in by_id and j.identity in wanted]
    found = members.find(keys)
    out = []
    for job in jobs:
        held = (
            members.ports([job.pid, *(m.identity.pid for m in found[job.id])])
            if job.id in found
            else ()
        )
        out.append(job._replace(ports=tuple(sorted({*job.ports, *held}))))
    return out


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


RESERVATIONS = "reservations"


def _reservations_dir() -> str:
    return paths.ensure_private_dir(os.path.join(paths.home_dir(), RESERVATIONS))


def _key(identity: str, cwd: str) -> str:
    return command_digest(f"{identity}\0{cwd}")[:32]


def _keys(job: JobSpec) -> list[str]:
    """The reservation files a job takes: one for its identity in its folder, one for the port
    it asks for (two different lines on one port race as surely as two copies of one)."""
    keys = [_key(job.identity, job.cwd)]
    if job.port is not None:
        keys.append(f"port-{job.port}")
    return keys


def _holder_alive(data: Mapping[str, object]) -> bool:
    """Whether the process that took the reservation still runs (True when none was named)."""
    pid, when = data.get("holder_pid"), data.get("holder_started_at")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or not isinstance(when, str):
        return True
    return started_at(pid) == when


def _live_reservation(key: str, now: float, records: Mapping[str, ledger.JobRecord]) -> str | None:
    """The token of a reservation still in force under `key`, if any. It ends when its job has
    recorded itself (the ledger speaks for it then), when the process that took it is gone,
    or after RESERVATION_SECONDS; an ended one is removed."""
    path = os.path.join(_reservations_dir(), f"{key}.json")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.loads(f.read())
    except (OSError, ValueError):
        return None
    token = data.get("token") if isinstance(data, dict) else None
    at = data.get("at") if isinstance(data, dict) else None
    if not isinstance(token, str) or token in records:
        _unlink(path)  # the ledger, read with the verdict, speaks for the job
        return None
    if (
        isinstance(at, (int, float))
        and not isinstance(at, bool)
        and 0 <= now - at <= RESERVATION_SECONDS
        and _holder_alive(data)
    ):
        return token
    if os.path.exists(os.path.join(paths.ledger_dir(), f"{token}.json")):
        # recorded since the ledger was read (its starter then left): a job that runs now,
        # which the verdict did not see; it is refused as being started
        return token
    _unlink(path)
    return None


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _reservation_files() -> Iterator[tuple[str, object]]:
    """Each reservation file with what it holds (None: unreadable); litter of failed writes
    (`.tmp`) is removed on the way."""
    folder = os.path.join(paths.home_dir(), RESERVATIONS)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return
    for name in names:
        path = os.path.join(folder, name)
        if not name.endswith(".json"):
            if name.endswith(".tmp"):
                _unlink(path)
            continue
        try:
            with open(path, encoding="utf-8") as f:
                data = json.loads(f.read())
        except (OSError, ValueError):
            data = None
        yield path, data


def release(tokens: Collection[str] = ()) -> None:
    """End at once every reservation held for one of `tokens` (stopped or forgotten jobs),
    and every one no live process holds (`stop` and `clean` call this): only a start in
    progress, whose starter still runs, keeps its reservation until its job records itself."""
    for path, data in _reservation_files():
        if not isinstance(data, dict):
            _unlink(path)
            continue
        held = "holder_pid" in data and _holder_alive(data)
        if not held or data.get("token") in tokens:
            _unlink(path)


def withdraw(tokens: Collection[str]) -> None:
    """End the reservations taken for `tokens` only: their starts will not happen (the agent
    refused the rewritten line), so a later start of the same job is judged on its own."""
    for path, data in _reservation_files():
        if isinstance(data, dict) and data.get("token") in tokens:
            _unlink(path)


def _reserve(key: str, data: dict[str, object]) -> None:
    path = os.path.join(_reservations_dir(), f"{key}.json")
    temp = f"{path.removesuffix('.json')}.{os.getpid()}.tmp"
    with open(temp, "w", encoding="utf-8") as f:
        f.write(json.dumps(data))
    os.replace(temp, path)


def read(
    line: str,
    *,
    background: bool,
    cwd: str,
    wrapper: Sequence[str] = ("corral-run",),
    extra_runners: Sequence[str] | None = None,
    package_scripts: Mapping[str, str] | None = None,
    detach_to: str | None = None,
    kept_text: bool = True,
) -> Reading:
    """`line` read in `cwd` (`core.shell.plan.read_line`), before it meets the live jobs.
    `extra_runners`: the user's long-runner patterns (None: from the configuration).
    `kept_text`: see `core.shell.plan.read_line`."""
    if extra_runners is None:
        from corral import config

        extra_runners = config.extra_runners()
    from corral.core.shell.plan import read_line

    return read_line(
        line,
        background=background,
        cwd=cwd,
        home=os.path.expanduser("~"),
        wrapper=wrapper,
        extra_runners=extra_runners,
        package_scripts=package_scripts or {},
        detach_to=detach_to,
        kept_text=kept_text,
    )


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
    holder: int | None = None,
    detach_to: str | None = None,
) -> Decision:
    """The verdict for `line`; with `reserve`, a reservation held for each job it starts
    (`read`, then `admit_reading`). `extra_runners`: the user's long-runner patterns (None:
    from the configuration). `detach_to`: see `core.shell.plan.decide`."""
    reading = read(
        line,
        background=background,
        cwd=cwd,
        wrapper=wrapper,
        extra_runners=extra_runners,
        package_scripts=package_scripts,
        detach_to=detach_to,
    )
    return admit_reading(reading, reserve=reserve, accept=accept, holder=holder)


def admit_reading(
    reading: Reading,
    *,
    reserve: bool = True,
    accept: Callable[[Decision], bool] | None = None,
    holder: int | None = None,
) -> Decision:
    """The verdict for a read line against the live jobs and held ports now; with
    `reserve`, a reservation held for each job it starts. `accept(decision)`, asked under
    the lock before reserving: False means the caller will not start the wrapped line, so
    nothing is reserved. `holder`: the pid of the process that starts the job (the
    reservation ends when it is gone; None: only the time limit ends it)."""
    lock_path = os.path.join(paths.ensure_private_dir(paths.home_dir()), "admission.lock")
    with open(lock_path, "a") as lock:
        # One decision at a time: the ledger is read once, and the verdict and the
        # reservation are made under the same lock, so of simultaneous starts one wins.
        fcntl.flock(lock, fcntl.LOCK_EX)
        records = ledger.read_all().records
        jobs = live_jobs(records)
        decision = check(reading, jobs, PortHolders(jobs))
        if decision.action == "refuse" and jobs:
            # a refusal names the ports the running job actually holds, to reuse
            wanted = {spec.identity for spec in decision.jobs}
            decision = check(reading, with_held_ports(jobs, records, wanted), PortHolders(jobs))
        if decision.action != "wrap" or decision.job_token is None or not reserve:
            return decision
        if accept is not None and not accept(decision):
            return decision
        now = time.time()
        by_id = {r.id: r for r in records}
        starts = reservations(decision)
        for job, _ in starts:
            for key in _keys(job):
                other = _live_reservation(key, now, by_id)
                if other is not None:
                    return decision._replace(
                        action="refuse",
                        mode=None,
                        rewritten=None,
                        job_token=None,
                        in_place=(),
                        refusal=messages.being_started(job.display, job.cwd, job.port, other),
                    )
        me = None if holder is None else started_at(holder)
        for job, token in starts:
            data: dict[str, object] = {"token": token, "at": now}
            if holder is not None and me is not None:
                data.update(holder_pid=holder, holder_started_at=me)
            for key in _keys(job):
                _reserve(key, data)
        write_shims(decision)
        return decision


SHIM_SECONDS = 7 * 86400.0  # a line's shims outlive it: its list may run for days


def write_shims(decision: Decision) -> None:
    """Put in place the programs a wrapped line's text names for bash to find its commands
    through (core.shell.decision.shim_script), each whole (a rename), mode 0700, in its
    job's private folder; a line whose program is missing uses its function instead, or
    runs as written: one that cannot be written (its reservation made) raises nothing.
    Folders older than SHIM_SECONDS are swept: a line ran long ago with them."""
    from corral.core.shell.decision import shim_script
    from corral.lowlevel import locations

    wraps = [w for w in decision.in_place if w.shim and w.head]
    for wrap in wraps:
        if wrap.shim != locations.shim_path(wrap.token, wrap.head or ""):
            continue  # (a note's: only the path corral gives the job is written)
        temp = f"{wrap.shim}.{os.getpid()}.tmp"
        try:
            folder = locations.ensure_private(os.path.dirname(wrap.shim))
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o700)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(shim_script(wrap))
            os.replace(temp, wrap.shim)
            os.utime(folder)
        except OSError:  # (a name no file can have, a full disk): the line finds none
            with contextlib.suppress(OSError):
                os.unlink(temp)
    if wraps:
        _sweep_shims(time.time())


def _sweep_shims(now: float) -> None:
    from corral.lowlevel import locations

    try:
        with os.scandir(locations.shims_dir()) as entries:
            old = [
                e.path
                for e in entries
                if e.is_dir(follow_symlinks=False)
                and now - e.stat(follow_symlinks=False).st_mtime > SHIM_SECONDS
            ]
    except OSError:
        return
    if old:
        import shutil

        for path in old:
            shutil.rmtree(path, ignore_errors=True)
