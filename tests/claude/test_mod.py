"""corral's Claude Code mod (`mod/register.ts`, loaded by the plugin's `hooks/hooks.json`):
the plugin passes `claude plugin validate --strict`, and the mod's own suite (`mod/tests/`,
run by `claude plugin test` in the pinned CLI) passes: band, pane, keys, session events, the
daemon down, supervision with the original line's permission decision."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.claude.harness import OFFLINE_ENV, ROOT, claude_binary_or_skip

pytestmark = pytest.mark.slow


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    env = {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "TMPDIR": str(tmp_path),
        **OFFLINE_ENV,
    }
    return subprocess.run(
        [str(claude_binary_or_skip()), "plugin", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_plugin_validates_strictly(tmp_path: Path) -> None:
    done = _run(tmp_path, "validate", "--strict", str(ROOT))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "register.ts hooks: session.start, session.end, prompt.context" in done.stdout
    assert "gating hook without .catch" not in done.stdout


def test_the_mods_own_suite_passes(tmp_path: Path) -> None:
    done = _run(tmp_path, "test", str(ROOT))
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert " 0 fail" in out and "mod/tests/supervise.test.ts" in out, out
