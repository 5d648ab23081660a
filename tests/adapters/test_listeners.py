"""The one port-owner lookup: sock_diag and /proc/net agree, the hook's `holder` and the
snapshot find the same owner, and an owner remembered from a snapshot is proven again."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from corral.adapters import listeners, scan
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
    scan.forget_owners()
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
