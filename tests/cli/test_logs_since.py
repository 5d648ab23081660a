"""`corral logs --since`, and the size cap kept while the job writes: both from the
supervisor's watch of the job's log (a sparse time index, one entry a second at most)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import LAUNCHER, alive, corral, corral_json, wait_for

# old lines, a quiet spell longer than --since plus the index's one-second grain, then new
# lines for as long as the test needs them
WRITER = "echo old-1; echo old-2; sleep 4; while :; do echo new; sleep 0.2; done"


def _detached(tmp_path: Path) -> tuple[str, subprocess.Popen[bytes] | None]:
    job: str = corral_json("run", "-d", "-c", WRITER)["data"]["id"]
    return job, None


def _task(tmp_path: Path) -> tuple[str, subprocess.Popen[bytes] | None]:
    """A task-mode job whose output goes to a regular file (as Claude Code's task file)."""
    out = open(tmp_path / "task-output.txt", "wb")  # noqa: SIM115 - the job holds it
    task = subprocess.Popen(
        [sys.executable, "-I", "-S", str(LAUNCHER), "--task", "--", WRITER],
        stdin=subprocess.DEVNULL, stdout=out, stderr=out,
    )  # fmt: skip
    out.close()
    rows = wait_for(lambda: corral_json("ls")["data"], what="the task-mode job listed")
    job: str = rows[0]["id"]
    return job, task


@pytest.mark.parametrize("start", [_detached, _task], ids=["detached", "task"])
def test_since_shows_only_lines_written_since(start: object, tmp_path: Path) -> None:
    job, task = start(tmp_path)  # type: ignore[operator]
    wait_for(lambda: "new" in corral("logs", job).stdout, timeout=30, what="the new lines")
    recent = corral("logs", job, "--since", "2s")
    assert recent.returncode == 0, recent.stderr
    lines = recent.stdout.splitlines()
    assert lines and set(lines) == {"new"}, recent.stdout
    assert corral("logs", job, "--since", "1m").stdout.startswith("old-1\nold-2\nnew\n")
    data = corral_json("logs", job, "--since", "2s")["data"]
    assert {line["text"] for line in data["lines"]} == {"new"}, data
    corral("stop", job, check=True)
    if task is not None:
        task.wait(timeout=30)


def test_since_takes_a_time_and_refuses_what_is_neither(tmp_path: Path) -> None:
    job, _ = _detached(tmp_path)
    wait_for(lambda: "old-2" in corral("logs", job).stdout, what="the first lines")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() + 3600))
    assert corral("logs", job, "--since", stamp).stdout == ""  # an hour from now
    assert corral("logs", job, "--since", "2000-01-01T00:00").stdout.startswith("old-1\n")
    bad = corral("logs", job, "--since", "yesterday")
    assert bad.returncode == 2
    assert "--since takes a duration (30s, 5m, 2h) or a time (2026-01-31T14:05)" in bad.stderr
    corral("stop", job, check=True)


def test_the_cap_holds_while_the_job_writes_and_nobody_reads(
    corral_home: Path, tmp_path: Path
) -> None:
    (corral_home / "config.toml").write_text("[logs]\nmax_bytes = 65536\n")
    done = tmp_path / "done"
    line = "for i in $(seq 1 40000); do printf 'line %05d 0123456789012345678901\\n' $i; done"
    job = _detached_line(f"{line}; touch {done}; exec sleep 60")
    log = corral_home / "logs" / f"{job}.log"
    wait_for(done.exists, timeout=60, what="the job's last write")
    wait_for(lambda: log.stat().st_size <= 65536, what="the log back under its cap")
    text = log.read_bytes().decode()
    numbers = [int(row.split()[1]) for row in text.splitlines()[1:]]  # the first may be cut
    assert numbers == list(range(numbers[0], 40001))  # the newest kept, nothing lost inside
    dropped = int((corral_home / "logs" / f"{job}.dropped").read_text())
    assert dropped + log.stat().st_size == 40000 * len("line 00001 0123456789012345678901\n")
    corral("stop", job, check=True)


def _detached_line(line: str) -> str:
    job: str = corral_json("run", "-d", "-c", line)["data"]["id"]
    return job


def test_the_index_is_sparse(corral_home: Path, tmp_path: Path) -> None:
    """One entry a second at most while the job writes, however much it writes."""
    done = tmp_path / "done"
    line = f"i=0; while [ $i -lt 3000 ]; do echo $i; i=$((i+1)); done; touch {done}"
    started = corral_json("run", "-d", "-c", line)["data"]
    job, supervisor = started["id"], started["pid"]
    wait_for(done.exists, what="the writes")
    times = corral_home / "logs" / f"{job}.times"
    # The supervisor removes its stop channel before it ends, not as it ends: the test waits
    # for the process itself (the teardown fails a test whose supervisor is still alive).
    wait_for(lambda: not alive(supervisor), what="its end")
    entries = [row.split() for row in times.read_text().splitlines()]
    seconds = [float(t) for t, _ in entries]
    assert seconds == sorted(seconds)
    span = seconds[-1] - seconds[0]
    assert len(entries) <= 2 * (span + 2), entries  # a start, and ≤ 2 a second after it


def test_a_job_without_an_index_says_since_cannot_be_answered(
    corral_home: Path, tmp_path: Path
) -> None:
    from tests.helpers import ledger_record

    log = tmp_path / "out.log"
    log.write_text("one\ntwo\n")
    job = ledger_record(corral_home, log=str(log))
    assert corral("logs", job[:8]).stdout == "one\ntwo\n"
    answer = corral("logs", job[:8], "--since", "5m")
    assert answer.returncode == 1, answer.stderr
    assert (
        f"job {job[:8]} has no record of when its output was written (its supervisor kept "
        "none: the tmux backend, an older corral, or the user's inotify instances ran out); "
        "--since cannot be answered, -n can"
    ) in answer.stderr


def test_since_reads_durations_and_times() -> None:
    from datetime import datetime

    from corral.cli.logs import since_seconds

    now = 1_800_000_000.0
    assert since_seconds("30s", now) == now - 30
    assert since_seconds("90", now) == now - 90
    assert since_seconds("1.5m", now) == now - 90
    assert since_seconds("2h", now) == now - 7200
    assert since_seconds("1d", now) == now - 86400
    assert since_seconds("2026-01-31T14:05", now) == datetime(2026, 1, 31, 14, 5).timestamp()
    today = datetime.fromtimestamp(now).replace(hour=9, minute=30, second=0, microsecond=0)
    assert since_seconds("09:30", now) == today.timestamp()


@given(st.text(max_size=40))
def test_since_never_fails_but_as_a_usage_error(text: str) -> None:
    from corral.cli.logs import since_seconds
    from corral.errors import UsageError

    try:
        assert isinstance(since_seconds(text, 1_800_000_000.0), float)
    except UsageError:
        pass
