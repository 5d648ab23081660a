"""corral install claude and the shell prefix: set in the settings' env, the user's own
prefix chained and given back, nothing else touched."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from corral.surfaces.claude import install, prefix
from corral.surfaces.claude.install import InstallError, merge, unmerge
from tests.claude_install.test_install import HOOKS, LINE, user_settings
from tests.helpers import corral

OURS = "/state/corral/bin/corral-claude-prefix"


@settings(max_examples=200, deadline=None)
@given(user_settings)
def test_merge_then_unmerge_gives_back_the_settings(original: dict[str, Any]) -> None:
    if "env" in original and not isinstance(original["env"], dict):
        with pytest.raises(InstallError, match="`env` is not a JSON object"):
            merge(original, HOOKS, LINE, OURS)
        return
    merged = merge(original, HOOKS, LINE, OURS)
    assert merged["env"][prefix.PREFIX] == OURS
    assert merge(merged, HOOKS, LINE, OURS) == merged  # installing twice changes nothing
    expected = {k: v for k, v in original.items() if not (k == "env" and v == {})}
    assert unmerge(merged) == expected  # an `env` we emptied goes (`{}` means no env)


def test_their_prefix_is_chained_and_comes_back() -> None:
    theirs = {"env": {prefix.PREFIX: "/usr/local/bin/audit-wrap", "FOO": "1"}}
    merged = merge(theirs, None, None, OURS)
    assert merged["env"] == {
        prefix.PREFIX: OURS,
        prefix.CHAINED: "/usr/local/bin/audit-wrap",
        "FOO": "1",
    }
    moved = merge(merged, None, None, "/new/state/bin/corral-claude-prefix")
    assert moved["env"][prefix.CHAINED] == "/usr/local/bin/audit-wrap"  # not chained to ours
    assert unmerge(moved) == theirs


def _corral(args: list[str], project: Path, home: Path) -> Any:
    return corral("install", "claude", *args, cwd=project, env={**os.environ, "HOME": str(home)})


@pytest.mark.parametrize(
    ("scope", "name", "prefix_name"),
    [
        ("local", "settings.local.json", "settings.local.json"),
        # a project's settings.json is committed: the prefix, a path of this machine, goes to
        # the local file beside it
        ("project", "settings.json", "settings.local.json"),
    ],
)
def test_install_writes_the_program_and_the_env_then_uninstall_takes_it_out(
    tmp_path: Path, corral_home: Path, scope: str, name: str, prefix_name: str
) -> None:
    project, home = tmp_path / "p", tmp_path / "h"
    project.mkdir()
    home.mkdir()
    done = _corral(["--scope", scope], project, home)
    assert done.returncode == 0, done.stderr
    data = json.loads((project / ".claude" / name).read_text())
    env = json.loads((project / ".claude" / prefix_name).read_text())["env"]
    program = Path(env[prefix.PREFIX])
    assert program == corral_home / "bin" / prefix.NAME
    assert os.access(program, os.X_OK) and program.read_text().startswith("#!/bin/sh\n")
    assert data["hooks"]["PreToolUse"]
    gone = _corral(["--scope", scope, "--uninstall"], project, home)
    assert gone.returncode == 0, gone.stderr
    # every file was corral's alone: none is left, not even empty, and no backup
    assert not (project / ".claude").exists()


def test_prefix_only_for_plugin_users(tmp_path: Path, corral_home: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "h"
    project.mkdir()
    home.mkdir()
    done = _corral(["--prefix-only"], project, home)
    assert done.returncode == 0, done.stderr
    data = json.loads((home / ".claude" / "settings.json").read_text())
    assert set(data) == {"env"} and prefix.active(data["env"])


def test_no_shell_prefix_leaves_env_alone(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "h"
    project.mkdir()
    home.mkdir()
    assert _corral(["--scope", "project", "--no-shell-prefix"], project, home).returncode == 0
    assert "env" not in json.loads((project / ".claude" / "settings.json").read_text())
    assert install.settings_path("local", project, home).name == "settings.local.json"
