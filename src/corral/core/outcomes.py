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
    UNSUPERVISED = record.UNSUPERVISED
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


def failed(state: str, exit_code: int | None, signal: int | None) -> bool:
    """A job that ended on its own with a non-zero code or by a signal: what every surface
    marks as failed. A job ending on its own is `exited` (by a signal too); one stopped by
    request is `stopped`, or `killed` when it outlived its grace period and was SIGKILLed."""
    return state == JobState.EXITED and bool(exit_code or signal)


# The floor's table (the supervisor checks it too), as JobStates.
TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    JobState(state): frozenset(JobState(m) for m in moves)
    for state, moves in record.TRANSITIONS.items()
}
IllegalTransition = record.IllegalTransition


def transition(job_id: str, current: JobState, new: JobState) -> JobState:
    """Check one move of a job's state; raise naming the job, its state and the allowed moves."""
    return JobState(record.transition(job_id, current.value, new.value))
