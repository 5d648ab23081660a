"""The test helpers that tests of real processes lean on, shown on real processes."""

from __future__ import annotations

import os
import subprocess
import uuid

from tests.helpers import execed, pids_with_env, wait_for


def test_a_child_carries_its_marker_once_it_has_execed() -> None:
    # right after Popen returns, a child's environment often still reads empty (the kernel
    # sets it last in the exec): session tests that waited only for its identity missed it
    entry = f"CORRAL_SESSION=h-{uuid.uuid4().hex[:8]}"
    name, value = entry.split("=")
    for _ in range(100):
        proc = subprocess.Popen(["sleep", "300"], env={**os.environ, name: value})
        try:
            wait_for(lambda: execed(proc), what="exec")  # noqa: B023 - used at once
            with open(f"/proc/{proc.pid}/environ", "rb") as f:
                assert entry.encode() in f.read().split(b"\0")
        finally:
            proc.kill()
            proc.wait()
    assert not pids_with_env(entry.encode())


def test_a_child_that_has_ended_has_not_execed() -> None:
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert not execed(proc)
