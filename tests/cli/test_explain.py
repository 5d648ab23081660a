"""`corral explain`'s human text says what happens to a line and why."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import corral


def test_a_job_sent_to_the_background_mid_line_is_said_to_run_as_written(tmp_path: Path) -> None:
    out = corral("explain", "--", "npm run dev & sleep 1; echo hi", cwd=tmp_path).stdout
    assert out.startswith("untouched: it runs as written")
    assert "only when `&` ends the line" in out
    assert "no long-running job" not in out  # it has one: it is listed below
    assert "job: npm run dev" in out


def test_a_plain_line_has_no_job(tmp_path: Path) -> None:
    out = corral("explain", "--", "ls -la", cwd=tmp_path).stdout
    assert out == "untouched: no long-running job to supervise; it runs as written.\n"


def test_a_trailing_ampersand_is_supervised(tmp_path: Path) -> None:
    out = corral("explain", "--", "npm run dev &", cwd=tmp_path).stdout
    assert out.startswith("supervised (detached mode).")
