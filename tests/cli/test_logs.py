"""`corral logs`: a job's output with byte cursors, following by file events, bounded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import corral, corral_json, wait_for


def _start(line: str, *extra: str) -> str:
    job: str = corral_json("run", "-d", *extra, "-c", line)["data"]["id"]
    return job


def _read(*args: str) -> dict[str, object]:
    data: dict[str, object] = corral_json("logs", *args)["data"]
    return data


def _texts(data: dict[str, object]) -> list[str]:
    return [line["text"] for line in data["lines"]]  # type: ignore[attr-defined]


def test_tail_grep_and_cursor(corral_home: Path) -> None:
    job = _start("seq 1 10; exec sleep 60", "--name", "counter")
    wait_for(lambda: "10" in corral("logs", "counter").stdout, what="ten lines")
    assert corral("logs", "counter", "-n", "2").stdout == "9\n10\n"
    assert corral("logs", job[:6], "--grep", "^1").stdout == "1\n10\n"
    first = _read("counter", "-n", "1")
    assert _texts(first) == ["10"]
    cursor = first["cursor"]
    assert cursor == len("".join(f"{i}\n" for i in range(1, 11)))
    assert _read("counter", "--after", str(cursor))["lines"] == []
    corral("stop", "counter", check=True)


def test_after_cursor_returns_only_what_came_since(corral_home: Path, tmp_path: Path) -> None:
    go = tmp_path / "go"
    job = _start(f"echo one; while [ ! -e {go} ]; do sleep 0.02; done; echo two; echo three")
    first = _read(job)
    assert _texts(first) == ["one"]
    go.touch()
    wait_for(lambda: "three" in corral("logs", job).stdout, what="the rest")
    later = _read(job, "--after", str(first["cursor"]))
    assert _texts(later) == ["two", "three"]


def test_follow_prints_lines_as_written_and_ends_with_the_job(
    corral_home: Path, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    job = _start(f"echo first; while [ ! -e {go} ]; do sleep 0.02; done; echo last")
    follower = subprocess.Popen(
        [sys.executable, "-m", "corral", "logs", "-f", job],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert follower.stdout is not None
    assert follower.stdout.readline() == "first\n"
    go.touch()
    assert follower.stdout.readline() == "last\n"
    assert follower.wait(timeout=30) == 0  # the job ended: so does the follower
    assert follower.stdout.read() == ""
    follower.stdout.close()


def test_task_mode_output_to_a_file_is_read_in_place(corral_home: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    with out.open("w") as f:
        subprocess.run(
            [sys.executable, "-m", "corral", "run", "--name", "task", "-c", "echo in-file"],
            stdout=f,
            check=True,
        )
    job = next(j for j in corral_json("ls", "--all")["data"] if j["name"] == "task")
    assert job["log"] == str(out)
    assert corral("logs", "task").stdout == "in-file\n"
    kept = [p.name for p in (corral_home / "logs").iterdir()]
    assert kept == [f"{job['id']}.times"]  # not a byte copied: only when each was written


def test_output_to_a_pipe_keeps_no_log(corral_home: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "corral", "run", "--name", "piped", "-c", "echo x"],
        stdout=subprocess.PIPE,
        check=True,
    )
    result = corral("logs", "piped")
    assert result.returncode == 1
    assert "keeps no log: its output went to a terminal or a pipe" in result.stderr


def test_logs_are_bounded_and_cursors_survive_the_trim(corral_home: Path) -> None:
    (corral_home / "config.toml").write_text("[logs]\nmax_bytes = 65536\n")
    line = "for i in $(seq 1 3000); do printf 'line %05d %s\\n' $i 0123456789012345678901; done"
    job = _start(line + "; exec sleep 60")
    wait_for(lambda: "line 03000" in corral("logs", job, "-n", "1").stdout, what="all lines")
    data = _read(job)
    log = Path(str(data["log"]))
    assert log.stat().st_size <= 65536
    assert int(str(data["dropped_bytes"])) > 0
    texts = _texts(data)
    assert texts[-1].startswith("line 03000") and texts[0].startswith("line ")
    numbers = [int(t.split()[1]) for t in texts]
    assert numbers == list(range(numbers[0], 3001))  # the oldest dropped, nothing cut inside
    assert data["cursor"] == 3000 * len("line 00001 0123456789012345678901\n")
    old = _read(job, "--after", "0")
    assert old["missed"] is True
    corral("stop", job, check=True)


def test_clean_removes_the_log(corral_home: Path) -> None:
    corral("run", "-d", "-c", "echo gone; exit 2")
    assert list((corral_home / "logs").iterdir())
    corral("clean", check=True)
    assert not list((corral_home / "logs").iterdir())


def test_unknown_job() -> None:
    result = corral("logs", "nosuchjob")
    assert result.returncode == 1 and "no job matches" in result.stderr


def test_logs_show_the_jobs_own_bytes(corral_home: Path) -> None:
    job = _start("printf 'caf\\351\\r\\nok\\n'; exit 1")  # octal: dash's printf has no \\x
    raw = subprocess.run(
        [sys.executable, "-m", "corral", "logs", job], capture_output=True, check=True
    ).stdout
    assert raw == b"caf\xe9\r\nok\n"
    assert _texts(_read(job)) == ["caf\ufffd\r", "ok"]
