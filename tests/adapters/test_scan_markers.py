"""The session markers the snapshot keeps from each process's environment: every marker
variable, read from real processes and, as Hypothesis draws them, from any environment bytes."""

from __future__ import annotations

import os
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corral.adapters import scan
from tests.helpers import execed, wait_for


def _reference(raw: bytes) -> dict[str, str]:
    """The markers as a plain parse of the environment finds them: entries split at NUL, the
    first entry of each marker's name wins."""
    found: dict[str, str] = {}
    for entry in raw.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        key = name.decode("utf-8", "replace")
        if sep and key in scan.MARKERS and key not in found:
            found[key] = value.decode("utf-8", "replace")
    return found


@pytest.mark.parametrize("name", scan.MARKERS)
def test_each_marker_alone_is_kept(name: str) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), name: "v-1"}
    child = subprocess.Popen(["sleep", "60"], env=env)
    try:
        wait_for(lambda: execed(child), what="exec")
        assert scan.take().procs[child.pid].markers == {name: "v-1"}
    finally:
        child.kill()
        child.wait()


_NAMES = st.sampled_from([*scan.MARKERS, "PATH", "CORRAL_HOME", "CLAUDE_X", "XCORRAL_JOB", ""])
_ENTRY = st.one_of(
    st.tuples(_NAMES, st.binary(max_size=12)).map(lambda nv: nv[0].encode() + b"=" + nv[1]),
    st.binary(max_size=20),
)


@given(st.lists(_ENTRY, max_size=12), st.booleans())
def test_markers_match_a_plain_parse_of_any_environment(entries: list[bytes], end: bool) -> None:
    raw = b"\0".join(entries) + (b"\0" if end and entries else b"")
    assert scan._markers(raw) == _reference(raw)
