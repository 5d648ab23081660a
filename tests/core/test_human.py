"""Numbers and states as people read them: the CLI's tables and the tui share these."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from corral.core.human import human_age, human_bytes, job_state


def test_ages_exact_and_in_whole_minutes() -> None:
    cases = [(0, "0s", "0s"), (59.9, "59s", "59s"), (60, "1m00s", "1m"), (578, "9m38s", "9m"),
             (7500, "2h05m", "2h05m"), (93600, "1d02h", "1d02h")]  # fmt: skip
    for seconds, exact, coarse in cases:
        assert (human_age(seconds), human_age(seconds, exact=False)) == (exact, coarse)


@given(st.floats(min_value=60, max_value=3599))
def test_an_age_in_whole_minutes_is_the_exact_one_without_its_seconds(seconds: float) -> None:
    assert human_age(seconds).startswith(human_age(seconds, exact=False))


def test_bytes_and_states() -> None:
    assert [human_bytes(n) for n in (512, 30 * 1024 * 1024)] == ["512B", "30.0M"]
    assert job_state("exited", 1, None, failed=True) == "failed (1)"
    assert job_state("killed", None, 9, failed=True) == "killed"
    assert job_state("stopped", 143, None, failed=False) == "stopped (143)"
    assert job_state("running", None, None, failed=False) == "running"
