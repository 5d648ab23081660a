"""`corral.surfaces.claude.exit_now`: how the hooks and the status line end. Each case runs
a real interpreter as the launchers do (`python3 -I -S`) and reads what it wrote and its
status."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[3] / "src"

# A module-level object whose finalizer writes: it runs in the interpreter's teardown only.
PROGRAM = f"""
import os, sys
sys.path.insert(0, {str(SRC)!r})
from corral.surfaces.claude import exit_now

class Teardown:
    def __del__(self):
        os.write(2, b"teardown ran")

kept = Teardown()
{{setup}}
sys.stdout.write("all of the output")  # buffered: exit_now must flush it
sys.stderr.write("and the errors;")
exit_now(3)
"""


def _run(setup: str = "") -> subprocess.CompletedProcess[str]:
    program = PROGRAM.replace("{setup}", setup)
    return subprocess.run(
        [sys.executable, "-I", "-S", "-c", program],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_the_output_is_flushed_and_the_teardown_skipped() -> None:
    done = _run()
    assert done.returncode == 3
    assert done.stdout == "all of the output"
    assert done.stderr == "and the errors;"  # no "teardown ran": the process ended first


@pytest.mark.parametrize(
    "setup",
    [
        "import atexit; atexit.register(lambda: os.write(2, b'atexit ran;'))",
        "import threading, time; threading.Thread(target=time.sleep, args=(0.2,)).start()",
        "import tempfile; work = tempfile.TemporaryDirectory()",  # a finalizer (atexit)
    ],
    ids=["atexit-callback", "another-thread", "a-temporary-folder"],
)
def test_a_process_that_needs_its_teardown_gets_it(setup: str) -> None:
    done = _run(setup)
    assert done.returncode == 3
    assert done.stdout == "all of the output"
    assert done.stderr.startswith("and the errors;")
    assert "teardown ran" in done.stderr


def test_a_reader_gone_ends_quietly_with_the_status() -> None:
    # stdout is a pipe whose reader closed it before the flush: nothing is reported
    program = PROGRAM.replace("{setup}", "sys.stdin.read()  # until the reader is gone")
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", program],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdout.close()
        proc.stdin.close()
        errors = proc.stderr.read()
        assert proc.wait(30) == 3
    finally:
        proc.kill()
        proc.wait()
        proc.stderr.close()
    assert errors == b"and the errors;"  # its own, and no report of the closed pipe


@pytest.mark.parametrize("closed", ["1", "2"])
def test_a_stream_closed_from_the_start_ends_with_the_status(closed: str) -> None:
    # started with stdout (or stderr) closed, Python has no such stream (None): the hook
    # still ends with its status (0: fail open), as `sys.exit` did, with no traceback
    program = PROGRAM.replace("{setup}", "")
    for write in ('sys.stdout.write("all of the output")', 'sys.stderr.write("and the errors;")'):
        program = program.replace(write, "")
    done = subprocess.run(
        ["/bin/sh", "-c", f'exec "$0" -I -S -c "$1" {closed}>&-', sys.executable, program],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (3, "", "")
