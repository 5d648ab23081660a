"""The thin opencode plugin under opencode's own runtime: `BUN_BE_BUN=1 opencode test` runs
tests/agents/opencode/plugin.spec.js against the plugin as `corral install opencode` renders
it, with a fake hook program in place of corral's, and briefing.spec.js with corral's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from corral.surfaces.agents import opencode
from tests.agents.tools import INSTALL, OPENCODE_BIN
from tests.helpers import binary_or_skip, free_port, start_job

HERE = Path(__file__).resolve().parent


def test_plugin_follows_the_hook_and_fails_open(tmp_path: Path) -> None:
    binary = binary_or_skip(OPENCODE_BIN, "opencode", INSTALL)
    plugin = tmp_path / "corral.ts"
    plugin.write_text(opencode.plugin_text([sys.executable, str(HERE / "fake_hook.py")]))
    missing = tmp_path / "missing.ts"
    missing.write_text(opencode.plugin_text([str(tmp_path / "no-such-program")]))
    env = {
        **os.environ,
        "BUN_BE_BUN": "1",
        "HOME": str(tmp_path),
        "CORRAL_PLUGIN": str(plugin),
        "CORRAL_PLUGIN_MISSING": str(missing),
        "FAKE_HOOK_LOG": str(tmp_path / "requests.jsonl"),
    }
    report = bun_test(binary, "plugin.spec.js", env)
    assert " 0 fail" in report and " 17 pass" in report, report


def test_briefing_from_corrals_own_hook_names_a_running_jobs_url(tmp_path: Path) -> None:
    binary = binary_or_skip(OPENCODE_BIN, "opencode", INSTALL)
    project = tmp_path / "project"
    project.mkdir()
    port = free_port()
    job = start_job(f"python3 -m http.server {port} --bind 127.0.0.1", "--ready", "port",
                    cwd=project)  # fmt: skip
    plugin = tmp_path / "corral.ts"
    plugin.write_text(opencode.plugin_text(opencode.hook_program()))
    env = {
        **os.environ,
        "BUN_BE_BUN": "1",
        "HOME": str(tmp_path),
        "CORRAL_PLUGIN": str(plugin),
        "PROJECT": str(project),
        "PORT": str(port),
        "JOB": job["id"][:8],
        "CORRAL_STOP": json.dumps([sys.executable, "-m", "corral", "stop", "--all"]),
    }
    report = bun_test(binary, "briefing.spec.js", env)
    assert " 0 fail" in report and " 1 pass" in report, report


def bun_test(binary: Path, spec: str, env: dict[str, str]) -> str:
    """`opencode test SPEC` (bun's test runner) in this folder; its report."""
    done = subprocess.run(
        [str(binary), "test", str(HERE / spec)],
        cwd=HERE,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    return report


def test_the_hook_is_written_as_a_json_array() -> None:
    text = opencode.plugin_text(["/usr/bin/python3", "-I", 'it\'s "quoted"'])
    assert 'const HOOK: string[] = ["/usr/bin/python3", "-I", "it\'s \\"quoted\\""]\n' in text
    assert text.startswith(opencode.PLUGIN_MARK)
