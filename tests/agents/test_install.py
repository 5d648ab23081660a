"""`corral install codex|gemini`: merged into the agent's configuration idempotently, keeping
everything else; refusing a file it cannot parse; `--uninstall` takes out only corral's."""

from __future__ import annotations

import json
import os
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest

from corral.surfaces.agents import install_codex, run_hook
from tests.helpers import corral, private_home

THEIRS_TOML = """# my Codex settings
model = "gpt-5"  # the one I like
[[hooks.PreToolUse]]
matcher = "*"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "my-audit"
[projects."/srv/app"]
trust_level = "trusted"
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {**private_home(home), "CODEX_HOME": str(home / ".codex")}


def install(env: dict[str, str], *args: str, cwd: Path | None = None) -> str:
    result = corral("install", *args, env=env, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result.stdout


def codex_config(env: dict[str, str]) -> Path:
    return Path(env["CODEX_HOME"]) / "config.toml"


def test_trust_hash_is_the_one_codex_accepted() -> None:
    # checked against Codex 0.169: it ran a hook configured so with this hash, and skipped
    # it under another (a group without matcher has no "matcher" key)
    digest = install_codex.trusted_hash("pre_tool_use", "/tmp/cx/hooklog.sh pre", "^Bash$", 30)
    assert digest == "sha256:5bde09fea571e52aa750cfc553dc6cc9aa9b945a0b84bcfbadc240b5b4cbf1e7"


def test_codex_install_appends_trusted_hooks_and_keeps_the_rest(env: dict[str, str]) -> None:
    path = codex_config(env)
    path.parent.mkdir()
    path.write_text(THEIRS_TOML)
    out = install(env, "codex")
    assert f"installed corral into {path}" in out and "trusted its own hooks" in out
    text = path.read_text()
    assert text.startswith(THEIRS_TOML)  # every byte of theirs, comments included
    data = tomllib.loads(text)
    [theirs, ours] = data["hooks"]["PreToolUse"]
    assert theirs["hooks"][0]["command"] == "my-audit"
    command = shlex.join(run_hook.command("codex", "pre-tool-use"))
    assert ours == {"matcher": "^Bash$",
                    "hooks": [{"type": "command", "command": command, "timeout": 30}]}  # fmt: skip
    state = data["hooks"]["state"]
    key = f"{path}:pre_tool_use:1:0"  # theirs is group 0
    expected = install_codex.trusted_hash("pre_tool_use", command, "^Bash$", 30)
    assert state[key] == {"trusted_hash": expected}
    assert set(state) == {
        key, f"{path}:post_tool_use:0:0", f"{path}:session_start:0:0",
        f"{path}:session_end:0:0",
    }  # fmt: skip
    assert data["projects"] == {"/srv/app": {"trust_level": "trusted"}}
    assert "already installed" in install(env, "codex")
    assert path.read_text() == text
    assert "removed corral from" in install(env, "codex", "--uninstall")
    assert path.read_text() == THEIRS_TOML


def test_codex_install_refuses_a_file_it_cannot_parse(env: dict[str, str]) -> None:
    path = codex_config(env)
    path.parent.mkdir()
    path.write_text('model = "gpt-5\n')
    result = corral("install", "codex", env=env)
    assert result.returncode == 1 and "is not valid TOML" in result.stderr
    assert "Nothing was written" in result.stderr
    assert path.read_text() == 'model = "gpt-5\n'


def test_codex_install_refuses_hooks_written_inline(env: dict[str, str]) -> None:
    path = codex_config(env)
    path.parent.mkdir()
    inline = '[hooks]\nPreToolUse = [{ matcher = "*", hooks = [] }]\n'
    path.write_text(inline)
    result = corral("install", "codex", env=env)
    assert result.returncode == 1 and "written inline there" in result.stderr
    assert path.read_text() == inline


def test_codex_project_scope_trusts_its_hooks_in_the_users_file(
    env: dict[str, str], tmp_path: Path
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    out = install(env, "codex", "--scope", "project", cwd=project)
    assert "only in a project you trusted" in out
    hooks = project / ".codex" / "config.toml"
    data = tomllib.loads(hooks.read_text())
    assert len(data["hooks"]["PreToolUse"]) == 1
    user = tomllib.loads(codex_config(env).read_text())
    assert f"{hooks}:pre_tool_use:0:0" in user["hooks"]["state"]
    assert "already installed" in install(env, "codex", "--scope", "project", cwd=project)
    install(env, "codex", "--scope", "project", "--uninstall", cwd=project)
    assert hooks.read_text() == "" and codex_config(env).read_text() == ""


def gemini_settings(env: dict[str, str]) -> Path:
    return Path(env["HOME"]) / ".gemini" / "settings.json"


def test_gemini_install_merges_hooks_and_keeps_the_rest(env: dict[str, str]) -> None:
    path = gemini_settings(env)
    path.parent.mkdir()
    theirs: dict[str, Any] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "hooks": {"BeforeTool": [{"matcher": "write_file",
                                  "hooks": [{"type": "command", "command": "lint"}]}]},
    }  # fmt: skip
    path.write_text(json.dumps(theirs))
    install(env, "gemini")
    data = json.loads(path.read_text())
    assert data["security"] == theirs["security"]
    [kept, ours] = data["hooks"]["BeforeTool"]
    assert kept == theirs["hooks"]["BeforeTool"][0]
    assert ours["matcher"] == "^run_shell_command$"
    command = shlex.join(run_hook.command("gemini", "before-tool"))
    assert ours["hooks"] == [
        {"name": "corral", "type": "command", "timeout": 30000, "command": command}
    ]
    assert set(data["hooks"]) == {"BeforeTool", "AfterTool", "SessionStart", "SessionEnd"}
    text = path.read_text()
    assert "already installed" in install(env, "gemini")
    assert path.read_text() == text
    install(env, "gemini", "--uninstall")
    assert json.loads(path.read_text()) == theirs


def test_gemini_install_refuses_invalid_json(env: dict[str, str]) -> None:
    path = gemini_settings(env)
    path.parent.mkdir()
    path.write_text("{not json")
    result = corral("install", "gemini", env=env)
    assert result.returncode == 1 and "is not valid JSON" in result.stderr
    assert path.read_text() == "{not json"


def test_claude_only_options_are_usage_errors(env: dict[str, str]) -> None:
    result = corral("install", "gemini", "--statusline-only", env=env)
    assert result.returncode == 2 and "--statusline-only" in result.stderr
    result = corral("install", "codex", "--scope", "local", env=env)
    assert result.returncode == 1 and "--scope user or project" in result.stderr
    assert not os.path.exists(codex_config(env))
