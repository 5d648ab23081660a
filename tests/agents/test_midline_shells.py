"""A long runner sent to the background mid-line (`SERVER & sleep 1; curl …`) is moved under
corral's supervisor in the form the agent's shell can read. Claude Code runs bash or zsh and
Gemini CLI bash: the command keeps its text and a `function NAME {` leads it to the
supervisor. Codex and opencode may run the user's POSIX sh (dash), which cannot read that
form: there the command moves into the supervisor's command line, and the rewritten line
parses and runs under dash."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.agents.hooks import output, run
from tests.agents.opencode.test_opencode_hook import tool_before
from tests.agents.test_codex import pre_tool_use as codex_call
from tests.agents.test_gemini import before_tool as gemini_call
from tests.helpers import free_port
from tests.surfaces.claude.test_hook import payload as claude_call
from tests.surfaces.claude.test_hook import run_hook as run_claude_hook

DASH = shutil.which("dash")


def rewritten(agent: str, line: str, cwd: Path) -> str:
    """The line the agent's shell would run after corral's hook."""
    answer: dict[str, Any]
    if agent == "claude":
        answer = output(run_claude_hook("pre-tool-use", claude_call(line, cwd)))
        return str(answer["hookSpecificOutput"]["updatedInput"]["command"])
    if agent == "gemini":
        answer = output(run("gemini", "before-tool", gemini_call(line, cwd, dir_path="")))
        return str(answer["hookSpecificOutput"]["tool_input"]["command"])
    if agent == "codex":
        answer = output(run("codex", "pre-tool-use", codex_call(line, cwd)))
        return str(answer["hookSpecificOutput"]["updatedInput"]["command"])
    answer = output(run("opencode", "tool-before", tool_before(line, cwd)))
    return str(answer["command"])


@pytest.mark.parametrize("agent", ["claude", "gemini"])
def test_bash_and_zsh_agents_keep_the_commands_text(agent: str, tmp_path: Path) -> None:
    port = free_port()
    line = f"python3 -m http.server {port} & sleep 0.1; echo done"
    out = rewritten(agent, line, tmp_path)
    assert "function python3 {" in out, out
    assert f"; python3 -m http.server {port} & " in out, out  # the command's own bytes


@pytest.mark.parametrize("agent", ["codex", "opencode"])
def test_agents_whose_shell_may_be_sh_get_a_line_dash_reads(agent: str, tmp_path: Path) -> None:
    port = free_port()
    line = f"python3 -m http.server {port} & sleep 0.1; echo done"
    out = rewritten(agent, line, tmp_path)
    assert "function " not in out and "typeset" not in out, out
    assert f"-- 'python3 -m http.server {port}' &" in out, out
    if DASH is None:
        pytest.skip("dash is not installed: the parse check needs it")
    parsed = subprocess.run([DASH, "-n", "-c", out], capture_output=True, text=True, timeout=10)
    assert (parsed.returncode, parsed.stderr) == (0, ""), parsed.stderr


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_the_newer_kept_shapes_are_for_bash_and_zsh_agents_only(agent: str, tmp_path: Path) -> None:
    """An assignment first, a list's last command and a pipeline's runner keep their text
    for Claude Code; for an agent whose shell may be sh they become the supervisor's
    command line (a group, which only a function can lead to the supervisor, runs as
    written there)."""
    port = free_port()
    line = f"PORT={port} npm run dev | tee dev.log & sleep 0.1; echo done"
    out = rewritten(agent, line, tmp_path)
    group = f"(npm ci && python3 -m http.server {free_port()}) & sleep 0.1"
    if agent == "claude":
        assert "function npm {" in out and f"; PORT={port} npm run dev | tee dev.log & " in out
        assert "function python3 {" in rewritten(agent, group, tmp_path)
        return
    assert "function " not in out, out
    assert f"-- 'PORT={port} npm run dev | tee dev.log' &" in out, out
    untouched = run("codex", "pre-tool-use", codex_call(group, tmp_path))
    assert "function" not in untouched.stdout, untouched.stdout
    if DASH is not None:
        parsed = subprocess.run([DASH, "-n", "-c", out], capture_output=True, text=True, timeout=10)
        assert (parsed.returncode, parsed.stderr) == (0, ""), parsed.stderr
