"""Scanner and daemon benchmarks: each figure printed beside its target, as a ratio (≤ 1 is
good).

    .venv/bin/python -m bench.bench_scan [--quick]

One full listing (process table, markers, listeners with their owners, attribution, stored
observations, per row its command, cwd, ports and usage) with 50 supervised jobs among 1000
processes: cold (a new process with what earlier runs left in corral's home: the CLI), on the
first run ever (nothing left) and warm (the daemon), each against `ps` plus `lsof` over the
same processes in the same run; the jobs-only snapshot `corral ls` takes for 20 of those jobs;
and the daemon's CPU with no clients, and while a tool call is in flight. Nothing here asserts.
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

from bench import _report
from bench._report import row

ROOT = Path(__file__).resolve().parent.parent
SUPERVISOR = ROOT / "src" / "corral" / "supervisor" / "launcher.py"
JOBS_ONLY = 20  # jobs measured by the jobs-only snapshot, among the 50 started


def start_processes(jobs: int, total: int) -> tuple[list[subprocess.Popen[bytes]], list[str]]:
    procs: list[subprocess.Popen[bytes]] = []
    tokens = []
    for _ in range(jobs):
        token = os.urandom(16).hex()
        tokens.append(token)
        argv = [sys.executable, "-I", "-S", str(SUPERVISOR), "--job", token, "--detached"]
        procs.append(subprocess.Popen([*argv, "--", "sleep 100000"], stdout=subprocess.DEVNULL))
    ledger = Path(os.environ["CORRAL_HOME"]) / "ledger"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and len(list(ledger.glob("*.json"))) < jobs:
        time.sleep(0.01)
    # each job is a supervisor plus its sleep: fill up to `total` with plain processes
    mine = psutil.Process().children(recursive=True)
    for _ in range(max(0, total - len(psutil.pids()) - 0)):
        procs.append(subprocess.Popen(["sleep", "100000"], stdout=subprocess.DEVNULL))
    del mine
    time.sleep(0.3)
    return procs, tokens


def full_snapshot(state: str = "warm") -> float:
    """One listing as `corral ls` and the daemon make it: process table, markers, listeners
    with their owners, attribution, stored observations, and per row its command line, cwd,
    ports and usage. `state` says what is known beforehand:
    - "first": nothing (the first run ever: no socket owner remembered in memory or on disk);
    - "cold": what an earlier run left in corral's home, nothing in memory (a new process,
      the CLI's second and later runs);
    - "warm": the previous snapshot's owners, in memory (the daemon).
    Imports and the database's schema are not counted (the first call pays for them)."""
    from corral.service import sessions

    if state != "warm":
        sessions.forget_caches(persisted=state == "first")
    start = time.perf_counter()
    obs = sessions.observe(remember=False)
    sessions.list_processes(observed=obs)
    return (time.perf_counter() - start) * 1000


def jobs_only(count: int) -> float:
    """What `corral ls` measures: the usage of `count` jobs (their processes from their
    supervisors down, their ports), as a new process does it (nothing remembered)."""
    from corral.adapters import ledger, owners, scan

    records = ledger.read_all().records[:count]
    jobs = {r.id: (r.pid, ()) for r in records}
    owners.forget_owners(persisted=True)
    start = time.perf_counter()
    scan.usage(jobs, interval=0)
    return (time.perf_counter() - start) * 1000


def ps_lsof() -> float | None:
    if shutil.which("lsof") is None or shutil.which("ps") is None:
        return None
    start = time.perf_counter()
    # the process table with environments (for markers), then every inet socket's owner
    subprocess.run(["ps", "eww", "-e", "-o", "pid=,ppid=,pgid=,lstart=,pcpu=,rss=,args="],
                   stdout=subprocess.DEVNULL, check=False)  # fmt: skip
    subprocess.run(["lsof", "-nP", "-iTCP", "-sTCP:LISTEN", "-iUDP"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)  # fmt: skip
    return (time.perf_counter() - start) * 1000


def daemon_cpu(seconds: float) -> tuple[float, float]:
    """The daemon's CPU (% of a core) idle with no clients, then while a tool call is in
    flight (it refreshes every 250 ms, reading what changed since), among the benchmark's
    processes."""
    from corral.adapters import notify

    out = subprocess.run([sys.executable, "-m", "corral", "daemon", "--ensure"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    pid = int(out.split("pid ")[1].split(",")[0])
    proc = psutil.Process(pid)

    def used() -> float:
        before = proc.cpu_times()
        time.sleep(seconds)
        after = proc.cpu_times()
        spent: float = (after.user + after.system) - (before.user + before.system)
        return spent / seconds * 100

    home = os.environ["CORRAL_HOME"]
    try:
        time.sleep(2.0)  # let start-up settle
        idle = used()
        # a client's list first (a whole snapshot), as the mod asks when a session opens:
        # the refreshes while the call runs then read what changed since
        with httpx.Client(transport=httpx.HTTPTransport(uds=f"{home}/corral.sock"),
                          base_url="http://corral", timeout=60) as client:  # fmt: skip
            client.get("/api/processes").raise_for_status()
        notify.tool_call(home, "start", "bench", "toolu_bench")
        time.sleep(0.5)  # the request's and the first refresh's work is not counted
        busy = used()
        notify.tool_call(home, "end", "bench", "toolu_bench")
    finally:
        proc.terminate()
        proc.wait(10)
    return idle, busy


def main() -> int:
    quick = _report.quick(__doc__)
    runs = 5 if quick else 15
    idle = 5.0 if quick else 30.0
    with tempfile.TemporaryDirectory() as home:
        os.environ["CORRAL_HOME"] = home
        os.environ["SHELL"] = "/bin/bash"
        procs, _ = start_processes(50, 1000)
        try:
            count = len(psutil.pids())
            full_snapshot()  # imports and the database's schema, once
            first, cold, warm, theirs, only = [], [], [], [], []
            for _ in range(runs):  # interleaved: the machine's load falls on all alike
                first.append(full_snapshot("first"))
                cold.append(full_snapshot("cold"))
                warm.append(full_snapshot("warm"))
                only.append(jobs_only(JOBS_ONLY))
                base = ps_lsof()
                if base is not None:
                    theirs.append(base)
            cpu_idle, cpu_busy = daemon_cpu(idle)
        finally:
            for p in procs:  # a supervisor leads its job's group: the job goes with it
                if isinstance(p.args, list) and p.args[0] == sys.executable:
                    os.killpg(p.pid, signal.SIGKILL)
                else:
                    p.kill()
            for p in procs:
                p.wait()
        print(f"corral scanner benchmarks ({'quick' if quick else 'full'} run, "
              f"{count} processes, 50 jobs)")  # fmt: skip
        medians = {
            "cold, as the CLI after its first run": statistics.median(cold),
            "first run ever, nothing remembered": statistics.median(first),
            "warm, as the daemon": statistics.median(warm),
        }
        for what, ms in medians.items():
            row(f"one full snapshot ({what}), median", ms, 100, "ms")
        jobs_ms = statistics.median(only)
        row(f"jobs-only snapshot ({JOBS_ONLY} jobs, first run ever), median", jobs_ms, 10, "ms")
        if theirs:
            base = statistics.median(theirs)
            row("ps + lsof over the same processes, median", base, None, "ms")
            for what, ms in medians.items():
                row(f"speed-up over ps + lsof ({what.split(',')[0]})", base / ms, 3, "x",
                    better="≥")  # fmt: skip
            row(f"speed-up over ps + lsof (jobs only, {JOBS_ONLY} jobs)", base / jobs_ms, 10,
                "x", better="≥")  # fmt: skip
        else:
            print("ps + lsof: lsof is not installed (apt-get install -y lsof); not compared")
        row(f"daemon idle CPU, no clients ({idle:g} s)", cpu_idle, 0.1, "%")
        row(f"daemon CPU, a tool call in flight ({idle:g} s)", cpu_busy, 2, "%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
