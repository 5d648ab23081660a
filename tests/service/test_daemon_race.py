"""The daemon lists (its warm refresh) and stops (a terminate request) at the same time, in
threads of one process: neither may corrupt the scan's memory of sockets' owners or the
owners file they share."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import uuid
from pathlib import Path

from corral.adapters import owners, scan
from corral.adapters.identity import identity_of
from corral.lowlevel import sockets as listeners
from corral.lowlevel.procfs import boot_id
from corral.service import sessions
from tests.helpers import execed, wait_for


def test_refreshes_and_terminates_in_threads_keep_the_scan_state_whole(corral_home: Path) -> None:
    session = f"race-{uuid.uuid4().hex[:8]}"
    path = corral_home / listeners.OWNERS_FILE
    boot = boot_id()
    errors: list[BaseException] = []
    stop = threading.Event()

    def guarded(work: object) -> None:
        assert callable(work)
        try:
            while not stop.is_set():
                work()
        except BaseException as exc:  # reported by the test below
            errors.append(exc)
            stop.set()

    def refresh() -> None:
        # a listening socket that comes and goes: every snapshot has new owners to write
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen()
            sessions.observe(remember=False)
        sessions.observe(remember=False)

    def terminate() -> None:
        child = subprocess.Popen(["sleep", "60"], env={**os.environ, "CORRAL_SESSION": session})
        try:
            # once it runs `sleep` (before its exec it carries no marker yet)
            wait_for(lambda: execed(child), what="exec")
            ident = identity_of(child.pid)
            assert ident is not None
            ended = sessions.terminate(session, [ident], grace=1.0)
            assert [t.result.value for t in ended.targets] == ["terminated"]
        finally:
            if child.poll() is None:
                child.kill()
            child.wait()

    def read() -> None:
        try:
            raw = path.read_text()
        except FileNotFoundError:
            return
        if raw.count("\n") > 1:  # a file with owners in it is whole, or it is not ours
            assert listeners.read_owners(str(path), boot), raw

    threads = [threading.Thread(target=guarded, args=(w,)) for w in (refresh, refresh, read)]
    threads += [threading.Thread(target=guarded, args=(terminate,))]
    for t in threads:
        t.start()
    try:
        stop.wait(8.0)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors
    # quiet again: what this process believes the file holds is what it holds
    scan.take()
    assert listeners.read_owners(str(path), boot) == owners.remembered_owners(saved=True)
    assert set(owners.remembered_owners()) == set(listeners.listening())
    assert [n for n in os.listdir(corral_home) if n.endswith(".tmp")] == []
