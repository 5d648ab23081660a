"""Seeing into jobs: readiness, log following and the MCP server's listing, measured now.

  python bench/bench_jobs.py [--jobs 200] [--runs 10]

1. A server binds; how long until `corral run -d --ready port` has returned (target ≤ 50 ms
   p50): the job writes the time it bound, the bench the time the command returned.
2. A job writes a line with the time; how long until `corral logs -f` prints it (≤ 50 ms).
3. `jobs_list` over MCP (stdio, the SDK's client) with --jobs running jobs, after the first
   call (≤ 50 ms p50); with --baseline SRC another tree's `corral mcp` answers the same
   calls, interleaved, for a same-run ratio (--mcp-only: this figure alone).
Everything runs in a temporary CORRAL_HOME and is stopped (by pid) at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._report import row

CORRAL = [sys.executable, "-m", "corral"]


def _corral(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CORRAL, *args], capture_output=True, text=True, check=False, **kw)


def ready_latency(runs: int, folder: Path) -> tuple[list[float], list[float]]:
    """(bind -> the `ready:` line printed, bind -> the command exited) per run."""
    printed, exited = [], []
    for i in range(runs):
        stamp = folder / f"bound-{i}"
        job = (
            f'{sys.executable} -c "import socket, time; time.sleep(0.3); s = socket.socket(); '
            f"s.bind(('127.0.0.1', 0)); s.listen(); t = time.time(); "
            f"open('{stamp}', 'w').write(repr(t)); time.sleep(600)\""
        )
        proc = subprocess.Popen(
            [*CORRAL, "run", "-d", "--ready", "port", "-c", job], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        seen = None
        job_id = ""
        for line in proc.stdout:
            if line.startswith("started job "):
                job_id = line.split()[2]
            if line.startswith("ready: "):
                seen = time.time()
        proc.wait()
        returned = time.time()
        proc.stdout.close()
        assert seen is not None and proc.returncode == 0
        bound = float(stamp.read_text())
        printed.append(seen - bound)
        exited.append(returned - bound)
        _corral("stop", job_id)
    return printed, exited


def follow_latency(lines: int, folder: Path) -> list[float]:
    go = folder / "go"
    job = (
        f"{sys.executable} -u -c \"import os, time\nprint('start', flush=True)\n"
        f"while not os.path.exists('{go}'): time.sleep(0.01)\n"
        f'for i in range({lines}):\n    time.sleep(0.1); print(repr(time.time()), flush=True)"'
    )
    data = json.loads(_corral("run", "-d", "--json", "-c", job).stdout)["data"]
    follower = subprocess.Popen(
        [*CORRAL, "logs", "-f", data["id"]], stdout=subprocess.PIPE, text=True
    )
    figures = []
    assert follower.stdout is not None
    assert follower.stdout.readline() == "start\n"
    go.touch()  # the follower runs: now the job writes
    for text in follower.stdout:
        figures.append(time.time() - float(text))
    follower.wait()
    follower.stdout.close()
    return figures


def baseline(runs: int) -> list[float]:
    """A bare interpreter's start and exit: how loaded the machine is, in the same run."""
    figures = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-c", "pass"], check=True)
        figures.append(time.perf_counter() - began)
    return figures


def mcp_list_latency(
    jobs: int, calls: int, folder: Path, baseline: Path | None = None
) -> tuple[float, dict[str, list[float]]]:
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from corral.lowlevel import locations

    procs = []
    for _ in range(jobs):  # supervisors started directly: the CLI's start-up is not measured
        argv = locations.supervisor_argv(
            "sleep 600", token=os.urandom(16).hex(), mode="detached", ledger=locations.ledger_dir(),
            session="bench",
        )  # fmt: skip
        procs.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL))
    ledger = Path(locations.ledger_dir())
    while len(list(ledger.glob("*.json"))) < jobs:
        time.sleep(0.05)
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "CORRAL_HOME", "HOME")}
    env["CORRAL_SESSION"] = "bench"
    trees = {"this tree": env}
    if baseline is not None:  # that tree's corral first on the path: `-m corral` is its own
        trees["baseline"] = {**env, "PYTHONPATH": str(baseline)}
    first = 0.0
    figures: dict[str, list[float]] = {name: [] for name in trees}

    async def main() -> None:
        nonlocal first
        from contextlib import AsyncExitStack

        async with AsyncExitStack() as stack:
            clients = {
                name: await stack.enter_async_context(
                    Client(
                        StdioServerParameters(
                            command=sys.executable, args=["-m", "corral", "mcp"], env=tree_env
                        ),
                        read_timeout_seconds=120,
                    )
                )
                for name, tree_env in trees.items()
            }
            servers = _servers(baseline)
            for i in range(calls + 1):
                if i == 1:
                    spent = {name: _cpu(proc) for name, proc in servers.items()}
                for name, client in clients.items():  # interleaved: load hits both alike
                    began = time.perf_counter()
                    result = await client.call_tool("jobs_list", {"scope": "all"})
                    took = time.perf_counter() - began
                    assert len(result.structured_content["data"]["jobs"]) == jobs
                    if i == 0 and name == "this tree":
                        first = took
                    elif i:
                        figures[name].append(took)
            for name, proc in servers.items():  # the server's own CPU per call, load aside
                figures[f"{name} cpu"] = [(_cpu(proc) - spent[name]) / calls]

    try:
        anyio.run(main)
    finally:
        _corral("stop", "--all")
        for proc in procs:
            proc.wait(timeout=30)
    return first, figures


def _servers(baseline: Path | None) -> dict[str, Any]:
    """The `corral mcp` processes this benchmark started, by tree."""
    import psutil

    found = {}
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.cmdline()[1:] != ["-m", "corral", "mcp"]:
                continue
            theirs = baseline is not None and proc.environ().get("PYTHONPATH") == str(baseline)
        except psutil.Error:
            continue
        found["baseline" if theirs else "this tree"] = proc
    return found


def _cpu(proc: Any) -> float:
    times = proc.cpu_times()
    return float(times.user + times.system)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--mcp-only", action="store_true", help="only the MCP listing")
    parser.add_argument("--baseline", type=Path, help="another tree's src: its MCP listing too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="corral-bench-", dir="/tmp") as tmp:
        home = Path(tmp) / "home"
        home.mkdir(mode=0o700)
        os.environ["CORRAL_HOME"] = str(home)
        bare = baseline(args.runs)
        row("reference: python -I -c pass, p50 (machine load)", statistics.median(bare) * 1000,
            None, "ms")  # fmt: skip
        if args.mcp_only:
            mcp_only(args.jobs, args.runs, Path(tmp), statistics.median(bare), args.baseline)
            return
        printed, exited = ready_latency(args.runs, Path(tmp))
        row("bind -> run -d --ready port printed ready:, p50", statistics.median(printed) * 1000,
            50, "ms")  # fmt: skip
        row("bind -> run -d --ready port exited, p50", statistics.median(exited) * 1000, 50, "ms")
        follow = follow_latency(args.runs * 2, Path(tmp))
        row("line written -> corral logs -f printed it, p50", statistics.median(follow) * 1000,
            50, "ms")  # fmt: skip
        first, listing = mcp_list_latency(args.jobs, args.runs * 2, Path(tmp))
        row(f"MCP jobs_list, {args.jobs} jobs, first call", first * 1000, None, "ms")
        p50 = statistics.median(listing["this tree"]) * 1000
        row(f"MCP jobs_list, {args.jobs} jobs, later calls p50", p50, 50, "ms")


def mcp_only(jobs: int, runs: int, folder: Path, bare: float, baseline: Path | None) -> None:
    first, listing = mcp_list_latency(jobs, runs * 2, folder, baseline)
    p50 = statistics.median(listing["this tree"]) * 1000
    row(f"MCP jobs_list, {jobs} jobs, first call", first * 1000, None, "ms")
    row(f"MCP jobs_list, {jobs} jobs, later calls p50", p50, 50, "ms")
    row(f"  as a multiple of python -I -c pass (load {os.getloadavg()[0]:.1f})", p50 / bare / 1000,
        None, "x")  # fmt: skip
    ours_cpu = listing["this tree cpu"][0] * 1000
    row("  the server's CPU per call", ours_cpu, None, "ms")
    if baseline is not None:
        theirs = statistics.median(listing["baseline"]) * 1000
        row(f"  the same calls, corral of {baseline}, p50", theirs, None, "ms")
        row("  this tree / that tree", p50 / theirs, 1.0, "x")
        theirs_cpu = listing["baseline cpu"][0] * 1000
        row("  that tree's server CPU per call", theirs_cpu, None, "ms")
        row("  this tree / that tree, CPU per call", ours_cpu / theirs_cpu, 1.0, "x")


if __name__ == "__main__":
    main()
