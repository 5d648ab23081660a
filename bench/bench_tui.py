"""The control room's benchmarks (`corral tui`), each figure beside its target and the ratio
(≤ 1 is good), measured in the same run:

    .venv/bin/python -m bench.bench_tui [--quick]

- first paint with 200 jobs: from starting a new Python process to the table drawn with the
  200 jobs (imports, the board, the table; Textual headless), with no daemon (a snapshot
  taken in the process) and with the daemon running (its board over the Unix socket);
- CPU while open and idle: `corral tui` in a real terminal (tmux) with the 200 jobs, the
  daemon refreshing it once a second: the tui's process, and the tui plus the daemon.
Nothing here asserts.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._report import row

ROOT = Path(__file__).resolve().parent.parent
SUPERVISOR = ROOT / "src" / "corral" / "supervisor" / "launcher.py"
JOBS = 200

# Run in a new process: prints the seconds from `start` (the parent's clock before it
# started this process) to the first board drawn with every job.
PAINT = """
import asyncio, sys, time
from pathlib import Path
from corral.surfaces.tui.app import ControlRoom
from corral.surfaces.tui.feed import LiveFeed
start, jobs, daemon = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "daemon"
feed = LiveFeed(Path.cwd(), use_daemon=daemon)
feed.connect = lambda: None  # measured here: the first board, not a daemon's start
app = ControlRoom(feed, folder=Path.cwd(), refresh_every=None)
async def main():
    async with app.run_test(size=(160, 50)) as pilot:
        while sum(1 for r in app.rows.values() if r.kind == "job") < jobs:
            await pilot.pause(0.002)
        print(time.time() - start, feed.source)
asyncio.run(main())
"""


def start_jobs(count: int, folder: Path) -> list[subprocess.Popen[bytes]]:
    procs = []
    for _ in range(count):
        token = os.urandom(16).hex()
        argv = [sys.executable, "-I", "-S", str(SUPERVISOR), "--job", token, "--detached"]
        procs.append(
            subprocess.Popen([*argv, "--", "sleep 100000"], stdout=subprocess.DEVNULL, cwd=folder)
        )
    ledger = Path(os.environ["CORRAL_HOME"]) / "ledger"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(list(ledger.glob("*.json"))) < count:
        time.sleep(0.01)
    time.sleep(0.3)
    return procs


def first_paint(folder: Path, daemon: bool) -> float:
    start = time.time()
    out = subprocess.run(
        [sys.executable, "-c", PAINT, repr(start), str(JOBS), "daemon" if daemon else "direct"],
        cwd=folder, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    want = "daemon" if daemon else "snapshots"
    assert out[1] == want, f"the board came from {out[1:]}, not the {want}"
    return float(out[0]) * 1000


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu(folder: Path, seconds: float) -> tuple[float, float]:
    """% of a core used by `corral tui` (and by it with the daemon) while open and idle."""
    from corral.surfaces import daemon

    socket = f"corral-bench-{os.urandom(4).hex()}"
    argv = ["env", "-u", "COLUMNS", "-u", "LINES", sys.executable, "-m", "corral", "tui"]
    subprocess.run(
        ["tmux", "-L", socket, "new-session", "-d", "-x", "160", "-y", "50",
         "-e", f"CORRAL_HOME={os.environ['CORRAL_HOME']}", "-c", str(folder),
         "exec " + shlex.join(argv)],
        check=True,
    )  # fmt: skip
    try:
        pane_pid = subprocess.run(
            ["tmux", "-L", socket, "list-panes", "-F", "#{pane_pid}"],
            capture_output=True, text=True, check=True,
        ).stdout.split()[0]  # fmt: skip
        deadline = time.monotonic() + 60
        while "via daemon" not in _screen(socket) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(3.0)  # start-up settles
        found = daemon.health()
        assert found is not None, "the tui started no daemon"
        tui, served = int(pane_pid), int(found["pid"])
        before = cpu_seconds(tui), cpu_seconds(served)
        time.sleep(seconds)
        after = cpu_seconds(tui), cpu_seconds(served)
        alone = (after[0] - before[0]) / seconds * 100
        both = alone + (after[1] - before[1]) / seconds * 100
        return alone, both
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], check=False)
        found = daemon.health()
        if found is not None:
            os.kill(found["pid"], signal.SIGTERM)


def _screen(socket: str) -> str:
    return subprocess.run(
        ["tmux", "-L", socket, "capture-pane", "-p"], capture_output=True, text=True, check=False
    ).stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs (for a smoke check)")
    args = parser.parse_args()
    runs = 3 if args.quick else 7
    idle = 5.0 if args.quick else 20.0
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as folder:
        os.environ["CORRAL_HOME"] = home
        os.environ["SHELL"] = "/bin/sh"
        procs = start_jobs(JOBS, Path(folder))
        try:
            direct = [first_paint(Path(folder), daemon=False) for _ in range(runs)]
            subprocess.run([sys.executable, "-m", "corral", "daemon", "--ensure"],
                           capture_output=True, check=True)  # fmt: skip
            served = [first_paint(Path(folder), daemon=True) for _ in range(runs)]
            alone, both = idle_cpu(Path(folder), idle)
        finally:
            for p in procs:  # a supervisor leads its job's group: the job goes with it
                os.killpg(p.pid, signal.SIGKILL)
            for p in procs:
                p.wait()
        print(f"corral tui benchmarks ({'quick' if args.quick else 'full'} run, {JOBS} jobs)")
        row("first paint, no daemon (a snapshot here), median", statistics.median(direct),
            400, "ms")  # fmt: skip
        row("first paint, the daemon running, median", statistics.median(served), 400, "ms")
        row(f"CPU while open and idle, the tui ({idle:g} s)", alone, 2, "%")
        row(f"CPU while open and idle, the tui and the daemon ({idle:g} s)", both, 2, "%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
