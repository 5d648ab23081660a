"""Benchmark: reading one shell line in-process (targets from issue 3).

.venv/bin/python -m bench.bench_line
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from bench._report import row

LINES = [
    "cd web && npm run dev > dev.log 2>&1 &",
    "npm run dev & sleep 2 && curl localhost:5173",
    "PORT=4000 pnpm --filter web dev --host 0.0.0.0",
    "docker compose -f dev.yml up",
    "uv run uvicorn app:app --reload --port 8001",
]
TARGET_P50_MS = 2.0
TARGET_PLAIN_MS = 0.2  # ours: a line decided without the grammar should cost ~nothing


def _p50(line: str, background: bool, rounds: int = 2000) -> float:
    from corral.core.shell.plan import decide

    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        decide(line, background=background, cwd="/w/proj", home="/home/u", token="0" * 32)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> int:
    code = (
        "import sys, time; t = time.perf_counter()\n"
        "from corral.core.shell.plan import decide\n"
        "decide('ls -la', background=False, cwd='/w', home='/h')\n"
        "print((time.perf_counter() - t) * 1000, 'tree_sitter' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    import_ms, loaded = out.stdout.split()
    row("import + decide `ls -la` in a fresh process", float(import_ms), None, "ms")
    print(f"{'grammar loaded for `ls -la`':<58} {loaded:>8}     target False")
    start = time.perf_counter()
    from corral.core.shell.parse import _parser

    _parser()
    row("grammar load (once per process)", (time.perf_counter() - start) * 1000, None, "ms")
    row("p50 plain line `ls -la` (no grammar)", _p50("ls -la", False), TARGET_PLAIN_MS, "ms")
    for line in LINES:
        row(f"p50 {line[:52]!r}", _p50(line, False), TARGET_P50_MS, "ms")
    row("p50 background `sleep 100`", _p50("sleep 100", True), TARGET_P50_MS, "ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
