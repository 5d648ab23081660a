"""corral install opencode: corral's plugin in opencode's plugin folder, written once, never
over a file of the user's, removed cleanly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from corral.surfaces.agents import install_opencode, opencode
from corral.surfaces.claude.install import InstallError
from tests.helpers import corral, private_home


def test_user_scope_follows_xdg_config_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    home = tmp_path / "home"
    assert install_opencode.plugin_path("user", tmp_path, home) == (
        home / ".config" / "opencode" / "plugins" / "corral.ts"
    )
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert install_opencode.plugin_path("user", tmp_path, home) == (
        tmp_path / "xdg" / "opencode" / "plugins" / "corral.ts"
    )
    assert install_opencode.plugin_path("project", tmp_path, home) == (
        tmp_path / ".opencode" / "plugins" / "corral.ts"
    )


def test_install_writes_the_plugin_once_and_uninstall_removes_only_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    theirs = project / ".opencode" / "plugins" / "theirs.ts"
    theirs.parent.mkdir(parents=True)
    theirs.write_text("export const Theirs = async () => ({})\n")
    report = install_opencode.install("project", project, tmp_path)
    path = theirs.with_name("corral.ts")
    assert report.changed and report.settings == path
    assert path.read_text() == opencode.plugin_text(opencode.hook_program())
    assert not install_opencode.install("project", project, tmp_path).changed
    assert install_opencode.uninstall("project", project, tmp_path).changed
    assert sorted(theirs.parent.iterdir()) == [theirs]
    assert not install_opencode.uninstall("project", project, tmp_path).changed


def test_uninstall_removes_the_folder_it_made(tmp_path: Path) -> None:
    install_opencode.install("project", tmp_path, tmp_path)
    install_opencode.uninstall("project", tmp_path, tmp_path)
    assert list((tmp_path / ".opencode").iterdir()) == []


def test_a_corral_ts_of_the_users_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / ".opencode" / "plugins" / "corral.ts"
    path.parent.mkdir(parents=True)
    path.write_text("// my own corral plugin\n")
    with pytest.raises(InstallError, match="is not corral's plugin"):
        install_opencode.install("project", tmp_path, tmp_path)
    assert not install_opencode.uninstall("project", tmp_path, tmp_path).changed
    assert path.read_text() == "// my own corral plugin\n"


def test_the_cli_places_and_removes_the_plugin(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {**private_home(home), "CORRAL_HOME": os.environ["CORRAL_HOME"]}
    env.pop("XDG_CONFIG_HOME", None)
    path = home / ".config" / "opencode" / "plugins" / "corral.ts"
    done = corral("install", "opencode", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"installed corral into {path}\nrestart opencode for the change to take effect\n"
    )
    assert path.read_text().startswith(opencode.PLUGIN_MARK)
    done = corral("install", "opencode", "--scope", "project", env=env, cwd=tmp_path)
    assert done.stdout.startswith(f"installed corral into {tmp_path}/.opencode/plugins/corral.ts")
    done = corral("install", "opencode", "--uninstall", env=env, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith(f"removed corral from {path}")
    assert not path.exists()
