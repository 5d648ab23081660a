"""Inputs the logs, readiness, names and hook-note code read: total functions, exact
cursors (Hypothesis), and the one-hour window of a failed job in plain `ls`."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corral.adapters.ledger import JobRecord
from corral.errors import CorralError, UsageError
from corral.service import jobs, logs
from corral.service.names import check_name
from corral.service.readiness import parse_spec
from corral.surfaces.claude.started import token_of


@given(st.text())
def test_ready_specs_parse_or_are_usage_errors(text: str) -> None:
    try:
        spec = parse_spec(text)
    except UsageError:
        return
    assert spec.kind in ("port", "http", "log", "none")
    assert parse_spec(str(spec)) == spec  # what is shown reads back the same


@given(st.text())
def test_names_are_plain_or_refused(text: str) -> None:
    try:
        assert check_name(text) == text
    except UsageError:
        return
    assert text.isascii() and " " not in text and "/" not in text and len(text) <= 64


@given(st.binary(max_size=400), st.integers(min_value=0, max_value=50))
def test_cursors_end_each_line_and_the_last_one_ends_the_data(data: bytes, start: int) -> None:
    lines = list(logs._lines(data, start))
    cursors = [line.cursor for line in lines]
    assert cursors == sorted(set(cursors))
    assert (cursors[-1] if cursors else start) == start + len(data)
    for line in lines:  # each cursor is just past a newline or at the end of the data
        at = line.cursor - start
        assert at == len(data) or data[at - 1 : at] == b"\n"


@given(st.text())
def test_token_of_never_raises(command: str) -> None:
    token = token_of(command)
    assert token is None or (len(token) == 32 and token in command)


def _failed_record(ended_ago: float, **extra: object) -> JobRecord:
    now = time.time()
    data = dict(
        id="ab" * 16, pid=1, started_at=None, pgid=1, mode="detached", session=None,
        cwd="/", command="x", digest="d", state="exited", created_at=now - ended_ago - 1,
        exit_code=3, ended_at=now - ended_ago,
    )  # fmt: skip
    data.update(extra)
    return JobRecord(**data)  # type: ignore[arg-type]


def test_a_failed_job_is_shown_for_an_hour_and_a_stopped_one_not() -> None:
    now = time.time()
    assert jobs.recent_failure(_failed_record(60), now)
    assert not jobs.recent_failure(_failed_record(3601), now)
    assert not jobs.recent_failure(_failed_record(60, exit_code=0), now)
    # stopped by request, SIGKILLed after its grace period (as the supervisor records it)
    stopped = _failed_record(
        60, state="killed", exit_code=137, signal=9, stop_requested_at=now - 61
    )
    assert not jobs.recent_failure(stopped, now)
    assert not jobs.recent_failure(_failed_record(60, state="stopped", exit_code=143), now)
    assert jobs.recent_failure(_failed_record(60, exit_code=137, signal=9), now)


def test_trim_never_touches_a_file_that_is_not_corrals(tmp_path: Path) -> None:
    other = tmp_path / "task-output.log"
    other.write_bytes(b"x\n" * 100_000)
    assert logs.trim(str(other), max_bytes=1000) == 0
    assert other.stat().st_size == 200_000


def test_errors_are_corral_errors() -> None:
    with pytest.raises(CorralError):
        jobs.resolve("zz")
