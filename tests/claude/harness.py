"""Run the real Claude Code CLI (`.tools/claude`, see scripts/install-claude.sh) offline.

Each run gets a fresh fake Messages API following a script, a temporary HOME and project
folder, and its own process group; whatever is left of that group after the run is killed by
its pgid, and anything that escaped it (setsid, double fork) is killed by pid at the end of
the test, found by a marker variable in its environment.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from tests.claude.fake_api import JSON, FakeAPI, Request, Turn
from tests.helpers import binary_or_skip, kill_with_env

ROOT = Path(__file__).resolve().parents[2]
CLAUDE_BIN = ROOT / ".tools" / "claude" / "node_modules" / ".bin" / "claude"
RUN_MARKER = "CORRAL_TEST_CLAUDE_RUN"
OFFLINE_ENV = {
    "ANTHROPIC_API_KEY": "sk-ant-fake-key-for-tests",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
    "IS_SANDBOX": "1",  # lets --dangerously-skip-permissions run as root (CI)
}
# Variables passed through from the test's environment when set.
PASSED_THROUGH = ("CORRAL_HOME", "LANG", "LC_ALL", "TZ")
Scope = Literal["project", "local", "user"]


@dataclass(frozen=True)
class ClaudeRun:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    requests: tuple[Request, ...]
    api: FakeAPI = field(repr=False)

    @property
    def result(self) -> JSON:
        """The final JSON object of `--output-format json` (the last line of stream-json)."""
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        assert lines, f"the CLI printed nothing; stderr:\n{self.stderr}"
        parsed: JSON = json.loads(lines[-1])
        return parsed

    @property
    def text(self) -> str:
        return str(self.result.get("result", ""))

    def tool_results(self) -> list[JSON]:
        return self.api.tool_results()

    def explain(self) -> str:
        """What to print when an assertion about this run fails."""
        return (
            f"argv: {self.argv}\nexit: {self.returncode} after {self.seconds:.2f}s\n"
            f"stdout:\n{self.stdout[-3000:]}\nstderr:\n{self.stderr[-3000:]}\n"
            f"requests: {[(r.method, r.path, r.kind) for r in self.requests]}"
        )


class ClaudeCLI:
    """A temporary HOME and project for the real CLI; `run()` drives one `claude -p`."""

    def __init__(self, base: Path, binary: Path = CLAUDE_BIN) -> None:
        self.binary = binary
        self.home = base / "home"
        self.project = base / "project"
        for folder in (self.home, self.project):
            folder.mkdir(parents=True)
        # The CLI's temp folder holds its Unix sockets: keep it short (108-byte path limit).
        self.tmp = Path(tempfile.mkdtemp(prefix="corral-cc-"))
        self.marker = uuid.uuid4().hex
        self.runs: list[ClaudeRun] = []

    def settings_path(self, scope: Scope = "project") -> Path:
        if scope == "user":
            return self.home / ".claude" / "settings.json"
        name = "settings.local.json" if scope == "local" else "settings.json"
        return self.project / ".claude" / name

    def write_settings(self, settings: Mapping[str, Any], scope: Scope = "project") -> Path:
        """Write a settings file (replacing it) for the next runs."""
        path = self.settings_path(scope)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(settings, indent=2) + "\n")
        return path

    def trust_project(self) -> None:
        """Accept the trust dialog for the project, as a person would once: in `-p`, 2.1.332
        ignores a project's allow rules until then. The flag lives in the CLI's own config,
        `$CLAUDE_CONFIG_DIR/.claude.json` (the test's, see env())."""
        config = self.home / ".claude" / ".claude.json"
        config.parent.mkdir(parents=True, exist_ok=True)
        data = json.loads(config.read_text()) if config.exists() else {}
        data.setdefault("projects", {})[str(self.project)] = {"hasTrustDialogAccepted": True}
        config.write_text(json.dumps(data))

    def env(self, api_url: str, extra: Mapping[str, str] = {}) -> dict[str, str]:
        bin_dirs = [str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]
        env = {
            "HOME": str(self.home),
            "CLAUDE_CONFIG_DIR": str(self.home / ".claude"),  # never the real ~/.claude
            "PATH": os.pathsep.join(bin_dirs),
            "SHELL": "/bin/bash",
            "USER": os.environ.get("USER", "root"),
            "TERM": "dumb",
            # Task output files and the CLI's own sockets go here instead of /tmp.
            "TMPDIR": str(self.tmp),
            "CLAUDE_CODE_TMPDIR": str(self.tmp),
            "ANTHROPIC_BASE_URL": api_url,
            RUN_MARKER: self.marker,
            **OFFLINE_ENV,
        }
        env.update({k: os.environ[k] for k in PASSED_THROUGH if k in os.environ})
        env.update(extra)
        return env

    def run(
        self,
        prompt: str,
        script: Sequence[Turn],
        *,
        args: Sequence[str] = ("--allowedTools", "Bash", "--output-format", "json"),
        env: Mapping[str, str] = {},
        timeout: float = 180.0,
    ) -> ClaudeRun:
        """Run `claude -p PROMPT *args` in the project folder against a fake API."""
        argv = (str(self.binary), "-p", prompt, *args)
        out_path = self.home.parent / f"run-{len(self.runs)}.out"
        err_path = self.home.parent / f"run-{len(self.runs)}.err"
        with FakeAPI(script) as api:
            exited, seconds, returncode = run_in_group(
                argv, cwd=self.project, env=self.env(api.url, env), out_path=out_path,
                err_path=err_path, timeout=timeout,
            )  # fmt: skip
        run = ClaudeRun(
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
            raise TimeoutError(f"claude did not finish in {timeout}s\n{run.explain()}")
        return run

    def close(self) -> list[int]:
        """Reap escaped processes, remove the temp folder; return the pids that were killed."""
        escaped = self.reap_escaped()
        shutil.rmtree(self.tmp, ignore_errors=True)
        return escaped

    def reap_escaped(self) -> list[int]:
        """Kill by pid every process that carries this fixture's run marker."""
        return kill_with_env(f"{RUN_MARKER}={self.marker}".encode())


def run_in_group(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    out_path: Path,
    err_path: Path,
    timeout: float,
) -> tuple[bool, float, int]:
    """Run `argv` in a process group of its own, its output in the two files; once it exits
    (or `timeout` passed) kill what is left of its group. (exited in time, seconds, status)"""
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        started = time.monotonic()
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
            process_group=0,
        )  # fmt: skip
        exited = _wait_unreaped(proc, timeout)
        seconds = time.monotonic() - started
        # The leader is still unreaped (a zombie at worst), so its pgid is still ours.
        _kill_group(proc.pid)
        return exited, seconds, proc.wait()


def _wait_unreaped(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait for the CLI to exit without reaping it; False when the timeout passed."""
    if hasattr(os, "pidfd_open"):
        fd = os.pidfd_open(proc.pid)
        try:
            ready, _, _ = select.select([fd], [], [], timeout)
        finally:
            os.close(fd)
        return bool(ready)
    # No pidfd (macOS): reaping first leaves a tiny window where the pgid could be reused.
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def claude_binary_or_skip() -> Path:
    """The pinned CLI; skip when it is not installed, except in CI where that is a failure."""
    return binary_or_skip(CLAUDE_BIN, "Claude Code CLI", "scripts/install-claude.sh")


@pytest.fixture
def claude(tmp_path: Path) -> Iterator[ClaudeCLI]:
    """A ClaudeCLI in tmp_path; processes that escaped its runs fail the test."""
    cli = ClaudeCLI(tmp_path / "claude", claude_binary_or_skip())
    yield cli
    escaped = cli.close()
    assert not escaped, f"processes started under the Claude CLI were left running: {escaped}"
