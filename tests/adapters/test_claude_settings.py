"""Reading Claude Code's Bash permission rules from its settings files (real files in a
temporary HOME, project and managed folder)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from corral.adapters.claude_settings import MANAGED_DIR, load_rules
from corral.core.claude.permissions import Rules


class Setup:
    def __init__(self, base: Path) -> None:
        self.home = base / "home"
        self.project = base / "project"
        self.managed = base / "managed"
        for folder in (self.home, self.project, self.managed):
            folder.mkdir()

    def write(self, path: Path, content: Any) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content))
        return path

    def user(self, content: Any) -> Path:
        return self.write(self.home / ".claude" / "settings.json", content)

    def project_settings(self, content: Any) -> Path:
        return self.write(self.project / ".claude" / "settings.json", content)

    def local(self, content: Any) -> Path:
        return self.write(self.project / ".claude" / "settings.local.json", content)

    def trust(self, folder: Path | None = None) -> None:
        key = str(folder or self.project)
        state = {"projects": {key: {"hasTrustDialogAccepted": True}}, "numStartups": 3}
        self.write(self.home / ".claude.json", state)

    def load(self, **kwargs: Any) -> Rules:
        return load_rules(
            str(self.project), str(self.home), managed_dir=str(self.managed), **kwargs
        )


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    return Setup(tmp_path)


def written(rules: Rules) -> dict[str, list[str]]:
    return {
        "allow": [r.written for r in rules.allow],
        "ask": [r.written for r in rules.ask],
        "deny": [r.written for r in rules.deny],
    }


def perms(
    allow: tuple[str, ...] = (), ask: tuple[str, ...] = (), deny: tuple[str, ...] = ()
) -> dict[str, Any]:
    return {"permissions": {"allow": list(allow), "ask": list(ask), "deny": list(deny)}}


def test_no_files_no_rules(setup: Setup) -> None:
    assert setup.load() == Rules()


def test_rules_of_every_file_add_up(setup: Setup) -> None:
    setup.write(setup.managed / "managed-settings.json", perms(deny=("Bash(rm:*)",)))
    setup.user(perms(allow=("Bash(npm run dev:*)",), ask=("Bash(git push:*)",)))
    setup.project_settings(perms(deny=("Bash(curl:*)",), ask=("Bash(docker:*)",)))
    setup.local(perms(allow=("Bash(vite)",), deny=("Read(./.env)",)))
    assert written(setup.load()) == {
        "allow": ["Bash(npm run dev:*)", "Bash(vite)"],
        "ask": ["Bash(git push:*)", "Bash(docker:*)"],
        "deny": ["Bash(rm:*)", "Bash(curl:*)"],
    }


def test_project_allow_rules_count_only_in_a_trusted_folder(setup: Setup) -> None:
    # Checked against the CLI: in an untrusted folder a project allow rule still prompts.
    setup.project_settings(perms(allow=("Bash(npm run dev:*)",), deny=("Bash(rm:*)",)))
    assert written(setup.load())["allow"] == []
    assert written(setup.load())["deny"] == ["Bash(rm:*)"]
    setup.trust(setup.project.parent)  # a parent folder's trust is not enough for corral
    assert written(setup.load())["allow"] == []
    setup.trust()
    assert written(setup.load())["allow"] == ["Bash(npm run dev:*)"]


def test_an_unreadable_trust_file_means_untrusted(setup: Setup) -> None:
    setup.project_settings(perms(allow=("Bash(npm run dev:*)",)))
    setup.write(setup.home / ".claude.json", "{not json")
    rules = setup.load()
    assert rules.unsure is None
    assert rules.allow == ()


def test_claude_config_dir_moves_user_settings_and_trust(setup: Setup, tmp_path: Path) -> None:
    config = tmp_path / "config"
    setup.user(perms(deny=("Bash(ignored:*)",)))
    setup.write(config / "settings.json", perms(deny=("Bash(rm:*)",)))
    setup.project_settings(perms(allow=("Bash(vite)",)))
    state = {"projects": {str(setup.project): {"hasTrustDialogAccepted": True}}}
    setup.write(config / ".claude.json", state)
    rules = setup.load(config_dir=str(config))
    assert written(rules) == {"allow": ["Bash(vite)"], "ask": [], "deny": ["Bash(rm:*)"]}


def test_managed_drop_ins_are_read_in_order(setup: Setup) -> None:
    drop_ins = setup.managed / "managed-settings.d"
    setup.write(drop_ins / "20-b.json", perms(deny=("Bash(b)",)))
    setup.write(drop_ins / "10-a.json", perms(deny=("Bash(a)",)))
    setup.write(drop_ins / ".hidden.json", "{broken")
    setup.write(drop_ins / "notes.txt", "{broken")
    (drop_ins / "folder.json").mkdir()
    assert written(setup.load())["deny"] == ["Bash(a)", "Bash(b)"]


def test_managed_rules_only_drops_other_allow_rules(setup: Setup) -> None:
    managed = {**perms(allow=("Bash(make)",)), "allowManagedPermissionRulesOnly": True}
    setup.write(setup.managed / "managed-settings.json", managed)
    setup.user(perms(allow=("Bash(npm:*)",), deny=("Bash(rm:*)",)))
    setup.local(perms(allow=("Bash(vite)",), ask=("Bash(git:*)",)))
    assert written(setup.load()) == {
        "allow": ["Bash(make)"],
        "ask": ["Bash(git:*)"],  # kept: stricter than Claude Code at worst
        "deny": ["Bash(rm:*)"],
    }


BROKEN = {
    "not-json": '{"permissions": ',
    "not-utf8": "\udcff",
    "not-an-object": "[1, 2]",
    "permissions-not-an-object": {"permissions": ["Bash"]},
    "deny-not-a-list": {"permissions": {"deny": "Bash(rm:*)"}},
    "entry-not-a-string": {"permissions": {"ask": ["Bash(x)", 3]}},
}


@pytest.mark.parametrize("content", BROKEN.values(), ids=BROKEN.keys())
@pytest.mark.parametrize("where", ["managed", "user", "project", "local", "drop-in"])
def test_a_broken_file_makes_the_rules_unsure(setup: Setup, where: str, content: Any) -> None:
    paths = {
        "managed": setup.managed / "managed-settings.json",
        "user": setup.home / ".claude" / "settings.json",
        "project": setup.project / ".claude" / "settings.json",
        "local": setup.project / ".claude" / "settings.local.json",
        "drop-in": setup.managed / "managed-settings.d" / "x.json",
    }
    path = paths[where]
    path.parent.mkdir(parents=True, exist_ok=True)
    if content == "\udcff":
        path.write_bytes(b"\xff{}")
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    rules = setup.load()
    assert rules.unsure is not None
    assert str(path) in rules.unsure


def test_a_file_that_cannot_be_read_makes_the_rules_unsure(setup: Setup) -> None:
    (setup.project / ".claude" / "settings.local.json").mkdir(parents=True)
    rules = setup.load()
    assert rules.unsure is not None and "settings.local.json" in rules.unsure


def test_other_keys_and_tools_are_ignored(setup: Setup) -> None:
    user = {
        "permissions": {
            "allow": ["Read", "WebFetch(domain:x.com)", "Bash(ls)"],
            "defaultMode": "plan",
        },
        "hooks": {"PreToolUse": []},
        "model": "opus",
    }
    setup.user(user)
    assert written(setup.load()) == {"allow": ["Bash(ls)"], "ask": [], "deny": []}


def test_the_managed_folder_of_this_platform() -> None:
    expected = (
        "/Library/Application Support/ClaudeCode"
        if sys.platform == "darwin"
        else "/etc/claude-code"
    )
    assert expected == MANAGED_DIR


def test_the_default_managed_folder_is_read(tmp_path: Path) -> None:
    # Whatever this machine has there must not make an empty HOME and project unsure.
    rules = load_rules(str(tmp_path), str(tmp_path))
    assert rules.unsure is None or MANAGED_DIR in rules.unsure
    assert os.path.isabs(MANAGED_DIR)


def test_rule_flags_on_an_ancestor_command_line_are_found(tmp_path: Path) -> None:
    import subprocess
    import sys

    from corral.adapters.claude_settings import command_line_rules

    probe = (
        "import sys; sys.path[:0] = [sys.argv[1]]\n"
        "from corral.adapters.claude_settings import command_line_rules as c; import os\n"
        "print(c(os.getpid(), levels=2))"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    # The flag sits on the probe's parent (a shell), not on the probe itself. The walk stops
    # there: further up are pytest and whatever started it (an agent's CLI may carry rule
    # flags of its own), which this test does not choose.
    for flag, found in (("--disallowedTools", True), ("--settings=x.json", True),
                        ("--allowedTools", False), ("--verbose", False)):  # fmt: skip
        out = subprocess.run(
            ["bash", "-c", f'{sys.executable} -c "$0" "$1"; true', probe, src, flag],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        assert (out != "None") == found, (flag, out)
    assert command_line_rules(1) is None
