"""The PreToolUse hook when corral's shell prefix is installed (Claude Code passes
CLAUDE_CODE_SHELL_PREFIX to hooks): it rewrites nothing, so no line is supervised twice; it
notes background calls for the prefix and still refuses a duplicate early."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from corral.surfaces.claude import prefix
from tests.helpers import corral, free_port, start_job
from tests.surfaces.claude.test_hook import SESSION, answer, payload, run_hook


def prefix_env(corral_home: Path) -> dict[str, str]:
    return {"CLAUDE_CODE_SHELL_PREFIX": prefix.launcher_path(str(corral_home))}


def test_a_long_runner_is_not_rewritten(tmp_path: Path, corral_home: Path) -> None:
    line = f"python3 -m http.server {free_port()} --bind 127.0.0.1"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    without = answer(run_hook("pre-tool-use", payload(line, elsewhere)))
    assert "updatedInput" in without  # the rewrite the prefix replaces
    shutil.rmtree(corral_home / "reservations")  # that rewrite's reservations
    result = run_hook("pre-tool-use", payload(line, tmp_path), env=prefix_env(corral_home))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert not (corral_home / "reservations").exists() or not os.listdir(
        corral_home / "reservations"
    )  # the prefix reserves when it runs, so a reservation here would refuse it


def test_a_background_call_leaves_a_note_for_the_prefix(tmp_path: Path, corral_home: Path) -> None:
    line = "sleep 1; echo done"
    data = payload(line, tmp_path, run_in_background=True)
    result = run_hook("pre-tool-use", data, env=prefix_env(corral_home))
    assert (result.returncode, result.stdout) == (0, "")
    assert prefix.take_note(str(corral_home), SESSION, line)
    assert not prefix.take_note(str(corral_home), SESSION, line)  # used once


def test_a_duplicate_is_still_refused_early(tmp_path: Path, corral_home: Path) -> None:
    port = free_port()
    line = f"python3 -m http.server {port} --bind 127.0.0.1"
    job = start_job(line, cwd=tmp_path)
    try:
        data = payload(line, tmp_path, run_in_background=True)
        again = answer(run_hook("pre-tool-use", data, env=prefix_env(corral_home)))
        assert again["permissionDecision"] == "deny"
        assert job["id"][:8] in again["permissionDecisionReason"]
        assert "updatedInput" not in again
    finally:
        corral("stop", "--all", check=True)
