"""tmux backend vs the default backend for a short command: time to the first output line
and total time (start to exit), median of 20 runs each, printed as figures with a ratio.

    .venv/bin/python -m bench.bench_tmux [--runs N]

Runs on a private tmux server (`tmux -L corral-bench-<random>`) with a private CORRAL_HOME,
and kills that server by its socket at the end. Nothing here asserts: machines are noisy.
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

ROOT = Path(__file__).resolve().parent.parent
SUPERVISOR = ROOT / "src" / "corral" / "supervisor" / "launcher.py"
WRAPPER = ROOT / "src" / "corral" / "backends" / "tmux" / "tmux_wrapper.py"
LINE = "echo first; echo second"


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(seconds to the first line of stdout, seconds until the command exited)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    assert proc.stdout is not None
    proc.stdout.readline()
    first = time.perf_counter() - start
    proc.stdout.read()
    proc.wait()
    proc.stdout.close()
    return first, time.perf_counter() - start


def measure(argv: list[str], env: dict[str, str], runs: int) -> tuple[float, float]:
    timed(argv, env)  # warm-up: page cache, tmux server start
    samples = [timed(argv, env) for _ in range(runs)]
    return (
        statistics.median(s[0] for s in samples) * 1000,
        statistics.median(s[1] for s in samples) * 1000,
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    socket = f"corral-bench-{os.urandom(4).hex()}"
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "CORRAL_HOME": home, "CORRAL_TMUX_SOCKET": socket}
        env.pop("TMUX", None)
        default = [sys.executable, "-I", "-S", str(SUPERVISOR), "--task", "--", LINE]
        wrapped = [sys.executable, "-I", "-S", str(WRAPPER), "--", LINE]
        # keep one session alive, as in real use, so each run adds a window to it
        subprocess.run(["tmux", "-L", socket, "new-session", "-d", "-s", "bench"], check=True)
        try:
            d_first, d_total = measure(default, env, runs)
            t_first, t_total = measure(wrapped, env, runs)
        finally:
            subprocess.run(["tmux", "-L", socket, "kill-server"], check=False)
            base = os.environ.get("TMUX_TMPDIR") or "/tmp"
            Path(base, f"tmux-{os.getuid()}", socket).unlink(missing_ok=True)
    print(f"`{LINE}`, median of {runs} runs")
    print(f"{'':<24}{'default':>10}{'tmux':>10}{'ratio':>8}{'overhead':>11}")
    for name, d, t in (("first output line", d_first, t_first), ("total", d_total, t_total)):
        print(f"{name:<24}{d:8.1f}ms{t:8.1f}ms{t / d:8.2f}{t - d:+9.1f}ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
