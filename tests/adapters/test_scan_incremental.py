"""Snapshots that read only what they need: the daemon's refresh reads the processes started
since its last snapshot, and a jobs-only snapshot (`corral ls`) reads the jobs' processes and
their descriptors, never another process's environment or descriptors."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from corral.adapters import scan
from corral.adapters.identity import identity_of
from tests.adapters.test_scan import LISTEN
from tests.helpers import execed, job_pids, start_job, wait_for


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The /proc paths opened or listed while the test runs (a spy; the calls go through)."""
    seen: list[str] = []

    def spy(real: Callable[..., Any]) -> Callable[..., Any]:
        def call(path: Any, *args: Any, **kw: Any) -> Any:
            if isinstance(path, str) and path.startswith("/proc/"):
                seen.append(path)
            return real(path, *args, **kw)

        return call

    monkeypatch.setattr(os, "open", spy(os.open))
    monkeypatch.setattr(os, "listdir", spy(os.listdir))
    yield seen


def _pids(paths: list[str], leaf: str) -> set[int]:
    found = set()
    for path in paths:
        parts = path.split("/")
        if len(parts) >= 4 and parts[2].isdigit() and parts[3] == leaf:
            found.add(int(parts[2]))
    return found


def test_an_incremental_snapshot_reads_only_the_processes_started_since() -> None:
    session = f"inc-{uuid.uuid4().hex[:8]}"
    before = scan.take()
    child = subprocess.Popen(["sleep", "60"], env={**os.environ, "CORRAL_SESSION": session})
    try:
        wait_for(lambda: execed(child), what="exec")
        with pytest.MonkeyPatch.context() as mp:
            seen: list[str] = []
            real = os.open

            def spy(path: Any, *args: Any, **kw: Any) -> Any:
                seen.append(str(path))
                return real(path, *args, **kw)

            mp.setattr(os, "open", spy)
            snap = scan.take(previous=before, incremental=True)
        read = _pids(seen, "stat") | _pids(seen, "environ")
        assert child.pid in read
        # what the last snapshot saw is not read again (but for processes seconds old)
        settled = set(before.procs) - before.settling
        assert not read & settled
        assert snap.read == frozenset(read & set(snap.procs))
        assert snap.procs[child.pid].markers == {"CORRAL_SESSION": session}
        carried = settled & set(snap.procs)
        assert carried and all(snap.procs[p] is before.procs[p] for p in carried)
        # asked to, it reads a known process again (the daemon: the rows it shows)
        again = scan.take(previous=snap, incremental=True, reread=[child.pid])
        assert again.read is not None and child.pid in again.read
    finally:
        child.kill()
        child.wait()
    gone = scan.take(previous=snap, incremental=True)
    assert child.pid not in gone.procs


def test_a_process_read_between_fork_and_exec_is_read_again_once_it_execs() -> None:
    session = f"exec-{uuid.uuid4().hex[:8]}"
    before = scan.take()
    # a shell that waits a moment before it execs: the first snapshot sees it unchanged
    child = subprocess.Popen(
        ["sh", "-c", "read _ < /dev/null; sleep 0.5; exec env CORRAL_SESSION=$0 sleep 60", session]
    )
    try:
        early = scan.take(previous=before, incremental=True)
        assert child.pid in early.procs and child.pid in early.settling
        assert early.procs[child.pid].markers == {}
        wait_for(lambda: execed(child, ["sleep", "60"]), what="the second exec")
        late = scan.take(previous=early, incremental=True)
        assert late.procs[child.pid].name == "sleep"
        assert late.procs[child.pid].markers == {"CORRAL_SESSION": session}
    finally:
        child.kill()
        child.wait()


def test_an_incremental_snapshot_keeps_the_cpu_it_carries_and_measures_from_each_read() -> None:
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        wait_for(lambda: identity_of(busy.pid), what="start")
        time.sleep(scan.SETTLE + 0.1)  # settled: an incremental snapshot carries it over
        start = scan.take()
        wait_for(lambda: scan.take().procs[busy.pid].cpu_time > start.procs[busy.pid].cpu_time)
        first = scan.take(previous=start)
        assert first.cpu_percent[busy.pid] > 0
        wait_for(lambda: scan.take().procs[busy.pid].cpu_time > first.procs[busy.pid].cpu_time)
        carried = scan.take(previous=first, incremental=True)
        assert carried.procs[busy.pid] is first.procs[busy.pid]
        # not read: not measured again, its CPU as `first` measured it (as its memory is;
        # dropped, a board would show a busy job at 0.0 %)
        assert carried.cpu_percent[busy.pid] == first.cpu_percent[busy.pid]
        # a whole snapshot after it measures from when the process was read, not from the
        # incremental snapshot's time (which would make the figure many times too high)
        whole = scan.take(previous=carried)
        assert 0 < whole.cpu_percent[busy.pid] <= 100 * (os.cpu_count() or 1) + 5
    finally:
        busy.kill()
        busy.wait()


def test_a_jobs_only_snapshot_reads_the_jobs_processes_and_nothing_else(
    opened: list[str],
) -> None:
    script = LISTEN.replace("sys.stdin.read()", "import time; time.sleep(300)")
    job = start_job(f"setsid {sys.executable} -c '{script}' & sleep 300")
    try:
        wait_for(lambda: len(job_pids(job["id"])) >= 3, what="job processes")

        def listening() -> list[int] | None:
            whole = scan.take()
            members = scan.job_pids(whole, job["pid"])
            return members if len(whole.ports_of(members)) == 4 else None

        members = wait_for(listening, what="the job's four ports")
        opened.clear()
        got = scan.usage({job["id"]: (job["pid"], [])}, interval=0)[job["id"]]
        seen = list(opened)
        assert sorted(got.pids) == sorted(members) and got.processes == len(members)
        assert list(got.ports) == scan.take().ports_of(members)
        tree = {job["pid"], *members}
        assert not _pids(seen, "environ")  # no environment at all
        assert _pids(seen, "fd") <= tree  # descriptors of the jobs' processes only
    finally:
        from corral.adapters.ledger import read_all
        from corral.service.jobs import stop_records

        stop_records(read_all().records)
