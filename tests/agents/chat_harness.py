"""Run a real agent CLI (Qwen Code, opencode) offline against a FakeChat server.

Each agent gets a temporary HOME (and XDG folders) and project folder, and each run its own
process group: whatever is left of that group after the run is killed by its pgid, and
anything that escaped it (setsid, a detached server) is killed by pid at the end of the test,
found by a marker variable in its environment.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.agents.fake_chat import FakeChat, Request, Turn
from tests.claude.harness import run_in_group
from tests.helpers import kill_with_env

RUN_MARKER = "CORRAL_TEST_AGENT_RUN"
PASSED_THROUGH = ("CORRAL_HOME", "LANG", "LC_ALL", "TZ")


@dataclass(frozen=True)
class AgentRun:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    requests: tuple[Request, ...]
    api: FakeChat = field(repr=False)

    def tool_results(self) -> dict[str, str]:
        return self.api.tool_results()

    def explain(self) -> str:
        """What to print when an assertion about this run fails."""
        return (
            f"argv: {self.argv}\nexit: {self.returncode} after {self.seconds:.2f}s\n"
            f"stdout:\n{self.stdout[-3000:]}\nstderr:\n{self.stderr[-3000:]}\n"
            f"requests: {[(r.method, r.path, r.main) for r in self.requests]}\n"
            f"tool results: {self.tool_results()}"
        )


class Agent:
    """A temporary HOME and project for one agent CLI; `run()` drives one headless run."""

    def __init__(self, base: Path, binary: Path) -> None:
        self.binary = binary
        self.home = base / "home"
        self.project = base / "project"
        for folder in (self.home, self.project):
            folder.mkdir(parents=True)
        self.marker = uuid.uuid4().hex
        self.runs: list[AgentRun] = []

    def write_json(self, path: Path, data: Mapping[str, Any]) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n")
        return path

    def env(self, extra: Mapping[str, str] = {}) -> dict[str, str]:
        # corral's own CLI on PATH, as an installed corral is: the model's `corral run -d`.
        bin_dirs = [str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]
        env = {
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "PATH": os.pathsep.join(bin_dirs),
            "SHELL": "/bin/bash",
            "USER": os.environ.get("USER", "root"),
            "TERM": "dumb",
            "NO_COLOR": "1",
            RUN_MARKER: self.marker,
        }
        env.update({k: os.environ[k] for k in PASSED_THROUGH if k in os.environ})
        env.update(extra)
        return env

    def run(
        self,
        args: Sequence[str],
        script: Sequence[Turn],
        *,
        env: Mapping[str, str] = {},
        config: Mapping[str, str] = {},
        timeout: float = 120.0,
    ) -> AgentRun:
        """Run the CLI with `args` in the project folder against a fake API; `env` is added to
        the environment, and in `config` (a name -> text map) `{api}` becomes its URL."""
        out_path = self.home.parent / f"run-{len(self.runs)}.out"
        err_path = self.home.parent / f"run-{len(self.runs)}.err"
        argv = (str(self.binary), *args)
        with FakeChat(script) as api:
            extra = {k: v.replace("{api}", api.url) for k, v in {**env, **config}.items()}
            exited, seconds, returncode = run_in_group(
                argv, cwd=self.project, env=self.env(extra), out_path=out_path,
                err_path=err_path, timeout=timeout,
            )  # fmt: skip
        run = AgentRun(
            argv=argv,
            returncode=returncode,
            stdout=out_path.read_text(errors="replace"),
            stderr=err_path.read_text(errors="replace"),
            seconds=seconds,
            requests=tuple(api.requests),
            api=api,
        )
        self.runs.append(run)
        if not exited:
            raise TimeoutError(f"{self.binary.name} did not finish in {timeout}s\n{run.explain()}")
        return run

    def reap_escaped(self) -> list[int]:
        """Kill by pid every process that carries this agent's run marker."""
        return kill_with_env(f"{RUN_MARKER}={self.marker}".encode())
