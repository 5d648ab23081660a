"""Storage failures (issue 11, point 7): a corrupt or full database, a full or unwritable
ledger folder. Each is one clear line (what failed, where, what to do) with exit status 1,
never a traceback; `run -d` that cannot supervise starts nothing; a job whose end could
not be recorded is not called `killed`; `clean` removes the litter such failures leave.

Tests run as root, and root ignores file modes: a chmod'ed folder is no test. The
conditions used bind root too: a file where the ledger folder should be (ENOTDIR, always
available), and a tiny tmpfs mounted on CORRAL_HOME and filled up (ENOSPC; needs
CAP_SYS_ADMIN, so those tests skip where mount is refused).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import corral, ledger_record, pids_with_env, wait_for


def _one_clear_line(result: subprocess.CompletedProcess[str], *words: str) -> str:
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def _fill(folder: Path) -> None:
    """Fill the file system holding `folder` to the last byte."""
    block = b"\0" * 65536
    with open(folder / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(block)
        except OSError:
            pass
        try:
            while True:
                f.write(b"\0")
        except OSError:
            pass


@pytest.fixture
def tiny_home(corral_home: Path) -> Iterator[Path]:
    """CORRAL_HOME on a 1 MB tmpfs of its own (unmounted lazily: jobs may hold files)."""
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(corral_home)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield corral_home
    finally:
        subprocess.run(["umount", "-l", str(corral_home)], check=True)


def test_a_corrupt_database_is_one_clear_line_from_clean_and_audit(corral_home: Path) -> None:
    (corral_home / "corral.sqlite3").write_bytes(os.urandom(8192))
    ledger_record(corral_home)  # clean archives it into the database
    line = _one_clear_line(corral("clean"), "corral.sqlite3", "corral doctor --fix")
    assert line.startswith("corral clean: ")
    _one_clear_line(corral("audit"), "corral.sqlite3", "corral doctor --fix")


def test_a_full_database_is_one_clear_line(tiny_home: Path) -> None:
    (tiny_home / "ledger").mkdir(mode=0o700)
    ledger_record(tiny_home)
    _fill(tiny_home)
    _one_clear_line(corral("clean"), "corral.sqlite3", "full")


def test_run_d_that_cannot_write_the_ledger_starts_nothing(
    corral_home: Path, tmp_path: Path
) -> None:
    (corral_home / "ledger").write_text("a file where the ledger folder should be")
    marker = tmp_path / "ran"
    line = f"touch {marker}; sleep 300"
    _one_clear_line(corral("run", "-d", "-c", line), "ledger", "--allow-unsupervised")
    time.sleep(0.5)
    assert not marker.exists()
    json_out = corral("run", "-d", "--json", "-c", line)
    assert json_out.returncode == 1
    envelope = json.loads(json_out.stdout)
    assert envelope["data"] is None and "cannot supervise" in envelope["errors"][0]
    allowed = corral("run", "-d", "--allow-unsupervised", "-c", f"touch {marker}")
    assert allowed.returncode == 0, allowed.stderr
    assert "started unsupervised" in allowed.stdout
    wait_for(marker.exists)
    # The marker is there as soon as `touch` makes it; its shell may still be ending (CI saw it
    # alive at teardown). Nothing supervises it, so the test waits for it to be gone.
    wait_for(lambda: not pids_with_env(f"CORRAL_HOME={corral_home}".encode()), what="its end")


def test_run_d_on_a_full_ledger_starts_nothing_and_leaves_no_litter(
    tiny_home: Path, tmp_path: Path
) -> None:
    (tiny_home / "ledger").mkdir(mode=0o700)
    (tiny_home / "logs").mkdir(mode=0o700)
    _fill(tiny_home)
    marker = tmp_path / "ran"
    _one_clear_line(corral("run", "-d", "-c", f"touch {marker}; sleep 300"), "ledger")
    time.sleep(0.5)
    assert not marker.exists()
    assert [p.name for p in (tiny_home / "ledger").iterdir()] == []


def test_a_job_whose_end_could_not_be_recorded_is_not_called_killed(
    tiny_home: Path, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    started = corral("run", "-d", "--json", "-c", f"while [ ! -e {go} ]; do sleep 0.05; done")
    job = json.loads(started.stdout)["data"]
    assert job["supervised"], started.stderr
    _fill(tiny_home)
    go.touch()
    wait_for(lambda: not Path(f"/proc/{job['pid']}").exists())
    listed = json.loads(corral("ls", "--all", "--json").stdout)["data"]
    (view,) = [j for j in listed if j["id"] == job["id"]]
    assert view["state"] == "exited", view
    assert "could not record" in view["note"], view
    # its litter: the 0-byte temp file of the failed write is gone with the supervisor
    assert not list((tiny_home / "ledger").glob(".*.tmp"))


def test_clean_removes_litter_and_keeps_what_a_live_job_uses(corral_home: Path) -> None:
    ledger = corral_home / "ledger"
    ledger.mkdir(mode=0o700)
    live = json.loads(corral("run", "-d", "--json", "-c", "sleep 300").stdout)["data"]
    old = time.time() - 3600
    temp = ledger / f".{uuid.uuid4().hex}.4194304.tmp"  # a writer that is gone
    temp.touch()
    orphan_fifo = ledger / f"{uuid.uuid4().hex}.stop"  # no record: its supervisor ran unsupervised
    os.mkfifo(orphan_fifo)
    for litter in (temp, orphan_fifo):
        os.utime(litter, (old, old))
    cleaned = corral("clean")
    assert cleaned.returncode == 0, cleaned.stderr
    assert "removed 2 leftover file(s)" in cleaned.stdout
    assert not temp.exists() and not orphan_fifo.exists()
    assert (ledger / f"{live['id']}.stop").exists() and (ledger / f"{live['id']}.json").exists()
    corral("stop", live["id"], check=True)


def test_run_d_on_a_read_only_ledger_starts_nothing(tiny_home: Path, tmp_path: Path) -> None:
    """A read-only file system binds root too (a chmod would not)."""
    (tiny_home / "ledger").mkdir(mode=0o700)
    (tiny_home / "logs").mkdir(mode=0o700)
    subprocess.run(["mount", "-o", "remount,ro", str(tiny_home)], check=True)
    marker = tmp_path / "ran"
    run = corral("run", "-d", "-c", f"touch {marker}")
    _one_clear_line(run, "nothing was started", "Read-only file system", str(tiny_home))
    time.sleep(0.5)
    assert not marker.exists()


def test_an_unreadable_ledger_folder_is_one_clear_line_everywhere(corral_home: Path) -> None:
    (corral_home / "ledger").write_text("a file where the ledger folder should be")
    for command in (["ls"], ["stop", "--all"], ["clean"], ["procs"]):
        _one_clear_line(corral(*command), "cannot read the ledger folder", "corral doctor")
    doctor = corral("doctor")
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr
    assert f"{corral_home / 'ledger'} is not a folder" in doctor.stdout
