"""Claude Code hook benchmark: the whole hook process as Claude Code runs it, p50, beside its
targets (issue 4). Runs are interleaved with the baseline so that load hits both alike.

    .venv/bin/python -m bench.bench_hook [--runs N] [--baseline SRC]

- a line decided without the grammar: ≤ 1.5 times `python -I -S -c pass` measured in the same run;
- a wrapped line (read, checked against the ledger and ports, reserved, rewritten): ≤ 80 ms;
- a foreground line that sends a server to the background mid-line, rewritten in place
  (`npm run dev & sleep 2; curl …`, issue 17): the same budget, and beside the wrapped line;
  the same for a list (`cd web && npm run dev & …`), for which the hook also writes the
  program bash finds for `npm`;
- the Codex, Gemini, Qwen Code and opencode hooks (surfaces/agents) on a line decided
  without the grammar: the
  Claude hook's budget, ≤ 1.5 times the baseline (issue 16).
With `--baseline SRC` (another tree's `src`, e.g. `git archive main src | tar -x -C /tmp/m`)
that tree's hook runs the wrapped line too, interleaved, and the ratio of the two is printed:
"no worse than before" measured in one run, whatever the machine's load.
Nothing here asserts.
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

from bench._report import row
from corral.surfaces.agents import run_hook
from corral.surfaces.claude import hook


def _payload(command: str, cwd: str, background: bool = False) -> bytes:
    tool_input: dict[str, object] = {"command": command, "description": "bench"}
    if background:
        tool_input["run_in_background"] = True
    data = {
        "hook_event_name": "PreToolUse",
        "session_id": "bench",
        "tool_use_id": f"toolu_{os.urandom(8).hex()}",  # each call its own (copies claim one)
        "cwd": cwd,
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": tool_input,
    }
    return json.dumps(data).encode()


def _time(argv: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, bytes]:
    start = time.perf_counter()
    out = subprocess.run(argv, input=stdin, capture_output=True, env=env, check=True).stdout
    return (time.perf_counter() - start) * 1000, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--baseline", type=Path, help="another tree's src folder to compare")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="corral-bench-hook-") as tmp:
        env = {**os.environ, "CORRAL_HOME": str(Path(tmp) / "home")}
        baseline_argv = [sys.executable, "-I", "-S", "-c", "pass"]
        argv = hook.command("pre-tool-use")
        plain = _payload("ls -la src | grep py > files.txt", tmp)
        base, fast, wrapped, midline, listed, other = [], [], [], [], [], []
        shell_call = json.loads(plain)["tool_input"]["command"]
        call = {"session_id": "b", "cwd": tmp}
        shell_input = {"command": shell_call}
        # name -> (agent, hook event, a plain shell call as the agent sends it)
        agents: dict[str, tuple[str, str, dict[str, object]]] = {
            "Codex": ("codex", "pre-tool-use", {"tool_name": "Bash", "tool_input": shell_input}),
            "Gemini": ("gemini", "before-tool", {"tool_name": "run_shell_command",
                       "tool_input": {**shell_input, "dir_path": ""}}),
            "Qwen Code": ("qwen", "pre-tool-use", {"tool_name": "run_shell_command",
                          "tool_input": {**shell_input, "is_background": False}}),
            "opencode": ("opencode", "tool-before", {"tool": "bash", "args": shell_input,
                         "directory": tmp}),
        }  # fmt: skip
        agent_runs: dict[str, list[float]] = {name: [] for name in agents}
        other_launcher = Path(args.baseline or ".") / "corral/surfaces/claude/run_hook.py"
        other_argv = [*argv[:-2], str(other_launcher), argv[-1]]
        other_env = {**env, "CORRAL_HOME": str(Path(tmp) / "home-baseline")}
        Path(other_env["CORRAL_HOME"]).mkdir(mode=0o700)  # older trees made it 0755
        midline_line = "npm run dev & sleep 2; curl -s localhost:5173"
        # a list: bash finds corral's program for `npm` (the hook writes it)
        listed_line = "cd web && npm run dev & sleep 2; curl -s localhost:5173"
        for i in range(args.runs):
            base.append(_time(baseline_argv, b"", env)[0])
            fast.append(_time(argv, plain, env)[0])
            for name, (agent, event, shape) in agents.items():
                stdin = json.dumps({**call, **shape}).encode()
                agent_runs[name].append(_time(run_hook.command(agent, event), stdin, env)[0])
            folder = Path(tmp) / f"p{i}"
            folder.mkdir()
            Path(str(folder) + "m").mkdir()
            Path(str(folder) + "l/web").mkdir(parents=True)
            ms, out = _time(argv, _payload("npm run dev", str(folder), background=True), env)
            if b"updatedInput" not in out:
                print(f"the wrapped line was not rewritten: {out!r}", file=sys.stderr)
                return 1
            wrapped.append(ms)
            if args.baseline:
                Path(str(folder) + "b").mkdir()
                data = _payload("npm run dev", str(folder) + "b", background=True)
                ms, out = _time(other_argv, data, other_env)
                if b"updatedInput" not in out:
                    print(f"the baseline did not rewrite the line: {out!r}", file=sys.stderr)
                    return 1
                other.append(ms)
            ms, out = _time(argv, _payload(midline_line, str(folder) + "m"), env)
            if b"--async" not in out:
                print(f"the mid-line server was not rewritten in place: {out!r}", file=sys.stderr)
                return 1
            midline.append(ms)
            ms, out = _time(argv, _payload(listed_line, str(folder) + "l"), env)
            if b"hash -p" not in out:
                print(f"the list was not rewritten through bash's table: {out!r}", file=sys.stderr)
                return 1
            listed.append(ms)
        b, f, w, m, li = (statistics.median(x) for x in (base, fast, wrapped, midline, listed))
        row(f"python -I -S -c pass, p50 (baseline; load {os.getloadavg()[0]:.1f})", b, None, "ms")
        row("hook, line decided without the grammar, p50", f, None, "ms")
        row("  as a multiple of the baseline", f / b, 1.5, "x")
        row("hook, wrapped line (`npm run dev`, background), p50", w, 80, "ms")
        row("  as a multiple of the baseline", w / b, None, "x")
        if other:
            o = statistics.median(other)
            row(f"  the same line, hook of {args.baseline}", o, None, "ms")
            row("  this tree / that tree", w / o, 1.0, "x")
        row("hook, mid-line `npm run dev & sleep 2; curl …` in place, p50", m, 80, "ms")
        row("  as a multiple of the wrapped line", m / w, 1.0, "x")
        row("hook, mid-line `cd web && npm run dev & …` (its program written), p50", li, 80, "ms")
        row("  as a multiple of the wrapped line", li / w, None, "x")
        for name, runs in agent_runs.items():
            p50 = statistics.median(runs)
            row(f"{name} hook, line decided without the grammar, p50", p50, None, "ms")
            row("  as a multiple of the baseline", p50 / b, 1.5, "x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
