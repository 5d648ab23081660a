"""The one /proc reader: stat fields whatever the process's name, start identity, children
from the kernel's lists (the same tree a full walk finds), command line, environment markers.
And it is the only place in corral that parses /proc/<pid>/stat."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corral.lowlevel import procfs
from tests.helpers import alive, wait_for

pytestmark = pytest.mark.skipif(not procfs.LINUX, reason="Linux /proc")


@given(st.text(alphabet=" ()xZ0123456789\n", max_size=20))
def test_stat_fields_survive_any_process_name(name: str) -> None:
    line = f"42 ({name}) S 7 42 42 0 -1 4194304 1 0 0 0 5 6 0 0 20 0 1 0 12345 100 9 rest"
    fields = procfs.stat_fields(line.encode())
    assert fields[procfs.STATE] == b"S" and fields[procfs.PPID] == b"7"
    assert fields[procfs.START] == b"12345" and fields[procfs.RSS] == b"9"


def test_own_identity_and_markers(monkeypatch: pytest.MonkeyPatch) -> None:
    me = os.getpid()
    assert procfs.started_at(me) == procfs.self_identity()
    info = procfs.proc_stat(me)
    assert info is not None and info[0] == os.getppid()
    argv = procfs.cmdline(me)
    assert argv and "python" in argv[0]
    child = subprocess.Popen(
        [sys.executable, "-c", "print(flush=True); import time; time.sleep(30)"],
        env={**os.environ, "CORRAL_JOB": "abc"},
        stdout=subprocess.PIPE,
    )
    try:
        assert child.stdout is not None
        child.stdout.readline()  # it runs its own program now (before exec: our environment)
        assert procfs.environ_has(child.pid, "CORRAL_JOB", "abc") is True
        assert procfs.environ_has(child.pid, "CORRAL_JOB", "ab") is False
        assert procfs.environ_value(child.pid, "CORRAL_JOB") == "abc"
        assert procfs.environ_value(child.pid, "CORRAL_NOPE") is None
    finally:
        child.kill()
        child.wait()
        assert child.stdout is not None
        child.stdout.close()
    assert procfs.started_at(child.pid) is None and procfs.cmdline(child.pid) is None
    assert procfs.children(child.pid) is None and procfs.descendants(child.pid) == []


def test_children_lists_give_the_tree_a_full_walk_gives(tmp_path: Path) -> None:
    tree = subprocess.Popen(
        ["sh", "-c", "sleep 30 & (sleep 30 & sleep 30 & wait) & wait"], start_new_session=True
    )
    try:
        wait_for(lambda: len(procfs.descendants(tree.pid, procfs.process_table())) >= 4)
        time.sleep(0.1)
        by_walk = sorted(procfs.descendants(tree.pid, procfs.process_table()))
        by_children = sorted(procfs.descendants(tree.pid))
        assert by_children == by_walk and len(by_walk) == 4
    finally:
        members = procfs.descendants(tree.pid, procfs.process_table())
        os.killpg(tree.pid, 9)
        tree.wait()
        wait_for(lambda: not any(alive(pid) for pid in members), what="the tree gone")


def test_ignored_signals_are_read_from_the_mask() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import signal, sys, time; signal.signal(signal.SIGUSR1, "
         "signal.SIG_IGN); print(flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        child.stdout.readline()
        assert 10 in procfs.ignored_signals(child.pid)  # SIGUSR1
    finally:
        child.kill()
        child.wait()
        assert child.stdout is not None
        child.stdout.close()
    assert procfs.ignored_signals(child.pid) == set()


def test_only_procfs_parses_proc_stat() -> None:
    src = Path(procfs.__file__).resolve().parent.parent
    for path in src.rglob("*.py"):
        if path.parent.name != "lowlevel" and path.name != "scan.py":  # (its raw reads)
            assert "/proc/{" not in path.read_text(), path
        if path.name != "procfs.py":
            text = path.read_text()  # (the scanner reads stat files itself, parsed here)
            assert 'rindex(b")")' not in text and 'rfind(b")")' not in text, path
