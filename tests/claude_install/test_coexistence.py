"""corral's plugin and its settings install side by side, a project install that names no path
of the installing machine, and an uninstall that leaves nothing of corral's behind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

from corral.surfaces.claude import install
from tests.helpers import corral, free_port, private_home

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_HOOK = ROOT / "bin" / "corral-hook"


def run(project: Path, home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return corral("install", "claude", *args, cwd=project, env={**private_home(home), **env})


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    project, home = tmp_path / "p", tmp_path / "h"
    project.mkdir(parents=True)
    home.mkdir()
    return project, home


def _enable_plugin(settings_file: Path) -> None:
    settings_file.parent.mkdir(parents=True, exist_ok=True)
    settings_file.write_text(json.dumps({"enabledPlugins": {"corral@corral": True}}))


def test_user_scope_follows_claude_config_dir(tmp_path: Path) -> None:
    project, home = _dirs(tmp_path)
    config = tmp_path / "elsewhere"
    done = run(project, home, "--no-shell-prefix", CLAUDE_CONFIG_DIR=str(config))
    assert done.returncode == 0, done.stderr
    assert f"installed corral into {config / 'settings.json'}" in done.stdout
    assert install.HOOK_MARKS[0] in (config / "settings.json").read_text()
    assert (config / "commands" / "procs.md").is_file()
    assert not (home / ".claude").exists()


def test_an_enabled_plugin_gets_no_second_copy_of_the_hooks(tmp_path: Path) -> None:
    project, home = _dirs(tmp_path)
    _enable_plugin(home / ".claude" / "settings.json")
    done = run(project, home)
    assert done.returncode == 0, done.stderr
    assert (
        "note: corral's plugin is enabled (corral@corral in "
        f"{home / '.claude' / 'settings.json'}): it runs corral's hooks and /corral:procs, "
        "so only the status line and the shell prefix were installed"
    ) in done.stdout
    data = json.loads((home / ".claude" / "settings.json").read_text())
    assert "hooks" not in data
    assert data["enabledPlugins"] == {"corral@corral": True}
    assert install.PLUGIN_HINT in data["statusLine"]["command"]
    assert data["env"]["CLAUDE_CODE_SHELL_PREFIX"].endswith("corral-claude-prefix")
    assert not (home / ".claude" / "commands").exists()
    # a plugin enabled for the project only counts as well
    other_project, other_home = _dirs(tmp_path / "second")
    _enable_plugin(other_project / ".claude" / "settings.local.json")
    assert "corral's plugin is enabled" in run(other_project, other_home).stdout
    assert "hooks" not in json.loads((other_home / ".claude" / "settings.json").read_text())


def test_a_project_install_names_no_path_of_this_machine(tmp_path: Path, corral_home: Path) -> None:
    project, home = _dirs(tmp_path)
    done = run(project, home, "--scope", "project")
    assert done.returncode == 0, done.stderr
    committed = [
        project / ".claude" / "settings.json",
        project / ".claude" / "commands" / "procs.md",
    ]
    for path in committed:
        text = path.read_text()
        for machine in (sys.executable, str(ROOT), str(home), str(corral_home), str(tmp_path)):
            assert machine not in text, (path, machine)
    data = json.loads(committed[0].read_text())
    assert data["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == (
        "corral-hook pre-tool-use 2>/dev/null || exit 0"
    )
    assert data["statusLine"]["command"] == "corral-hook statusline"
    local = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert local == {
        "env": {"CLAUDE_CODE_SHELL_PREFIX": str(corral_home / "bin" / "corral-claude-prefix")}
    }
    assert "went to" in done.stdout and "settings.local.json" in done.stdout
    again = run(project, home, "--scope", "project")
    assert "already installed" in again.stdout
    gone = run(project, home, "--scope", "project", "--uninstall")
    assert gone.returncode == 0, gone.stderr
    assert not (project / ".claude").exists()


def _portable_env(tmp_path: Path, with_corral: bool) -> dict[str, str]:
    """An environment in which `corral-hook` is found on PATH (or not), with caches of its own."""
    bin_dir = Path(sys.executable).parent
    path = f"{bin_dir}:/usr/bin:/bin" if with_corral else "/usr/bin:/bin"
    return {
        **private_home(tmp_path / "h"),
        "PATH": path,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }


def _payload(line: str, cwd: Path) -> str:
    return json.dumps(
        {
            "hook_event_name": "PreToolUse",
            "session_id": str(uuid.uuid4()),
            "cwd": str(cwd),
            "permission_mode": "default",
            "tool_name": "Bash",
            "tool_use_id": f"toolu_{uuid.uuid4().hex}",
            "tool_input": {"command": line, "run_in_background": True},
        }
    )


def test_the_portable_hook_command_runs_corrals_hook_or_nothing(tmp_path: Path) -> None:
    assert shutil.which("corral-hook", path=str(Path(sys.executable).parent))
    command = install.hook_commands(portable=True)["pre-tool-use"]
    line = f"python3 -m http.server {free_port()}"
    found = subprocess.run(
        ["sh", "-c", command], input=_payload(line, tmp_path), capture_output=True, text=True,
        env=_portable_env(tmp_path, True), timeout=60,
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    out = json.loads(found.stdout)["hookSpecificOutput"]
    assert out["updatedInput"]["command"].endswith(f"-- '{line}'")
    missing = subprocess.run(
        ["sh", "-c", command], input=_payload(line, tmp_path), capture_output=True, text=True,
        env=_portable_env(tmp_path, False), timeout=60,
    )  # fmt: skip
    assert (missing.returncode, missing.stdout, missing.stderr) == (0, "", "")


def test_the_plugin_steps_aside_for_hooks_installed_in_settings(tmp_path: Path) -> None:
    project, home = _dirs(tmp_path)
    env = {**_portable_env(tmp_path, True), "CLAUDE_PROJECT_DIR": str(project)}
    line = f"python3 -m http.server {free_port()}"

    def plugin_hook() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(PLUGIN_HOOK), "--plugin", "pre-tool-use"], input=_payload(line, project),
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip

    alone = plugin_hook()
    assert alone.returncode == 0, alone.stderr
    assert "updatedInput" in json.loads(alone.stdout)["hookSpecificOutput"]
    for scope in ("project", "user"):
        done = run(project, home, "--scope", scope, "--no-shell-prefix")
        assert done.returncode == 0, done.stderr
        beside = plugin_hook()
        assert (beside.returncode, beside.stdout) == (0, ""), scope  # settings answer instead
        run(project, home, "--scope", scope, "--uninstall")
        # answered again (refused: the first answer's job is still being started)
        assert json.loads(plugin_hook().stdout)["hookSpecificOutput"]["permissionDecision"]


def test_uninstall_leaves_their_file_and_no_backup(tmp_path: Path) -> None:
    project, home = _dirs(tmp_path)
    settings_file = home / ".claude" / "settings.json"
    settings_file.parent.mkdir()
    theirs = {"model": "opus"}
    settings_file.write_text(json.dumps(theirs))
    assert run(project, home).returncode == 0
    assert settings_file.with_name("settings.json.corral-backup").exists()
    assert run(project, home, "--uninstall").returncode == 0
    assert json.loads(settings_file.read_text()) == theirs
    assert sorted(os.listdir(settings_file.parent)) == ["settings.json"]


def test_a_project_install_chains_the_prefix_of_the_projects_own_file(
    tmp_path: Path, corral_home: Path
) -> None:
    project, home = _dirs(tmp_path)
    committed = project / ".claude" / "settings.json"
    committed.parent.mkdir()
    theirs = {"env": {"CLAUDE_CODE_SHELL_PREFIX": "/opt/audit/wrap", "FOO": "1"}}
    committed.write_text(json.dumps(theirs))
    assert run(project, home, "--scope", "project").returncode == 0
    local = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert local["env"] == {
        "CLAUDE_CODE_SHELL_PREFIX": str(corral_home / "bin" / "corral-claude-prefix"),
        "CORRAL_CHAINED_SHELL_PREFIX": "/opt/audit/wrap",
    }
    assert json.loads(committed.read_text())["env"] == theirs["env"]
    assert run(project, home, "--scope", "project", "--uninstall").returncode == 0
    assert json.loads(committed.read_text()) == theirs
    assert sorted(os.listdir(committed.parent)) == ["settings.json"]
