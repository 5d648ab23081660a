"""opencode's session briefing (issue 16): what corral's plugin waits for when it asks, p50,
beside the same briefing through Codex's SessionStart hook (the same service call) and the
interpreter's start, measured interleaved in one run, with one job running in the project.

    .venv/bin/python -m bench.bench_briefing [--runs N]

The plugin asks once per session and again only when the ledger folder changed; between
asks, each request to the model costs it one stat of that folder. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._report import row
from corral.surfaces.agents import run_hook


def _time(argv: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, bytes]:
    start = time.perf_counter()
    out = subprocess.run(argv, input=stdin, capture_output=True, env=env, check=True).stdout
    return (time.perf_counter() - start) * 1000, out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="corral-bench-briefing-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir(mode=0o700)
        project = Path(tmp) / "project"
        project.mkdir()
        env = {**os.environ, "CORRAL_HOME": str(home)}
        corral = [sys.executable, "-m", "corral"]
        port = _free_port()
        server = ["python3", "-m", "http.server", str(port), "--bind", "127.0.0.1"]
        subprocess.run([*corral, "run", "-d", "--", *server], cwd=project, env=env,
                       check=True, capture_output=True)  # fmt: skip
        try:
            opencode = json.dumps({"sessionID": "b", "directory": str(project)}).encode()
            codex = json.dumps({"session_id": "b", "cwd": str(project), "source": "startup",
                                "hook_event_name": "SessionStart"}).encode()  # fmt: skip
            base, asked, codex_runs, stats = [], [], [], []
            ledger = str(home / "ledger")
            for _ in range(args.runs):
                base.append(_time([sys.executable, "-I", "-S", "-c", "pass"], b"", env)[0])
                ms, out = _time(run_hook.command("opencode", "briefing"), opencode, env)
                if f"localhost:{port}".encode() not in out:
                    print(f"the briefing does not name the job: {out!r}", file=sys.stderr)
                    return 1
                asked.append(ms)
                codex_runs.append(_time(run_hook.command("codex", "session-start"), codex, env)[0])
                start = time.perf_counter()
                os.stat(ledger)
                stats.append((time.perf_counter() - start) * 1000)
        finally:
            subprocess.run([*corral, "stop", "--all"], env=env, capture_output=True, check=False)
        b, a, c, s = (statistics.median(x) for x in (base, asked, codex_runs, stats))
        row(f"python -I -S -c pass, p50 (baseline; load {os.getloadavg()[0]:.1f})", b, None, "ms")
        row("opencode briefing ask (one job running), p50", a, None, "ms")
        row("  as a multiple of the baseline", a / b, None, "x")
        row("Codex SessionStart briefing (same service call), p50", c, None, "ms")
        row("  opencode / Codex", a / c, 1.1, "x")
        row("cached check between asks (stat of the ledger), p50", s, None, "ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
