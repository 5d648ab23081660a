"""What a stop did to each target, and the job states a listing shows."""

from __future__ import annotations

import enum

from corral.lowlevel import record


class StopResult(enum.StrEnum):
    """Per-target outcome of a stop. Only the first two are success."""

    TERMINATED = "terminated"
    ALREADY_EXITED = "already_exited"
    IDENTITY_MISMATCH = "identity_mismatch"
    FAILED = "failed"
    UNPROVEN = "unproven"

    @property
    def ok(self) -> bool:
        return self in (StopResult.TERMINATED, StopResult.ALREADY_EXITED)


class JobState(enum.StrEnum):
    """A job's state. The ledger records running, stopping and the three final ones (the
    values are lowlevel.record's); `unsupervised` is observed, never recorded: the supervisor
    died (SIGKILL) while processes of the job still run."""

    RUNNING = record.RUNNING
    STOPPING = record.STOPPING
    UNSUPERVISED = "unsupervised"
    STOPPED = record.STOPPED
    EXITED = record.EXITED
    KILLED = record.KILLED

    @property
    def final(self) -> bool:
        return self.value in record.STATES_FINAL

    @property
    def live(self) -> bool:
        """Processes of the job still run (supervised or not)."""
        return not self.final


LIVE_STATES = frozenset(s.value for s in JobState if s.live)


# The moves a job's state may make; anything else is a bug in whoever reported it.
TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    JobState.RUNNING: frozenset(
        {JobState.STOPPING, JobState.EXITED, JobState.KILLED, JobState.UNSUPERVISED}
    ),
    JobState.STOPPING: frozenset(
        {JobState.STOPPED, JobState.KILLED, JobState.EXITED, JobState.UNSUPERVISED}
    ),
    JobState.UNSUPERVISED: frozenset({JobState.STOPPED, JobState.KILLED}),
    JobState.STOPPED: frozenset(),
    JobState.EXITED: frozenset(),
    JobState.KILLED: frozenset(),
}


class IllegalTransition(ValueError):
    pass


def transition(job_id: str, current: JobState, new: JobState) -> JobState:
    """Check one move of a job's state; raise naming the job, its state and the allowed moves."""
    if new == current or new in TRANSITIONS[current]:
        return new
    allowed = ", ".join(sorted(TRANSITIONS[current])) or "none (final)"
    raise IllegalTransition(
        f"job {job_id}: cannot go from {current} to {new}; allowed from {current}: {allowed}"
    )
