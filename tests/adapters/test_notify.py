"""Tool-call reports: the datagram format (table and properties), the hook's sending half
(never raises, loads only `_socket`), the daemon's socket, and the in-flight table."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corral.adapters import notify

SRC = Path(__file__).resolve().parent.parent.parent / "src"

ids = st.text(min_size=1, max_size=40).filter(lambda s: "\n" not in s and "\0" not in s)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"corral-tool-call/1",
        b"corral-tool-call/1\nstart\ns",
        b"corral-tool-call/1\nstart\ns\nt\nextra",
        b"corral-tool-call/2\nstart\ns\nt",
        b"corral-tool-call/1\nbegin\ns\nt",
        b"corral-tool-call/1\nstart\n\nt",
        b"corral-tool-call/1\nstart\ns\n",
        b"corral-tool-call/1\nstart\ns\x00\nt",
        b"corral-tool-call/1\nstart\n\xff\xfe\nt",
        b"corral-tool-call/1\nstart\n" + b"s" * 257 + b"\nt",
        b"\n".join([b"corral-tool-call/1", b"end", b"s", b"t"] * 2),
    ],
)
def test_malformed_datagrams_are_ignored(data: bytes) -> None:
    assert notify.parse(data) is None


def test_well_formed_datagrams() -> None:
    assert notify.parse(b"corral-tool-call/1\nstart\nsess\ntoolu_1") == ("start", "sess", "toolu_1")
    assert notify.parse("corral-tool-call/1\nend\nsé\nt".encode()) == ("end", "sé", "t")


@given(st.binary(max_size=600))
def test_parse_never_raises_and_accepts_only_the_contract(data: bytes) -> None:
    found = notify.parse(data)
    if found is not None:
        assert found[0] in notify.PHASES
        assert notify.encode(*found) == data  # only a datagram the sender could have sent


@given(st.sampled_from(notify.PHASES), ids, ids)
def test_what_is_sent_is_read_back(phase: str, session: str, call: str) -> None:
    data = notify.encode(phase, session, call)
    assert data is not None and len(data) <= notify.MAX_DATAGRAM
    assert notify.parse(data) == (phase, session, call)


@given(st.text(max_size=10), st.text(max_size=300), st.text(max_size=300))
def test_encode_never_raises_and_refuses_what_parse_would_drop(
    phase: str, session: str, call: str
) -> None:
    data = notify.encode(phase, session, call)
    assert data is None or notify.parse(data) == (phase, session, call)


def test_tool_call_without_a_daemon_is_a_no_op(corral_home: Path) -> None:
    notify.tool_call(str(corral_home), "start", "s", "t")
    notify.tool_call(str(corral_home / "missing" / "deeper"), "end", "s", "t")
    notify.tool_call("/" + "x" * 200, "start", "s", "t")  # longer than a socket path may be
    notify.tool_call(None, "start", "s", "t")  # type: ignore[arg-type]
    notify.tool_call(str(corral_home), "start", "s\n", "t")  # not sendable: dropped
    assert not (corral_home / notify.EVENTS_NAME).exists()


def test_a_stale_socket_file_is_replaced_and_removed_on_close(corral_home: Path) -> None:
    stale = corral_home / notify.EVENTS_NAME
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as dead:
        dead.bind(str(stale))  # a socket file nobody reads: a dead daemon's
    notify.tool_call(str(corral_home), "start", "s", "t")  # refused there: still no error
    events = notify.Events(str(corral_home))
    try:
        assert stat.S_IMODE(stale.stat().st_mode) == 0o600
        assert stat.S_ISSOCK(stale.stat().st_mode)
        assert events.receive() == []
        notify.tool_call(str(corral_home), "start", "sess", "call-1")
        notify.tool_call(str(corral_home) + "/", "end", "sess", "call-1")
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as other:
            other.sendto(b"garbage", str(stale))
            other.sendto(os.urandom(2000), str(stale))
        assert events.receive() == [("start", "sess", "call-1"), ("end", "sess", "call-1")]
        assert (events.received, events.ignored) == (2, 2)
    finally:
        events.close()
    assert not stale.exists()


def test_a_full_queue_drops_reports_without_waiting(corral_home: Path) -> None:
    events = notify.Events(str(corral_home))
    try:
        for i in range(5000):  # far beyond a datagram socket's queue
            notify.tool_call(str(corral_home), "start", "s", f"t{i}")
        assert 0 < len(events.receive()) < 5000
    finally:
        events.close()


def test_the_hook_path_loads_only_the_c_socket_module(corral_home: Path) -> None:
    events = notify.Events(str(corral_home))
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(SRC)!r})\n"
        "before = set(sys.modules)\n"
        "from corral.adapters import notify\n"
        f"notify.tool_call({str(corral_home)!r}, 'start', 'sess', 'call')\n"
        "print(' '.join(sorted(set(sys.modules) - before)))\n"
    )
    try:
        out = subprocess.run(
            [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True
        ).stdout.split()
        assert set(out) == {"corral", "corral.adapters", "corral.adapters.notify", "_socket"}
        assert events.receive() == [("start", "sess", "call")]
    finally:
        events.close()


def test_the_hook_path_loads_no_socket_module_when_no_daemon_listens(corral_home: Path) -> None:
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(SRC)!r})\n"
        "before = set(sys.modules)\n"
        "from corral.adapters import notify\n"
        f"notify.tool_call({str(corral_home)!r}, 'start', 'sess', 'call')\n"
        "print(' '.join(sorted(set(sys.modules) - before)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert set(out) == {"corral", "corral.adapters", "corral.adapters.notify"}
    assert not (corral_home / notify.EVENTS_NAME).exists()


def test_in_flight_calls_end_expire_and_are_bounded() -> None:
    table = notify.InFlight(expiry=10.0, limit=3)
    table.note("start", "s", "a", now=0.0)
    table.note("start", "s", "b", now=1.0)
    table.note("end", "s", "a", now=2.0)
    table.note("end", "s", "unknown", now=2.0)  # an end without a start changes nothing
    assert table.count(now=2.0) == 1
    assert table.count(now=11.0) == 0  # b started at 1.0 and never ended
    for i in range(5):
        table.note("start", "s", f"c{i}", now=20.0 + i)
    assert table.count(now=25.0) == 3  # only the newest three are kept
    table.note("start", "other", "c4", now=26.0)  # same call id, another session: its own
    assert table.count(now=26.0) == 3  # and the bound still holds
