"""Shell prefix benchmark: what corral's CLAUDE_CODE_SHELL_PREFIX adds to every Bash call and
every hook, p50, beside its targets (issue 13). Runs are interleaved with the baseline, so
load hits both alike.

    .venv/bin/python -m bench.bench_prefix [--runs N] [--shell /usr/bin/zsh]

(`--shell`: the user's $SHELL, bash or zsh; the baselines are that shell's `-c`.)

- a Bash call that starts no long runner: ≤ 2 ms over `bash -c STRING` (the same string);
- a hook's command: ≤ 2 ms over `/bin/sh -c COMMAND`;
- a supervised start (`npm run dev` in Claude Code's string, through python, admission and
  the supervisor up to the job's exit): ≤ 80 ms over `bash -c`, the hook's wrapped-line
  budget. As Claude Code runs it: the PreToolUse hook first (it reads the line and leaves
  the prefix a note), then the prefix (it checks the note against the live jobs and starts
  the supervisor, without the line reader); beside it, the prefix with no note (it reads
  the line itself) and the hook's own time.
Nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench._report import row
from bench.bench_hook import _payload
from corral.core.claude.shell_string import compose
from corral.surfaces.claude import hook, prefix

_CPU: list[float] = []  # the CPU time (user + system, ms) of each `_time` run's processes


def _time(argv: list[str], env: dict[str, str], cwd: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    _CPU.append(spent * 1000)  # reaped with the run: the supervisor, the shell, npm too
    return wall


def _time_hook(argv: list[str], payload: bytes, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, input=payload, env=env, capture_output=True, check=False)
    return (time.perf_counter() - start) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--shell", default="/bin/bash", help="the user's $SHELL: bash or zsh")
    args = parser.parse_args()
    shell = args.shell
    kind = os.path.basename(shell)
    with tempfile.TemporaryDirectory(prefix="corral-bench-prefix-") as tmp:
        home = Path(tmp) / "home"
        env = {**os.environ, "CORRAL_HOME": str(home), "SHELL": shell}
        os.environ["CORRAL_HOME"] = str(home)
        program = str(Path(tmp) / prefix.NAME)
        prefix.write_launcher(program)
        head = f"source {tmp}/snapshot-{kind}-1-a.sh 2>/dev/null || true && "
        cwd_file = f"{tmp}/claude-cwd"
        plain = compose("git status --short && ls -la src | grep py > files.txt", head, cwd_file)
        hook_cmd = "true"
        Path(tmp, "package.json").write_text(json.dumps({"scripts": {"dev": "true"}}))
        runner = compose("npm run dev", head, cwd_file)
        figures: dict[str, list[float]] = {k: [] for k in ("bash", "plain", "sh", "hook")}
        for _ in range(args.runs):
            figures["bash"].append(_time([shell, "-c", plain], env, tmp))
            figures["plain"].append(_time([program, plain], env, tmp))
            figures["sh"].append(_time(["/bin/sh", "-c", hook_cmd], env, tmp))
            figures["hook"].append(_time([program, hook_cmd], env, tmp))
        started: dict[str, list[float]] = {k: [] for k in ("bash", "prefix", "read", "hook")}
        started["noting"] = []
        cpu: dict[str, list[float]] = {"bash": [], "prefix": [], "read": []}
        hook_argv = hook.command("pre-tool-use")
        # Claude Code passes its prefix and session to hooks and to the prefix alike.
        claude_env = {**env, prefix.PREFIX: program, "CLAUDE_CODE_SESSION_ID": "bench"}
        for _ in range(max(5, args.runs // 6)):
            started["bash"].append(_time([shell, "-c", runner], env, tmp))
            cpu["bash"].append(_CPU[-1])
            payload = _payload("npm run dev", tmp, background=True)
            started["noting"].append(_time_hook(hook_argv, payload, claude_env))
            started["prefix"].append(_time([program, runner], claude_env, tmp))  # the note's
            cpu["prefix"].append(_CPU[-1])
            shutil.rmtree(home / "reservations", ignore_errors=True)
            started["read"].append(_time([program, runner], claude_env, tmp))  # no note
            cpu["read"].append(_CPU[-1])
            shutil.rmtree(home / "reservations", ignore_errors=True)
            payload = _payload("npm run dev", tmp, background=True)  # a call of its own
            started["hook"].append(_time_hook(hook_argv, payload, env))  # without the prefix
            shutil.rmtree(home / "reservations", ignore_errors=True)
        left = os.listdir(home / "prefix-read") if (home / "prefix-read").exists() else []
        assert not left, f"notes the prefix did not take: {left}"
    p50 = {k: statistics.median(v) for k, v in figures.items()}
    low = {k: min(v) for k, v in figures.items()}  # what a quiet machine shows
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    row(f"{kind} -c STRING (baseline)", p50["bash"], None, "ms")
    row("prefix, a Bash call with no long runner: added", p50["plain"] - p50["bash"], 2, "ms")
    row("  the same, fastest runs", low["plain"] - low["bash"], 2, "ms")
    row("/bin/sh -c COMMAND (baseline)", p50["sh"], None, "ms")
    row("prefix, a hook's command: added", p50["hook"] - p50["sh"], 2, "ms")
    row("  the same, fastest runs", low["hook"] - low["sh"], 2, "ms")
    s50 = {k: statistics.median(v) for k, v in started.items()}
    row(f"{kind} -c 'npm run dev' (baseline)", s50["bash"], None, "ms")
    row("prefix, npm run dev supervised: added", s50["prefix"] - s50["bash"], 80, "ms")
    s_low = {k: min(v) for k, v in started.items()}
    row("  the same, fastest runs", s_low["prefix"] - s_low["bash"], 80, "ms")
    row("  with no note from the hook (reads the line)", s50["read"] - s50["bash"], 80, "ms")
    # CPU time shifts less with the machine's load than the wall clock does
    c50 = {k: statistics.median(v) for k, v in cpu.items()}
    row("  CPU time added (user + system), p50", c50["prefix"] - c50["bash"], 80, "ms")
    row("  the same, with no note from the hook", c50["read"] - c50["bash"], 80, "ms")
    row("  the hook before it (reads, notes), p50", s50["noting"], 80, "ms")
    row("  for scale: the hook's wrapped line, same run, p50", s50["hook"], 80, "ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
