"""corral install claude: merging into settings files and taking it out again."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from corral.surfaces.claude import install
from corral.surfaces.claude.install import merge, unmerge
from tests.helpers import corral

ROOT = Path(__file__).resolve().parents[2]
HOOKS = install.hook_commands()
LINE = install.statusline_for(install.SETTINGS_HINT)


def full(settings: dict[str, Any]) -> dict[str, Any]:
    return merge(settings, HOOKS, LINE)


# -- arbitrary settings a user may already have ----------------------------------------------

text = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=12)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), text)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(text, inner, max_size=3)),
    max_leaves=6,
)
their_hook = st.fixed_dictionaries(
    {"type": st.just("command"), "command": text}, optional={"timeout": st.integers(1, 60)}
)
group = st.fixed_dictionaries(
    {"hooks": st.lists(their_hook, min_size=1, max_size=2)},
    optional={"matcher": st.sampled_from(["Bash", "Edit", "*", ""])},
)
hooks = st.dictionaries(
    st.sampled_from(["PreToolUse", "PostToolUse", "SessionStart", "SessionEnd", "Stop"]),
    st.lists(group, min_size=1, max_size=3),
    min_size=1,
)
status_line = st.fixed_dictionaries(
    {"type": st.just("command"), "command": text},
    optional={"padding": st.integers(0, 3), "refreshInterval": st.integers(1, 10)},
)
user_settings = st.dictionaries(
    st.sampled_from(["model", "permissions", "env", "theme", "x-other"]), values, max_size=3
).flatmap(
    lambda base: st.fixed_dictionaries(
        {}, optional={"hooks": hooks, "statusLine": status_line}
    ).map(lambda extra: {**base, **extra})
)


@settings(max_examples=300, deadline=None)
@given(user_settings)
def test_merge_then_unmerge_gives_back_the_settings(original: dict[str, Any]) -> None:
    merged = full(original)
    assert unmerge(merged) == original
    assert full(merged) == merged  # a second install changes nothing
    assert merge(original, None, None) == original


@settings(max_examples=200, deadline=None)
@given(user_settings, user_settings)
def test_unmerge_keeps_what_the_user_changed_after_install(before, edits) -> None:
    """The user edits other keys (and adds hooks) after installing: uninstall removes only
    our entries."""
    merged = full(before)
    edited = {**merged, **{k: v for k, v in edits.items() if k not in ("hooks", "statusLine")}}
    extra = {"matcher": "Edit", "hooks": [{"type": "command", "command": "their-new-hook"}]}
    edited["hooks"] = {**edited["hooks"], "PreToolUse": [*edited["hooks"]["PreToolUse"], extra]}
    out = unmerge(edited)
    assert extra in out["hooks"]["PreToolUse"]
    assert {k: v for k, v in out.items() if k != "hooks"} == {
        k: v for k, v in unmerge(merged).items() if k != "hooks"
    } | {k: v for k, v in edits.items() if k not in ("hooks", "statusLine")}
    assert not any(mark in json.dumps(out) for mark in install.HOOK_MARKS)


@settings(max_examples=200, deadline=None)
@given(user_settings)
def test_every_event_has_exactly_our_one_hook(original: dict[str, Any]) -> None:
    merged = full(full(original))
    for event, (name, matcher) in install.EVENTS.items():
        ours = [
            (g.get("matcher"), h["command"])
            for g in merged["hooks"][name]
            for h in g["hooks"]
            if install.HOOK_MARKS[0] in h["command"]
        ]
        assert ours == [(matcher, HOOKS[event])]


def test_their_status_line_is_chained_after_ours_and_comes_back() -> None:
    theirs = {"type": "command", "command": "~/bin/my status 'x'", "padding": 2}
    merged = full({"statusLine": theirs})
    words = shlex.split(merged["statusLine"]["command"])
    assert words[-2:] == ["--then", theirs["command"]]
    assert install.STATUSLINE_MARKS[0] in words[3]
    assert merged["statusLine"]["padding"] == 2
    assert unmerge(merged) == {"statusLine": theirs}


def test_reinstall_from_another_interpreter_replaces_the_old_entries() -> None:
    old = {event: f"/old/venv/bin/python -I -S /old/corral/surfaces/claude/hook.py {event}"
           for event in install.EVENTS}  # fmt: skip
    merged = full(merge({}, old, None))
    assert "/old/" not in json.dumps(merged["hooks"])
    assert full(merged) == merged


def test_entries_written_by_earlier_versions_are_recognised_as_ours() -> None:
    """Earlier versions ran hook.py and statusline.py by path (no launcher): a reinstall
    replaces those entries, and an uninstall removes them."""
    old_hooks = {event: f"/v/bin/python -I -S /v/corral/surfaces/claude/hook.py {event}"
                 for event in install.EVENTS}  # fmt: skip
    old_line = "/v/bin/python -I -S /v/corral/surfaces/claude/statusline.py --then 'my status'"
    old = merge({}, old_hooks, lambda theirs: old_line)
    theirs = {"statusLine": {"type": "command", "command": "my status"}}
    assert unmerge(old) == theirs
    assert full(old) == full(theirs)
    assert "/v/" not in json.dumps(full(old))


def test_empty_containers_we_emptied_are_removed() -> None:
    """The one place the round trip is not exact: an empty list or object of hooks means
    nothing to Claude Code, and once we have filled and emptied it, it goes."""
    assert unmerge(full({"hooks": {"PreToolUse": []}})) == {}
    assert unmerge(full({"hooks": {}})) == {}


# -- files, through the real command ---------------------------------------------------------


def run(project: Path, home: Path, *args: str):
    return corral("install", "claude", *args, cwd=project, env=_env(home))


def _env(home: Path) -> dict[str, str]:
    from tests.helpers import private_home

    return private_home(home)


def test_project_install_twice_then_uninstall(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "h"
    settings_file = project / ".claude" / "settings.json"
    settings_file.parent.mkdir(parents=True)
    home.mkdir()
    original = {"model": "opus", "statusLine": {"type": "command", "command": "echo mine"}}
    settings_file.write_text(json.dumps(original))
    first = run(project, home, "--scope", "project")
    assert first.returncode == 0, first.stderr
    after_first = settings_file.read_bytes()
    backup = settings_file.with_name("settings.json.corral-backup")
    assert json.loads(backup.read_text()) == original
    procs = project / ".claude" / "commands" / "procs.md"
    assert install.PROCS_MARK in procs.read_text()
    second = run(project, home, "--scope", "project")
    assert "already installed" in second.stdout
    assert settings_file.read_bytes() == after_first
    assert not (home / ".claude").exists()  # the user scope was left alone
    gone = run(project, home, "--scope", "project", "--uninstall")
    assert gone.returncode == 0, gone.stderr
    assert json.loads(settings_file.read_text()) == original
    assert not procs.exists()


def test_user_install_keeps_their_own_procs_command(tmp_path: Path) -> None:
    home = tmp_path / "h"
    mine = home / ".claude" / "commands" / "procs.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("my own procs\n")
    result = run(tmp_path, home)
    assert result.returncode == 0, result.stderr
    assert mine.read_text() == "my own procs\n"
    assert "kept your own" in result.stdout
    settings_file = home / ".claude" / "settings.json"
    assert install.HOOK_MARKS[0] in settings_file.read_text()
    run(tmp_path, home, "--uninstall")
    assert mine.read_text() == "my own procs\n"
    assert not settings_file.exists()  # it held nothing but corral's


def test_bad_json_is_a_clear_error_and_nothing_is_written(tmp_path: Path) -> None:
    settings_file = tmp_path / ".claude" / "settings.json"
    settings_file.parent.mkdir()
    settings_file.write_text('{"model": "opus",\n  "hooks": }')
    result = run(tmp_path, tmp_path / "h", "--scope", "project")
    assert result.returncode == 1
    assert "not valid JSON (line 2" in result.stderr and "Nothing was written" in result.stderr
    assert settings_file.read_text() == '{"model": "opus",\n  "hooks": }'
    assert sorted(p.name for p in settings_file.parent.iterdir()) == ["settings.json"]


def test_statusline_only_is_for_plugin_users(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert run(tmp_path, home, "--statusline-only").returncode == 0
    data = json.loads((home / ".claude" / "settings.json").read_text())
    assert list(data) == ["statusLine"]
    assert shlex.split(data["statusLine"]["command"])[-2:] == ["--hint", "/corral:procs"]
    assert not (home / ".claude" / "commands").exists()


def test_paths_name_this_interpreter_and_entry_points(tmp_path: Path) -> None:
    import sys

    out = run(tmp_path, tmp_path, "--paths").stdout.splitlines()
    assert out[0] == sys.executable
    assert out[1].endswith("/corral/surfaces/claude/run_hook.py") and Path(out[1]).is_file()
    assert out[2].endswith("/corral/surfaces/claude/run_statusline.py") and Path(out[2]).is_file()


def test_plugin_procs_command_is_the_installed_template() -> None:
    plugin = install.procs_command(
        '"${CLAUDE_PLUGIN_ROOT}/bin/corral-procs"', "${CLAUDE_PLUGIN_ROOT}/bin/corral-procs"
    )
    assert (ROOT / "commands" / "procs.md").read_text() == plugin
