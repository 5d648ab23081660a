"""Tests never write outside their temporary folders (issue 10): every external CLI a test
runs gets HOME and CLAUDE_CONFIG_DIR inside the test's own folder. tests/conftest.py also
fails a CI run if the real ~/.claude or ~/.claude.json changed while it ran."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.claude.harness import ClaudeCLI
from tests.helpers import private_home


def _inside(path: str, folder: Path) -> bool:
    return Path(path).resolve().is_relative_to(folder.resolve())


def test_the_claude_harness_gives_the_cli_a_private_home(tmp_path: Path) -> None:
    claude = ClaudeCLI(tmp_path)
    try:
        env = claude.env("http://127.0.0.1:9")
    finally:
        shutil.rmtree(claude.tmp, ignore_errors=True)
    assert _inside(env["HOME"], tmp_path)
    assert _inside(env["CLAUDE_CONFIG_DIR"], tmp_path)


def test_private_home_replaces_home_and_the_claude_config_folder(tmp_path: Path) -> None:
    env = private_home(tmp_path / "h", {"HOME": "/root", "CLAUDE_CONFIG_DIR": "/root/.claude"})
    assert _inside(env["HOME"], tmp_path) and _inside(env["CLAUDE_CONFIG_DIR"], tmp_path)
