"""Job states and their transition table: every state has its row, final states are final,
and an illegal move raises naming the job, its state and the allowed moves."""

from __future__ import annotations

import pytest

from corral.core.outcomes import LIVE_STATES, TRANSITIONS, IllegalTransition, JobState, transition
from corral.lowlevel import record


def test_every_state_has_its_row_and_final_states_are_final() -> None:
    assert set(TRANSITIONS) == set(JobState)
    for state in JobState:
        assert (not TRANSITIONS[state]) == state.final, state
    assert {s.value for s in JobState if s.final} == set(record.STATES_FINAL)
    assert {"running", "stopping", "unsupervised"} == LIVE_STATES


@pytest.mark.parametrize(
    ("current", "new"),
    [
        (JobState.RUNNING, JobState.UNSUPERVISED),  # its supervisor was SIGKILLed
        (JobState.STOPPING, JobState.UNSUPERVISED),
        (JobState.UNSUPERVISED, JobState.STOPPED),  # its processes stopped one by one
        (JobState.UNSUPERVISED, JobState.KILLED),  # nothing of it was left
        (JobState.RUNNING, JobState.RUNNING),
    ],
)
def test_allowed_moves(current: JobState, new: JobState) -> None:
    assert transition("j1", current, new) is new


@pytest.mark.parametrize(
    ("current", "new"),
    [
        (JobState.STOPPED, JobState.RUNNING),
        (JobState.EXITED, JobState.UNSUPERVISED),
        (JobState.UNSUPERVISED, JobState.RUNNING),
        (JobState.UNSUPERVISED, JobState.EXITED),
    ],
)
def test_illegal_moves_raise_with_what_is_allowed(current: JobState, new: JobState) -> None:
    with pytest.raises(IllegalTransition) as caught:
        transition("job-7", current, new)
    text = str(caught.value)
    assert "job-7" in text and str(current) in text and str(new) in text and "allowed" in text
