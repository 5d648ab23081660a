"""A failed job is one fact (core.outcomes.failed): the job's row (`JobView.failed`, what
`corral ls` shows), the tui's row, its heading's count and its red all say the same for
every state, exit code and signal."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from corral.core.outcomes import JobState
from corral.service.jobs import JobView
from corral.surfaces.tui.app import _style
from corral.surfaces.tui.rows import job_row, summary


def _view(state: str, exit_code: int | None, signal: int | None) -> JobView:
    return JobView(id="f" * 32, pid=7, started_at="b:1", state=state, mode="detached",
                   session=None, cwd="/srv/app", command="npm run dev", ports=[], processes=0,
                   cpu_percent=0.0, rss_bytes=0, age_seconds=3.0, exit_code=exit_code,
                   ended_at=None if state in ("running", "stopping") else 1.0,
                   signal=signal)  # fmt: skip


@given(
    st.sampled_from([s.value for s in JobState]),
    st.none() | st.integers(0, 255),
    st.none() | st.integers(1, 64),
)
def test_every_surface_of_the_tui_says_failed_as_the_job_does(
    state: str, exit_code: int | None, signal: int | None
) -> None:
    view = _view(state, exit_code, signal)
    data = {**view.to_json(), "project": "/srv/app"}
    row = job_row(data)
    assert row.failed is view.failed
    board = {"project": "/srv/app", "jobs": [data], "unsupervised": []}
    assert (" · 1 failed" in summary(board)) is view.failed
    assert (_style(row) == "red") is view.failed


def test_the_words_of_a_failure() -> None:
    assert job_row({**_view("exited", 3, None).to_json(), "project": "/p"}).cells[1] == (
        "failed (3)"
    )
    # killed by a signal on its own: the supervisor records `exited` with the signal
    assert job_row({**_view("exited", 137, 9).to_json(), "project": "/p"}).cells[1] == "killed"
    # stopped by request, SIGKILLed after its grace period: not a failure
    stopped = job_row({**_view("killed", 137, 9).to_json(), "project": "/p"})
    assert stopped.cells[1] == "killed (137)" and not stopped.failed and _style(stopped) == "dim"
    # killed without a signal recorded (its supervisor ended without saying how): not a
    # failure the job reported, shown as its state, not red
    quiet = job_row({**_view("killed", None, None).to_json(), "project": "/p"})
    assert quiet.cells[1] == "killed" and not quiet.failed and _style(quiet) == "dim"
