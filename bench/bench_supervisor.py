"""Supervisor benchmarks: each figure printed beside its target, as a ratio (≤ 1 is good).

    .venv/bin/python -m bench.bench_supervisor [--quick]

Idle CPU of 10 supervised jobs over 20 s, stop latency (request to supervisor gone), start
overhead over running the line directly (the wrapper the hook uses and `corral run -c`),
and the supervisor's resident memory. Nothing here asserts: machines are noisy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from bench._report import row

ROOT = Path(__file__).resolve().parent.parent
SUPERVISOR = ROOT / "src" / "corral" / "supervisor" / "launcher.py"


def sup(line: str, token: str, *opts: str) -> list[str]:
    return [sys.executable, "-I", "-S", str(SUPERVISOR), "--job", token, *opts, "--", line]


def median_run(argv: list[str], n: int) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def start_jobs(
    count: int, line: str = "sleep 100000", logs: Path | None = None
) -> list[tuple[str, psutil.Process]]:
    """`count` detached jobs; with `logs`, each one's output goes to a file there (which
    its supervisor watches, logwatch.py)."""
    jobs = []
    for _ in range(count):
        token = os.urandom(16).hex()
        out = open(logs / f"{token}.log", "wb") if logs else subprocess.DEVNULL  # noqa: SIM115
        proc = subprocess.Popen(
            sup(line, token, "--detached"), stdout=out, stderr=subprocess.STDOUT
        )
        if logs:
            out.close()  # type: ignore[union-attr]
        jobs.append((token, psutil.Process(proc.pid)))
    ledger = Path(os.environ["CORRAL_HOME"]) / "ledger"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(list(ledger.glob("*.stop"))) < count:
        time.sleep(0.01)
    time.sleep(0.2)
    return jobs


def stop(token: str, proc: psutil.Process) -> float:
    fifo = Path(os.environ["CORRAL_HOME"]) / "ledger" / f"{token}.stop"
    pidfd = os.pidfd_open(proc.pid)
    start = time.perf_counter()
    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    os.write(fd, b"stop\n")
    os.close(fd)
    import select

    select.select([pidfd], [], [], 15)
    elapsed = time.perf_counter() - start
    os.close(pidfd)
    proc.wait(5)
    return elapsed * 1000


def cpu_percent(jobs: list[tuple[str, psutil.Process]], seconds: float) -> float:
    time.sleep(1.0)  # past their start-up
    before = [p.cpu_times() for _, p in jobs]
    time.sleep(seconds)
    after = [p.cpu_times() for _, p in jobs]
    used = [(a.user + a.system) - (b.user + b.system) for a, b in zip(after, before, strict=True)]
    return float(statistics.mean(used)) / seconds * 100


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs (for a smoke check)")
    args = parser.parse_args()
    idle_seconds = 3.0 if args.quick else 20.0
    runs = 10 if args.quick else 30
    with tempfile.TemporaryDirectory() as home:
        os.environ["CORRAL_HOME"] = home
        os.environ["SHELL"] = "/bin/bash"
        jobs = start_jobs(10)
        try:
            before = [p.cpu_times() for _, p in jobs]
            time.sleep(idle_seconds)
            after = [p.cpu_times() for _, p in jobs]
            used = [
                (a.user + a.system) - (b.user + b.system)
                for a, b in zip(after, before, strict=True)
            ]
            per_job = statistics.mean(used) / idle_seconds * 100
            rss = max(p.memory_info().rss for _, p in jobs) / 1e6
            # PSS splits pages shared with the other supervisors (libpython) among them:
            # what one more job really costs the machine.
            pss = max(p.memory_full_info().pss for _, p in jobs) / 1e6
            latencies = [stop(token, proc) for token, proc in jobs]
        finally:
            for _, proc in jobs:
                if proc.is_running():
                    proc.kill()
        print(f"corral supervisor benchmarks ({'quick' if args.quick else 'full'} run)")
        row(f"idle CPU per job (10 jobs, {idle_seconds:g} s)", per_job, 0.05, "%")
        row("stop latency, median of 10 (request -> gone)", statistics.median(latencies), 50, "ms")
        direct = median_run(["bash", "-c", "true"], runs)
        wrapped = median_run(sup("true", "0" * 32), runs)
        human = median_run([sys.executable, "-m", "corral", "run", "-c", "true"], runs)
        assign = median_run(sup("PORT=1 true", "1" * 32), runs)
        secret = median_run(sup("true --token abc123", "2" * 32), runs)
        row("start overhead, wrapper (hook's path)", wrapped - direct, 25, "ms")
        row("start overhead, wrapper, line with NAME=value", assign - direct, 25, "ms")
        row("start overhead, wrapper, line with a secret flag", secret - direct, 25, "ms")
        row("start overhead, corral run -c", human - direct, 100, "ms")
        logs = Path(home) / "logs"
        logs.mkdir()
        with open(logs / "bench.log", "wb") as out:
            start = time.perf_counter()
            for _ in range(runs):
                subprocess.run(sup("true", "3" * 32), stdout=out, stderr=out, check=False)
            watched = (time.perf_counter() - start) / runs * 1000
        row("start overhead, wrapper, output to a watched log", watched - direct, 25, "ms")
        in_place = median_run(sup("true", "4" * 32, "--detached", "--async"), runs)
        row("start overhead, wrapper, in place of CMD & (--async)", in_place - direct, 25, "ms")
        writers = start_jobs(10, "while :; do echo line; sleep 0.1; done", logs)
        try:
            writing = cpu_percent(writers, idle_seconds)
            quiet = start_jobs(10, "echo once; sleep 100000", logs)
            try:
                watching = cpu_percent(quiet, idle_seconds)
            finally:
                for _, proc in quiet:
                    proc.kill()
        finally:
            for _, proc in writers:
                proc.kill()
        row("CPU per job, log watched, job idle", watching, 0.05, "%")
        row("CPU per job, log watched, job writing 10 lines/s", writing, 0.5, "%")
        row("supervisor resident memory, RSS (max of 10)", rss, 10, "MB")
        row("supervisor proportional memory, PSS (max of 10)", pss, 10, "MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
