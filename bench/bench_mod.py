"""The Claude Code mod's figures against a warm daemon: each printed beside its target, as a
ratio (≤ 1 is good).

    .venv/bin/python -m bench.bench_mod [--quick]

- The band's refresh: what one refresh costs Claude Code is one round trip over the daemon's
  Unix socket (`GET /api/claude/band`), asked every 2 s as the mod does: the daemon answers
  with the answer it keeps and reads it again in the background. For reference, the bare
  round trip of `/api/health`, the band's round trips back to back (the daemon and the
  client hot: what is left is the HTTP stack), and the band right after a job started or
  ended (the ledger folder changed: the request waits for the answer to be read again).
- `/procs` with 50 jobs: the round trip of `GET /api/claude/procs` (the rows the pane draws:
  a whole snapshot, the jobs, their ports), with 50 supervised jobs in the project.
- A Bash call the mod leaves alone: the round trip of its question (`POST
  /api/claude/supervise`); it spawns no process.
Nothing here asserts.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

from bench import _report
from bench._report import row

ROOT = Path(__file__).resolve().parent.parent
SUPERVISOR = ROOT / "src" / "corral" / "supervisor" / "launcher.py"


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("corral", timeout=30)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def round_trip(sock: str, path: str, body: dict[str, object] | None = None) -> float:
    """Milliseconds for one request on a new connection (as `$.http.fetch` makes one); with
    `body`, a POST of it as JSON."""
    started = time.perf_counter()
    conn = UnixConnection(sock)
    try:
        if body is None:
            conn.request("GET", path)
        else:
            headers = {"content-type": "application/json"}
            conn.request("POST", path, json.dumps(body), headers)
        answer = conn.getresponse()
        answer.read()
        if answer.status != 200:
            raise RuntimeError(f"{path}: {answer.status}")
    finally:
        conn.close()
    return (time.perf_counter() - started) * 1000


def start_jobs(count: int, project: Path) -> list[subprocess.Popen[bytes]]:
    procs = []
    env = {**os.environ, "CORRAL_SESSION": "bench-session"}
    for _ in range(count):
        argv = [sys.executable, "-I", "-S", str(SUPERVISOR), "--job", os.urandom(16).hex()]
        procs.append(
            subprocess.Popen(
                [*argv, "--detached", "--", "sleep 100000"],
                cwd=project,
                env=env,
                stdout=subprocess.DEVNULL,
            )
        )
    ledger = Path(os.environ["CORRAL_HOME"]) / "ledger"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(list(ledger.glob("*.json"))) < count:
        time.sleep(0.01)
    return procs


def main() -> int:
    quick = _report.quick(__doc__)
    runs = 10 if quick else 40
    with tempfile.TemporaryDirectory() as base:
        home = Path(base) / "home"
        project = Path(base) / "project"
        (project / ".git").mkdir(parents=True)
        os.environ["CORRAL_HOME"] = str(home)
        os.environ["SHELL"] = "/bin/bash"
        out = subprocess.run([sys.executable, "-m", "corral", "daemon", "--ensure"],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
        daemon = int(out.split("pid ")[1].split(",")[0])
        sock = str(home / "corral.sock")
        procs = start_jobs(50, project)
        try:
            folder = urllib.parse.quote(str(project))
            band = f"/api/claude/band?folder={folder}"
            procs_path = f"/api/claude/procs?folder={folder}&session=bench-session"
            for _ in range(3):  # imports, the first snapshot
                round_trip(sock, band)
                round_trip(sock, procs_path)
            steady = [round_trip(sock, band) for _ in range(50 if quick else 500)]
            plain = {"command": "ls -l", "cwd": str(project), "background": False}
            left = [round_trip(sock, "/api/claude/supervise", plain) for _ in range(50)]
            every, changed, health, pane = [], [], [], []
            for i in range(runs):
                time.sleep(1.0)  # as the mod asks: every 2 s
                health.append(round_trip(sock, "/api/health"))
                every.append(round_trip(sock, band))
                time.sleep(1.0)  # the background read of the band is done by now
                if i % 4 == 0:  # a job started or ended: the answer is read again at once
                    os.utime(home / "ledger")
                    changed.append(round_trip(sock, band))
                else:
                    pane.append(round_trip(sock, procs_path))
        finally:
            for p in procs:  # a supervisor leads its job's group: the job goes with it
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            os.kill(daemon, signal.SIGTERM)
        load = os.getloadavg()[0]
        print(f"corral mod benchmarks ({'quick' if quick else 'full'} run, 50 jobs, "
              f"load average {load:.1f} on {os.cpu_count()} cores)")  # fmt: skip
        row("band refresh every 2 s (one round trip), median", statistics.median(every), 1, "ms")
        row("band refresh every 2 s (one round trip), worst", max(every), None, "ms")
        row("band round trips back to back (a busy daemon), median", statistics.median(steady),
            1, "ms")  # fmt: skip
        row("  for reference: GET /api/health round trip, median", statistics.median(health),
            None, "ms")  # fmt: skip
        row("band after a job started or ended (read at once), median",
            statistics.median(changed), None, "ms")  # fmt: skip
        row("/procs rows with 50 jobs, median", statistics.median(pane), 100, "ms")
        row("/procs rows with 50 jobs, worst", max(pane), 100, "ms")
        row("a Bash call the mod leaves alone (`ls -l`): its question, median",
            statistics.median(left), None, "ms")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
