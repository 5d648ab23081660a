"""The floor of a job's log: the size cap's trim (both ways: collapsing blocks in place, and
copying forward where the file system cannot) and the time index."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from corral.lowlevel import joblog

LINE = "line {:05d}\n"


def _write(path: Path, count: int) -> bytes:
    data = "".join(LINE.format(i) for i in range(count)).encode()
    path.write_bytes(data)
    return data


def test_trim_keeps_the_newest_half_of_the_cap_and_counts_what_it_dropped(
    tmp_path: Path,
) -> None:
    log = tmp_path / "job.log"
    data = _write(log, 10000)
    assert joblog.trim(str(log), len(data)) == 0  # at the cap: nothing to do
    cut = joblog.trim(str(log), 20000)
    kept = log.read_bytes()
    assert cut == joblog.dropped_bytes(str(log)) and cut + len(kept) == len(data)
    assert kept == data[cut:] and len(kept) <= 20000


def test_copying_forward_keeps_every_byte_from_the_cut(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    data = _write(log, 5000)
    fd = os.open(log, os.O_RDWR)
    try:
        assert joblog._copy_forward(fd, 12345) == 12345
    finally:
        os.close(fd)
    assert log.read_bytes() == data[12345:]


def test_the_offset_since_a_moment() -> None:
    entries = [(100.0, 0), (101.0, 50), (105.0, 50), (106.0, 90)]
    assert joblog.offset_since(entries, 99.0) == 0  # before the job: all of it
    assert joblog.offset_since(entries, 100.5) == 0
    assert joblog.offset_since(entries, 103.0) == 50  # quiet then: from what came after
    assert joblog.offset_since(entries, 200.0) == 90


@given(st.binary(max_size=400))
def test_reading_any_index_never_raises(data: bytes) -> None:
    import tempfile

    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        entries = joblog.read_times(f.name)
    assert entries is not None
    assert all(isinstance(t, float) and isinstance(o, int) for t, o in entries)
    assert joblog.read_times("/nonexistent/x.times") is None
