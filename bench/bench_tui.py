"""The control room's benchmarks (`corral tui`), each figure beside its target and the ratio
(≤ 1 is good), measured in the same run:

    .venv/bin/python -m bench.bench_tui [--quick]

- first paint with 200 jobs (20 of them listening on a port): `corral tui` started as a
  person starts it, in a new process, from the parent's clock before starting it to the
  first frame written with the 200 jobs and the 20 ports (bench.tui_clock: Textual renders
  every frame as for a terminal, to nowhere); with no daemon (`--no-daemon`: the jobs are
  read in the process, the rest of the board after the first frame) and with the daemon
  running (its board over the Unix socket). Beside it, the time to the first frame drawn
  from the whole board (the other processes of agent sessions, the orphans, the listeners);
- CPU while open and idle: the tui's own work with 200 jobs when nothing changes (their
  rows fed in the process, Textual headless); and `corral tui` in a real terminal (tmux)
  with the 200 jobs, the daemon serving it a board once a second: the tui's process, and
  the tui plus the daemon. Measured once every job is older than a minute: ages are shown
  in seconds for a job's first minute, and 200 of them counting would be the screen
  changing every second, not idle. These two also count this machine's other processes
  of agent sessions (the tui lists them), which come and go while other suites run.
Nothing here asserts.
"""

from __future__ import annotations

import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from bench import _report
from bench._report import row
from bench.bench_scan import ROOT, SUPERVISOR

JOBS = 200
LISTENING = 20  # of the jobs, those that listen on a port (a dev server's)
LISTEN = "exec python3 -m http.server 0 --bind 127.0.0.1"


def start_jobs() -> list[subprocess.Popen[bytes]]:
    """JOBS jobs under corral's supervisor, the last LISTENING of them listening on a port,
    once all are in the ledger and listening."""
    from corral.service import jobs

    procs = []
    for i in range(JOBS):
        line = LISTEN if i >= JOBS - LISTENING else "sleep 100000"
        argv = [sys.executable, "-I", "-S", str(SUPERVISOR), "--job", os.urandom(16).hex(),
                "--detached", "--", line]  # fmt: skip
        procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        listed = jobs.list_jobs(cpu_interval=0).jobs
        if len(listed) == JOBS and sum(1 for j in listed if j.ports) == LISTENING:
            break
        time.sleep(0.2)
    else:
        raise RuntimeError("the jobs did not all start (and listen) within a minute")
    return procs


def first_paint(folder: Path, daemon: bool) -> tuple[float, float, float]:
    """`corral tui` started as a person starts it (a new process; with `--no-daemon` when
    `daemon` is False), headless but rendering every frame (bench.tui_clock): milliseconds
    to the first frame with every job and the listening jobs' ports; the CPU milliseconds
    the process and the processes it waited for spent until then (less sensitive to the
    machine's load than the wait); milliseconds to the first frame after the whole board
    (processes, listeners) came."""
    with tempfile.NamedTemporaryFile("r") as out:
        env = {**os.environ, "TEXTUAL_DRIVER": "bench.tui_clock:PaintClock",
               "CORRAL_BENCH_START": repr(time.time()), "CORRAL_BENCH_OUT": out.name,
               "CORRAL_BENCH_JOBS": str(JOBS), "CORRAL_BENCH_PORTS": str(LISTENING),
               "COLUMNS": "160", "LINES": "50", "PYTHONPATH": str(ROOT)}  # fmt: skip
        argv = [sys.executable, "-m", "corral", "tui", *([] if daemon else ["--no-daemon"])]
        subprocess.run(argv, cwd=folder, env=env, stdin=subprocess.DEVNULL,
                       capture_output=True, check=True, timeout=60)  # fmt: skip
        first, cpu, whole, source = out.read().split(maxsplit=3)
    want = "daemon" if daemon else "snapshots"
    assert source.startswith(want), f"the board came from {source}, not the {want}"
    return float(first), float(cpu), float(whole)


# Run in a new process: the % of a core the tui's own work takes (its timer, reading and
# comparing the board, drawing) while nothing changes: 200 jobs whose ages move on, fed in
# the process (no daemon, no other processes of the machine coming and going).
CALM = """
import asyncio, sys, time
from pathlib import Path
from corral.surfaces.tui.app import ControlRoom
seconds, jobs = float(sys.argv[1]), int(sys.argv[2])
def job(i, age):
    return {"id": f"{i:032x}", "pid": 1000 + i, "started_at": "boot:1", "state": "running",
            "mode": "detached", "session": "s1", "cwd": "/srv/app", "command": f"sleep {i}",
            "ports": [], "processes": 1, "cpu_percent": 0.0, "rss_bytes": 1 << 20,
            "age_seconds": age, "exit_code": None, "backend": "group", "tmux": None,
            "note": None, "attribution": "supervised", "name": None, "log": None,
            "ended_at": None, "signal": None, "project": "/srv/app"}
class Calm:
    source = "calm"
    started = time.monotonic()
    def connect(self): pass
    def ready(self): return None
    def read_log(self, *args): return [], None, None
    def board(self):
        age = 120.0 + time.monotonic() - self.started
        return {"project": "/srv/app", "jobs": [job(i, age) for i in range(jobs)],
                "unsupervised": [], "other_listeners": [], "cpu_measured": True}, []
app = ControlRoom(Calm(), folder=Path("/srv/app"))
async def main():
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause(3)
        used = time.process_time()
        await pilot.pause(seconds)
        print((time.process_time() - used) / seconds * 100)
asyncio.run(main())
"""


def calm_cpu(seconds: float) -> float:
    out = subprocess.run([sys.executable, "-c", CALM, str(seconds), str(JOBS)],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    return float(out.split()[0])


def cpu_seconds(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


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
    quick = _report.quick(__doc__)
    runs = 3 if quick else 7
    idle = 5.0 if quick else 20.0
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as folder:
        os.environ["CORRAL_HOME"] = home
        os.environ["SHELL"] = "/bin/sh"
        os.chdir(folder)  # the jobs' folder: this project
        procs = start_jobs()
        started = time.monotonic()
        try:
            direct = [first_paint(Path(folder), daemon=False) for _ in range(runs)]
            subprocess.run([sys.executable, "-m", "corral", "daemon", "--ensure"],
                           capture_output=True, check=True)  # fmt: skip
            served = [first_paint(Path(folder), daemon=True) for _ in range(runs)]
            time.sleep(max(0.0, started + 65 - time.monotonic()))  # ages in minutes
            alone, both = idle_cpu(Path(folder), idle)
            own = calm_cpu(idle)
        finally:
            for p in procs:  # a supervisor leads its job's group: the job goes with it
                os.killpg(p.pid, signal.SIGKILL)
            for p in procs:
                p.wait()
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"corral tui benchmarks ({'quick' if quick else 'full'} run, {JOBS} jobs; "
              f"load average {load} on {os.cpu_count()} cores)")  # fmt: skip
        for what, runs_ms in (("no daemon (jobs read here)", direct),
                              ("the daemon running", served)):  # fmt: skip
            row(f"first paint, {what}, median", statistics.median(r[0] for r in runs_ms),
                400, "ms")  # fmt: skip
            row("  CPU the tui spent on it, median", statistics.median(r[1] for r in runs_ms),
                None, "ms")  # fmt: skip
            row("  the whole board drawn (processes, listeners), median",
                statistics.median(r[2] for r in runs_ms), None, "ms")  # fmt: skip
        row(f"CPU while open and idle, the tui's own work, nothing changing ({idle:g} s)", own,
            2, "%")  # fmt: skip
        row(f"CPU while open and idle, the tui ({idle:g} s)", alone, 2, "%")
        row(f"CPU while open and idle, the tui and the daemon ({idle:g} s)", both, 2, "%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
