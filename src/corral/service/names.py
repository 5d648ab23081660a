"""Job names: `corral run --name NAME`, unique among the running jobs of a project, and
the references every command takes (a name, or a unique prefix of the id)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from corral.adapters.ledger import JobRecord
from corral.errors import AmbiguousJob, CorralError, JobNotFound, UsageError

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class NameTaken(CorralError):
    def __init__(self, name: str, holder: JobRecord) -> None:
        super().__init__(
            f"the name {name!r} is taken by running job {holder.id[:8]} ({holder.command}) in "
            f"this project: reuse it, `corral restart {name}`, or choose another name"
        )
        self.holder = holder


def check_name(name: str) -> str:
    """`name` if it is a usable job name (letters, digits, `.`, `_`, `-`; up to 64)."""
    if not _NAME.fullmatch(name):
        raise UsageError(
            f"--name takes letters, digits, '.', '_' and '-' (up to 64, first a letter or "
            f"digit), not {name!r}"
        )
    return name


def project_of(folder: str) -> str:
    from corral.service.projects import project_root

    return str(project_root(Path(folder)))


def job_folder(record: JobRecord) -> str:
    """Where the job runs (the folder the line moved to, or where it was started)."""
    return str(record.extra.get("job_cwd") or record.cwd)


def holder_of(name: str, cwd: str, records: Sequence[JobRecord]) -> JobRecord | None:
    """The running job of `cwd`'s project that carries `name`, if any."""
    project = project_of(cwd)
    for record in records:
        if record.final or record.extra.get("name") != name:
            continue
        if project_of(job_folder(record)) == project:
            return record
    return None


def ensure_free(name: str, cwd: str, records: Sequence[JobRecord] | None = None) -> None:
    """Raise NameTaken when a running job of the project already carries `name`."""
    if records is None:
        from corral.adapters import ledger

        records = ledger.read_all().records
    holder = holder_of(name, cwd, records)
    if holder is not None and _alive(holder):
        raise NameTaken(name, holder)


def _alive(record: JobRecord) -> bool:
    from corral.adapters.ledger import supervisor_alive

    return bool(supervisor_alive(record))


def resolve(ref: str, records: Sequence[JobRecord], cwd: str | None = None) -> JobRecord:
    """The job `ref` names: a job name (running jobs first, this project's first, then the
    newest), else a unique prefix of an id (at least 4 characters)."""
    named = [r for r in records if r.extra.get("name") == ref]
    if named:
        project = project_of(cwd or os.getcwd())

        def rank(r: JobRecord) -> tuple[bool, bool, float]:
            return (not r.final, project_of(job_folder(r)) == project, r.created_at)

        return max(named, key=rank)
    prefix = ref.strip().lower()
    if len(prefix) < 4:
        raise JobNotFound(ref)
    matches = [r for r in records if r.id.startswith(prefix)]
    if not matches:
        raise JobNotFound(ref)
    if len(matches) > 1:
        raise AmbiguousJob(ref, [r.id[:12] for r in matches])
    return matches[0]


def all_records() -> list[JobRecord]:
    """Every readable job record (the ledger), oldest first: what references resolve in."""
    from corral.adapters import ledger

    return ledger.read_all().records
