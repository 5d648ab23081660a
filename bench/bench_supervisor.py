"""Supervisor benchmarks: each figure printed beside its target, as a ratio (≤ 1 is good).

    .venv/bin/python -m bench.bench_supervisor [--quick] [--baseline SRC]

Idle CPU of 10 supervised jobs over 20 s, stop latency (request to supervisor gone), start
overhead over running the line directly (the wrapper the hook uses and `corral run -c`),
and the supervisor's resident memory. Nothing here asserts: machines are noisy. With
`--baseline SRC` (another tree's `src`, e.g. `git archive main src | tar -x -C /tmp/main`),
the start overhead, stop latency and memory of that tree's supervisor are measured in the
same run, interleaved, and each figure is printed as a ratio to the baseline's.
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


def sup(line: str, token: str, *opts: str, launcher: Path = SUPERVISOR) -> list[str]:
    return [sys.executable, "-I", "-S", str(launcher), "--job", token, *opts, "--", line]


def median_run(argv: list[str], n: int) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def start_jobs(
    count: int,
    launcher: Path = SUPERVISOR,
    line: str = "sleep 100000",
    logs: Path | None = None,
) -> list[tuple[str, psutil.Process]]:
    """`count` detached jobs; with `logs`, each one's output goes to a file there (which
    its supervisor watches, logwatch.py)."""
    ledger = Path(os.environ["CORRAL_HOME"]) / "ledger"
    already = len(list(ledger.glob("*.stop")))
    jobs = []
    for _ in range(count):
        token = os.urandom(16).hex()
        out = open(logs / f"{token}.log", "wb") if logs else subprocess.DEVNULL  # noqa: SIM115
        proc = subprocess.Popen(
            sup(line, token, "--detached", launcher=launcher),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        if logs:
            out.close()  # type: ignore[union-attr]
        jobs.append((token, psutil.Process(proc.pid)))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(list(ledger.glob("*.stop"))) < count + already:
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


def watched_cpu(line: str, logs: Path, seconds: float) -> float:
    """CPU per supervisor of 10 jobs running `line` with their output to a watched log."""
    jobs = start_jobs(10, line=line, logs=logs)
    try:
        return cpu_percent(jobs, seconds)
    finally:
        for token, proc in jobs:
            stop(token, proc)  # the whole job, not only its supervisor


def watched_start(launcher: Path, logs: Path, token: str) -> float:
    """One start of `true` whose output goes to a log file (its supervisor watches it)."""
    with open(logs / "bench.log", "ab") as out:
        start = time.perf_counter()
        subprocess.run(sup("true", token, launcher=launcher), stdout=out, stderr=out, check=False)
        return (time.perf_counter() - start) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs (for a smoke check)")
    parser.add_argument("--baseline", type=Path, help="another tree's src folder to compare")
    args = parser.parse_args()
    if args.baseline:
        return compare(args.baseline / "corral" / "supervisor" / "launcher.py", args.quick)
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
        watched = statistics.median(watched_start(SUPERVISOR, logs, "3" * 32) for _ in range(runs))
        row("start overhead, wrapper, output to a watched log", watched - direct, 25, "ms")
        in_place = median_run(sup("true", "4" * 32, "--detached", "--async"), runs)
        row("start overhead, wrapper, in place of CMD & (--async)", in_place - direct, 25, "ms")
        writing = watched_cpu("while :; do echo line; sleep 0.1; done", logs, idle_seconds)
        watching = watched_cpu("echo once; sleep 100000", logs, idle_seconds)
        row("CPU per job, log watched, job idle", watching, 0.05, "%")
        row("CPU per job, log watched, job writing 10 lines/s", writing, 0.5, "%")
        row("supervisor resident memory, RSS (max of 10)", rss, 10, "MB")
        row("supervisor proportional memory, PSS (max of 10)", pss, 10, "MB")
    return 0


def compare(baseline: Path, quick: bool) -> int:
    """This tree's supervisor against `baseline`'s, interleaved in the same run."""
    runs = 10 if quick else 40
    with tempfile.TemporaryDirectory() as home:
        os.environ["CORRAL_HOME"] = home
        os.environ["SHELL"] = "/bin/bash"
        starts: dict[Path, list[float]] = {SUPERVISOR: [], baseline: []}
        watched: dict[Path, list[float]] = {SUPERVISOR: [], baseline: []}
        in_place: dict[Path, list[float]] = {SUPERVISOR: [], baseline: []}
        direct: list[float] = []
        logs = Path(home) / "logs"
        logs.mkdir()
        for i in range(runs):
            direct.append(median_run(["bash", "-c", "true"], 1))
            for launcher, times in starts.items():
                times.append(median_run(sup("true", f"{i:032x}", launcher=launcher), 1))
                watched[launcher].append(watched_start(launcher, logs, f"{i + runs:032x}"))
                async_ = sup("true", f"{i + 2 * runs:032x}", "--detached", "--async",
                             launcher=launcher)  # fmt: skip
                in_place[launcher].append(median_run(async_, 1))
        figures: dict[Path, tuple[float, ...]] = {}
        for launcher in (SUPERVISOR, baseline):
            jobs = start_jobs(5, launcher)
            try:
                rss = max(p.memory_info().rss for _, p in jobs) / 1e6
                latency = statistics.median(stop(token, proc) for token, proc in jobs)
            finally:
                for _, proc in jobs:
                    if proc.is_running():
                        proc.kill()
            overhead = statistics.median(starts[launcher]) - statistics.median(direct)
            figures[launcher] = (overhead, latency, rss)
            figures[launcher] += (
                statistics.median(watched[launcher]) - statistics.median(direct),
                statistics.median(in_place[launcher]) - statistics.median(direct),
            )
        names = ("start overhead, wrapper", "stop latency (request -> gone)", "RSS (max of 5)",
                 "start overhead, output to a log file", "start overhead, --async")  # fmt: skip
        units = ("ms", "ms", "MB", "ms", "ms")
        load = os.getloadavg()[0]
        print(f"this tree's supervisor against {baseline} (same run, load {load:.1f})")
        for at, (name, unit) in enumerate(zip(names, units, strict=True)):
            row(f"{name}, this tree", figures[SUPERVISOR][at], None, unit)
            row(f"{name}, baseline", figures[baseline][at], None, unit)
            ratio = figures[SUPERVISOR][at] / max(figures[baseline][at], 1e-9)
            row("  this tree / baseline", ratio, 1.0, "x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
