"""The one listening-socket reader: what counts as listening (TCP in LISTEN, UDP bound without
a peer; never a TCP socket that is only bound, nor a connected UDP socket), the same answer
from sock_diag, /proc/net and psutil, one Listener type for the hook, the scanner and the
status line."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from corral.adapters import scan
from corral.lowlevel import sockets

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

MIXED = """
import socket, sys
listening = socket.socket(); listening.bind(("127.0.0.1", 0)); listening.listen()
bound = socket.socket(); bound.bind(("127.0.0.1", 0))  # bound, never listening
free = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); free.bind(("127.0.0.1", 0))
peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); peer.bind(("127.0.0.1", 0))
peer.connect(free.getsockname())  # a UDP socket with a peer
print(*(s.getsockname()[1] for s in (listening, bound, free, peer)), flush=True)
sys.stdin.read()
"""


@pytest.fixture
def mixed() -> Iterator[tuple[int, list[int]]]:
    child = subprocess.Popen(
        [sys.executable, "-c", MIXED], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdin is not None
    try:
        yield child.pid, [int(p) for p in child.stdout.readline().split()]
    finally:
        child.stdin.close()
        child.wait()
        child.stdout.close()


def test_only_listening_tcp_and_peerless_udp_count(mixed: tuple[int, list[int]]) -> None:
    pid, (listening, bound, free, peer) = mixed
    for read in (sockets._diag_listening, sockets._proc_listening):
        found = {(s.port, s.proto) for s in read().values()}
        assert (listening, "tcp") in found and (free, "udp") in found, read
        assert (bound, "tcp") not in found and (peer, "udp") not in found, read
    assert sockets.holder(listening) == sockets.Listener(
        listening,
        "tcp",
        "ipv4",
        "127.0.0.1",
        pid,
        sockets.holder(listening).argv,  # type: ignore[union-attr]
    )
    assert sockets.holder(free) is not None and sockets.holder(free).pid == pid  # type: ignore[union-attr]
    assert sockets.holder(bound) is None and sockets.holder(peer) is None


def test_psutil_answers_the_same(mixed: tuple[int, list[int]]) -> None:
    _, (listening, bound, free, peer) = mixed
    assert sockets._psutil_holder(listening) == sockets.holder(listening)
    assert sockets._psutil_holder(free) == sockets.holder(free)
    assert sockets._psutil_holder(bound) is None  # a bound TCP socket without a peer
    assert sockets._psutil_holder(peer) is None


def test_one_listener_type(mixed: tuple[int, list[int]]) -> None:
    pid, (listening, _, free, _) = mixed
    mine = {x for x in scan.take().listeners if x.pid == pid}
    assert all(type(x) is sockets.Listener for x in mine)
    assert {(x.port, x.proto) for x in mine} == {(listening, "tcp"), (free, "udp")}
    held = sockets.holder(listening)
    assert held is not None
    assert sockets.Listener(*held[:5]) in mine


def test_records_behave_as_named_tuples() -> None:
    a = sockets.Listener(80, "tcp", "ipv4", "127.0.0.1", None)
    assert a.argv == ()
    assert tuple(a) == (80, "tcp", "ipv4", "127.0.0.1", None, ())
    assert a == sockets.Listener(port=80, proto="tcp", family="ipv4", address="127.0.0.1", pid=None)
    assert repr(a).startswith("Listener(port=80, ") and hash(a) == hash(tuple(a))
    assert sorted([sockets.Unseen(2.0, 1.0), sockets.Unseen(1.0, 5.0)])[0].full_at == 1.0
    with pytest.raises(TypeError):
        sockets.Unseen(1.0)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        sockets.Unseen(1.0, 2.0, nope=3)  # type: ignore[call-arg]
