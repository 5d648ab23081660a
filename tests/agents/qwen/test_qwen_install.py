"""corral install qwen: merged into Qwen Code's settings.json idempotently, everything else
kept, removed cleanly, and a file it cannot parse left alone."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest

from corral.surfaces.agents import install_qwen, run_hook
from corral.surfaces.claude.install import InstallError
from tests.helpers import corral, private_home

THEIRS: dict[str, Any] = {
    "model": {"name": "qwen3-coder-plus"},
    "hooks": {
        "PreToolUse": [{"matcher": "write_file", "hooks": [{"type": "command",
                                                           "command": "lint.sh"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify.sh", "timeout": 5}]}],
    },
    "disableAllHooks": False,
}  # fmt: skip


def test_install_adds_corrals_hooks_and_keeps_everything_else(tmp_path: Path) -> None:
    path = tmp_path / "home" / ".qwen" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(THEIRS))
    report = install_qwen.install("user", tmp_path / "project", tmp_path / "home")
    assert report.changed and report.settings == path and report.backup is not None
    data = json.loads(path.read_text())
    assert data["model"] == THEIRS["model"] and data["hooks"]["Stop"] == THEIRS["hooks"]["Stop"]
    pre = data["hooks"]["PreToolUse"]
    assert pre[0] == THEIRS["hooks"]["PreToolUse"][0]
    assert pre[1] == {"matcher": "^run_shell_command$", "hooks": [
        {"type": "command", "timeout": 30,
         "command": shlex.join(run_hook.command("qwen", "pre-tool-use"))}]}  # fmt: skip
    for event, name in (("SessionStart", "session-start"), ("SessionEnd", "session-end")):
        [group] = data["hooks"][event]
        assert group["hooks"][0]["command"] == shlex.join(run_hook.command("qwen", name))
    assert json.loads(report.backup.read_text()) == THEIRS


def test_install_twice_changes_nothing_and_uninstall_gives_their_file_back(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    path = project / ".qwen" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(THEIRS))
    assert install_qwen.install("project", project, tmp_path / "home").changed
    installed = path.read_bytes()
    assert not install_qwen.install("project", project, tmp_path / "home").changed
    assert path.read_bytes() == installed
    assert install_qwen.uninstall("project", project, tmp_path / "home").changed
    assert json.loads(path.read_text()) == THEIRS
    assert list(path.parent.iterdir()) == [path]  # no backup of corral's left behind
    assert not install_qwen.uninstall("project", project, tmp_path / "home").changed


def test_uninstall_of_an_install_into_no_file_leaves_no_file(tmp_path: Path) -> None:
    install_qwen.install("user", tmp_path, tmp_path / "home")
    install_qwen.uninstall("user", tmp_path, tmp_path / "home")
    assert list((tmp_path / "home").iterdir()) == []


@pytest.mark.parametrize(
    "text", ['{"hooks": ', "// a comment\n{}", '["a list"]', '{"hooks": {"PreToolUse": 3}}']
)
def test_a_file_it_cannot_read_is_refused_and_left_alone(text: str, tmp_path: Path) -> None:
    path = tmp_path / "home" / ".qwen" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(InstallError):
        install_qwen.install("user", tmp_path, tmp_path / "home")
    assert path.read_text() == text
    assert list(path.parent.iterdir()) == [path]


def test_disabled_hooks_are_named(tmp_path: Path) -> None:
    path = tmp_path / "home" / ".qwen" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"disableAllHooks": True}))
    report = install_qwen.install("user", tmp_path, tmp_path / "home")
    assert report.notes == [f"{path} sets disableAllHooks: Qwen Code runs no hook"]


def test_the_cli_installs_and_uninstalls(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {**private_home(home), "CORRAL_HOME": os.environ["CORRAL_HOME"]}
    path = home / ".qwen" / "settings.json"
    done = corral("install", "qwen", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"installed corral into {path}\nrestart Qwen Code for the change to take effect\n"
    )
    assert set(json.loads(path.read_text())["hooks"]) == {"PreToolUse", "SessionStart",
                                                         "SessionEnd"}  # fmt: skip
    assert corral("install", "qwen", env=env, cwd=tmp_path).stdout.startswith("already installed")
    done = corral("install", "qwen", "--uninstall", env=env, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith(f"removed corral from {path}")
    assert not path.parent.exists()  # it held nothing else
    path.parent.mkdir()
    path.write_text("{not json")
    refused = corral("install", "qwen", env=env, cwd=tmp_path)
    assert refused.returncode == 1 and "is not valid JSON" in refused.stderr
    assert path.read_text() == "{not json"
