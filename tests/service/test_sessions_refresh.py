"""The daemon's refresh while a tool call runs reads only what changed since its last
snapshot: new processes (attributed as a whole snapshot would), a changed ledger; nothing of
what it already saw, and no stored observations."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from corral import paths
from corral.service import sessions
from tests.helpers import execed, free_port, start_job, wait_for


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    seen: list[str] = []
    real_open, real_builtin = os.open, open

    def spy_os(path: Any, *args: Any, **kw: Any) -> Any:
        seen.append(os.fspath(path) if isinstance(path, (str, Path)) else repr(path))
        return real_open(path, *args, **kw)

    def spy_open(path: Any, *args: Any, **kw: Any) -> Any:
        seen.append(os.fspath(path) if isinstance(path, (str, Path)) else repr(path))
        return real_builtin(path, *args, **kw)

    monkeypatch.setattr(os, "open", spy_os)
    monkeypatch.setattr("builtins.open", spy_open)
    yield seen


def _proc_pids(paths_seen: list[str]) -> set[int]:
    found = set()
    for path in paths_seen:
        parts = path.split("/")
        if path.startswith("/proc/") and len(parts) > 3 and parts[2].isdigit():
            found.add(int(parts[2]))
    return found


def test_a_refresh_reads_new_processes_and_a_changed_ledger_only(
    corral_home: Path, opened: list[str]
) -> None:
    session = f"ref-{uuid.uuid4().hex[:8]}"
    first_job = start_job("sleep 300")
    ledger = paths.ledger_dir()
    # past the window in which a folder's mtime cannot show a change
    time.sleep(sessions._RACY_NS / 1e9 + 0.1)
    before = sessions.observe()
    assert first_job["id"] in {r.job for r in before.attributed.rows.values()}
    child = subprocess.Popen(["sleep", "60"], env={**os.environ, "CORRAL_SESSION": session})
    try:
        wait_for(lambda: execed(child), what="exec")
        opened.clear()
        after = sessions.refresh(before)
        seen = list(opened)
        # nothing seen is read again (but for processes seconds old: they may exec yet)
        settled = set(before.snapshot.procs) - before.snapshot.settling
        assert not _proc_pids(seen) & settled
        assert not [p for p in seen if p.startswith(ledger)]  # the ledger did not change
        assert not [p for p in seen if "sqlite" in p]  # stored observations not read again
        row = after.attributed.rows[child.pid]
        assert (row.how, row.session) == ("env", session)
        assert after.records is before.records
        # the same answer a whole snapshot gives
        whole = sessions.observe(remember=False)
        assert (whole.attributed.rows[child.pid].how, whole.attributed.rows[child.pid].session) == (
            row.how,
            row.session,
        )
        # a job started since: the ledger is read again, and the job is seen
        second_job = start_job("sleep 300")
        later = wait_for(
            lambda: (
                (r := sessions.refresh(after))
                and second_job["id"] in {x.job for x in r.attributed.rows.values()}
                and r
            ),
            what="the new job in a refresh",
        )
        assert later.records is not before.records
    finally:
        child.kill()
        child.wait()
        from corral.adapters.ledger import read_all
        from corral.service.jobs import stop_records

        stop_records(read_all().records)
    gone = sessions.refresh(later)
    assert child.pid not in gone.attributed.rows


def test_a_job_binding_its_port_late_is_seen_by_a_refresh_without_walking_the_machine(
    corral_home: Path,
) -> None:
    port = free_port()
    job = start_job(f"sleep 2; exec {sys.executable} -m http.server {port} --bind 127.0.0.1")
    try:
        before = sessions.observe()
        assert job["id"] in {r.job for r in before.attributed.rows.values()}
        wait_for(lambda: _listening(port), what="the job's port")
        walked: list[str] = []
        real = os.listdir

        def spy(path: Any = ".") -> Any:
            walked.append(str(path))
            return real(path)

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(os, "listdir", spy)
            after = sessions.refresh(before)
        rows = after.attributed.rows
        members = [pid for pid, row in rows.items() if row.job == job["id"]]
        assert port in after.snapshot.ports_of(members)
        fds = {int(p.split("/")[2]) for p in walked if p.startswith("/proc/") and p.endswith("/fd")}
        assert fds <= set(before.attributed.rows) | (after.snapshot.read or set())
    finally:
        from corral.adapters.ledger import read_all
        from corral.service.jobs import stop_records

        stop_records(read_all().records)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0
