"""The one port-owner lookup: sock_diag and /proc/net agree, the hook's `holder` and the
snapshot find the same owner, and an owner remembered from a snapshot (in memory, or in the
file an earlier process left) is proven again."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from unittest import mock

import pytest

from corral.adapters import owners, scan
from corral.lowlevel import sockets as listeners
from corral.lowlevel.procfs import boot_id
from tests.adapters.test_scan import LISTEN


@pytest.fixture
def listening() -> Iterator[tuple[subprocess.Popen[str], list[int]]]:
    child = subprocess.Popen(
        [sys.executable, "-c", LISTEN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdin is not None
    try:
        yield child, [int(p) for p in child.stdout.readline().split()]
    finally:
        child.stdin.close()
        child.wait()
        child.stdout.close()


def test_sock_diag_and_proc_net_give_the_same_sockets(
    listening: tuple[subprocess.Popen[str], list[int]],
) -> None:
    _, ports = listening
    from_diag = listeners._diag_listening()
    from_proc = listeners._proc_listening()
    mine = {(s.port, s.proto, s.family, s.address()) for s in from_diag.values() if s.port in ports}
    assert mine == {
        (ports[0], "tcp", "ipv4", "127.0.0.1"),
        (ports[1], "tcp", "ipv6", "::1"),
        (ports[2], "udp", "ipv4", "127.0.0.1"),
        (ports[3], "udp", "ipv6", "::1"),
    }
    assert {i: s for i, s in from_diag.items() if s.port in ports} == {
        i: s for i, s in from_proc.items() if s.port in ports
    }


def test_holder_and_snapshot_agree_on_the_owner(
    listening: tuple[subprocess.Popen[str], list[int]],
) -> None:
    child, ports = listening
    for port in ports:
        found = listeners.holder(port)
        assert found is not None and found.pid == child.pid and found.argv[0] == sys.executable
    assert listeners.holder(ports[0]) == listeners.LazyHolders()[ports[0]]
    owners.forget_owners()
    cold = scan.take()
    warm = scan.take()  # owners proven with one readlink each, no walk
    for snap in (cold, warm):
        assert snap.ports_of([child.pid]) == sorted(set(ports))


def test_a_remembered_owner_that_closed_its_socket_is_not_kept() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", LISTEN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdin is not None
    ports = [int(p) for p in child.stdout.readline().split()]
    assert scan.take().ports_of([child.pid]) == sorted(set(ports))
    child.stdin.close()
    child.wait()
    child.stdout.close()
    assert scan.take().ports_of([child.pid]) == []


# -- owners remembered between processes ------------------------------------------------------


def test_the_owners_file_round_trips_private_and_bounded(corral_home: Path) -> None:
    path = str(corral_home / listeners.OWNERS_FILE)
    owners: dict[int, listeners.Owner | listeners.Unseen] = {
        11: (123, "4"),
        12: listeners.Unseen(5.25, 100.5),
    }
    listeners.write_owners(path, "boot-a", owners)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert listeners.read_owners(path, "boot-a") == owners
    # Equal is not enough: a NamedTuple equals the plain tuple of its values.
    assert isinstance(listeners.read_owners(path, "boot-a")[12], listeners.Unseen)
    assert listeners.read_owners(path, "boot-b") == {}  # another boot: pids mean nothing now
    many = {i: (i, "3") for i in range(listeners.MAX_OWNERS + 10)}
    listeners.write_owners(path, "boot-a", many)
    assert len(listeners.read_owners(path, "boot-a")) == listeners.MAX_OWNERS
    assert [p.name for p in corral_home.iterdir()] == [listeners.OWNERS_FILE]  # no temp left


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\xff\xfe garbage",
        b"corral-socket-owners/1 boot-a\n11 x 4\n",
        b"corral-socket-owners/1 boot-a\n11 123\n",
        b"corral-socket-owners/1 boot-a\n11 - 1.0\n",
        b"corral-socket-owners/1 boot-a\n11 123 4 5\n",
        b"corral-socket-owners/1 boot-a\n" + b"11 123 4\n" * 100_000,
    ],
)
def test_a_corrupt_owners_file_is_ignored(corral_home: Path, content: bytes) -> None:
    path = corral_home / listeners.OWNERS_FILE
    path.write_bytes(content)
    assert listeners.read_owners(str(path), "boot-a") == {}


def _walks(monkeypatch: pytest.MonkeyPatch) -> list[tuple[set[int], list[int]]]:
    """Every owner walk the scanner makes from now on: (inodes looked for, pids visited)."""
    calls: list[tuple[set[int], list[int]]] = []
    real = listeners.owners

    def spy(inodes: Collection[int], among: Iterable[int | str]) -> dict[int, tuple[int, str]]:
        pids = [int(p) for p in among]
        calls.append((set(inodes), pids))
        return real(inodes, pids)

    monkeypatch.setattr(listeners, "owners", spy)
    return calls


def test_a_new_process_proves_the_owners_an_earlier_one_left(
    corral_home: Path,
    listening: tuple[subprocess.Popen[str], list[int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    child, ports = listening
    owners.forget_owners(persisted=True)
    assert scan.take().ports_of([child.pid]) == sorted(set(ports))  # the first run: a walk
    theirs = {i for i, s in listeners.listening().items() if s.port in ports}
    assert (corral_home / listeners.OWNERS_FILE).stat().st_mode & 0o777 == 0o600
    owners.forget_owners()  # a new process: only the file is left
    walks = _walks(monkeypatch)
    assert scan.take().ports_of([child.pid]) == sorted(set(ports))
    assert all(not inodes & theirs for inodes, _ in walks)  # proven with a readlink each


def test_stale_or_corrupt_remembered_owners_fall_back_to_the_walk(
    corral_home: Path, listening: tuple[subprocess.Popen[str], list[int]]
) -> None:
    child, ports = listening
    path = str(corral_home / listeners.OWNERS_FILE)
    boot = boot_id()
    theirs = [i for i, s in listeners.listening().items() if s.port in ports]
    # another process and fd (a reused pid, a replaced socket), then a corrupt file
    listeners.write_owners(path, boot, {i: (os.getpid(), "0") for i in theirs})
    owners.forget_owners()
    assert scan.take().ports_of([child.pid]) == sorted(set(ports))
    assert listeners.read_owners(path, boot)[theirs[0]] == (child.pid, mock.ANY)  # rewritten
    (corral_home / listeners.OWNERS_FILE).write_bytes(b"\0not ours\n")
    owners.forget_owners()
    assert scan.take().ports_of([child.pid]) == sorted(set(ports))
    assert listeners.read_owners(path, boot)[theirs[0]] == (child.pid, mock.ANY)


def test_a_socket_nobody_held_is_looked_for_among_new_processes_then_everywhere(
    corral_home: Path,
    listening: tuple[subprocess.Popen[str], list[int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    child, ports = listening
    path = str(corral_home / listeners.OWNERS_FILE)
    boot = boot_id()
    theirs = [i for i, s in listeners.listening().items() if s.port in ports]
    start = scan.take().procs[child.pid].start
    now = time.monotonic()
    # nobody held them when the child was not yet started: the child is new, so it is walked
    listeners.write_owners(path, boot, {i: listeners.Unseen(now, start - 1) for i in theirs})
    owners.forget_owners()
    walks = _walks(monkeypatch)
    assert scan.take().ports_of([child.pid]) == sorted(set(ports))
    inodes, pids = walks[0]  # the processes started since come first
    assert set(theirs) <= inodes and child.pid in pids
    # the last walk over every process is too old: every process is walked again
    old = now - 10_000
    listeners.write_owners(path, boot, {i: listeners.Unseen(old, start + 1) for i in theirs})
    owners.forget_owners()
    assert scan.take().ports_of([child.pid]) == sorted(set(ports))


def test_snapshots_in_a_row_leave_the_owners_file_alone(
    corral_home: Path,
    listening: tuple[subprocess.Popen[str], list[int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the daemon lists four times a second while a tool call runs: same owners, no writes.
    # Only our child's sockets are listed: the other listeners of the machine come and go
    # (every test worker starts servers), and a new owner is rightly worth a write.
    child, _ = listening
    ours = {
        int(link[len("socket:[") : -1])
        for fd in os.listdir(f"/proc/{child.pid}/fd")
        if (link := os.readlink(f"/proc/{child.pid}/fd/{fd}")).startswith("socket:[")
    }
    assert len(ours) == 4
    every = listeners.listening

    def only_ours(port: int | None = None) -> dict[int, listeners.Socket]:
        return {i: s for i, s in every(port).items() if i in ours}

    monkeypatch.setattr(listeners, "listening", only_ours)
    owners.forget_owners(persisted=True)
    scan.take()
    assert (corral_home / listeners.OWNERS_FILE).exists()
    writes = mock.Mock(wraps=listeners.write_owners)
    monkeypatch.setattr(listeners, "write_owners", writes)
    for _ in range(3):
        scan.take()
    assert writes.call_count == 0
