"""corral doctor's look at Claude Code: which settings files carry corral's hooks, whether
those hooks still name programs that exist, and whether corral is installed twice (as the
plugin and in a settings file, or in two settings files): then every hook runs twice.

Settings files looked at: the user's (`~/.claude/settings.json`, and
`$CLAUDE_CONFIG_DIR/settings.json` when that is set elsewhere) and the project's
(`.claude/settings.json` and `.claude/settings.local.json` under the folder given). The
plugin counts as installed when Claude Code's `plugins/installed_plugins.json` or a
settings file's `enabledPlugins` names `corral@…`.

`--fix` rewrites only corral's own entries, through `install`: stale hooks are installed
again with this corral's paths; settings hooks beside the plugin are removed (the plugin's
stay, and the settings file keeps corral's status line, which a plugin cannot set)."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from corral.service.doctor import Finding, fine, problem
from corral.surfaces.claude import install

CHECK = "claude code"


@dataclass(frozen=True)
class _Settings:
    path: Path
    scope: str | None  # "user" or "project" when `corral install` manages it, else None
    hooks: list[str]  # corral's hook commands in it
    plugin: bool  # enabledPlugins names corral


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _our_hooks(settings: dict[str, Any]) -> list[str]:
    found = []
    hooks = settings.get("hooks")
    for groups in hooks.values() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            inner = group.get("hooks") if isinstance(group, dict) else None
            for entry in inner if isinstance(inner, list) else ():
                if install._is_ours(entry, install.HOOK_MARKS):
                    found.append(str(entry["command"]))
    return found


def _names_corral_plugin(settings: dict[str, Any]) -> bool:
    enabled = settings.get("enabledPlugins")
    return isinstance(enabled, dict) and any(
        str(name).startswith("corral@") and on is True for name, on in enabled.items()
    )


def _missing_program(command: str) -> str | None:
    """The first program or script of a hook command that does not exist, if any."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    for word in words:
        if word.startswith("/") and not os.path.exists(word):
            return word
    return None


def _candidates(project: Path, home: Path) -> list[tuple[Path, str | None]]:
    """Every settings file Claude Code may read corral's entries from: the user's (which
    follows CLAUDE_CONFIG_DIR), ~/.claude's when that is another folder (where corral
    installed before it followed the variable), the project's and the local one."""
    user = install.settings_path("user", project, home)
    found: list[tuple[Path, str | None]] = [(user, "user")]
    legacy = home / ".claude" / "settings.json"
    if legacy != user:
        found.append((legacy, None))
    found.append((install.settings_path("project", project, home), "project"))
    found.append((install.settings_path("local", project, home), None))
    return found


def _plugin_installed(home: Path) -> Path | None:
    for folder in dict.fromkeys([home / ".claude", install.claude_dir(home)]):
        record = folder / "plugins" / "installed_plugins.json"
        try:
            if '"corral@' in record.read_text(encoding="utf-8"):
                return record
        except OSError:
            continue
    return None


def check(project: Path, home: Path) -> Callable[[bool], list[Finding]]:
    """The Claude Code check for `project` and the user's `home`, as doctor runs checks."""

    def run(apply: bool) -> list[Finding]:
        found: list[Finding] = []
        files = []
        for path, scope in _candidates(project, home):
            if not path.exists():
                continue
            data = _read(path)
            if data is None:
                found.append(Finding(CHECK, f"{path} is not valid JSON: fix it by hand", True))
                continue
            files.append(_Settings(path, scope, _our_hooks(data), _names_corral_plugin(data)))
        plugin = _plugin_installed(home)
        plugin_where = (
            str(plugin) if plugin else next((str(s.path) for s in files if s.plugin), None)
        )
        with_hooks = [s for s in files if s.hooks]
        for s in with_hooks:
            missing = next((m for m in map(_missing_program, s.hooks) if m), None)
            if missing is None:
                continue
            scope = s.scope
            found.append(
                problem(
                    CHECK,
                    f"{s.path}: corral's hooks run {missing}, which does not exist (a moved "
                    "or removed install): Claude Code runs no corral hook",
                    f"install the hooks again with this corral (`corral install claude "
                    f"--scope {scope}`)"
                    if scope
                    else None,
                    partial(_reinstall, scope, project, home) if scope else None,
                    apply,
                )
            )
        if plugin_where and with_hooks:
            for s in with_hooks:
                scope = s.scope
                found.append(
                    problem(
                        CHECK,
                        f"corral is installed twice, as the plugin ({plugin_where}) and in "
                        f"{s.path}: every hook runs twice",
                        f"remove the hooks from {s.path}, keeping its status line "
                        f"(`corral install claude --uninstall --scope {scope}`, then "
                        f"`--statusline-only`)"
                        if scope
                        else None,
                        partial(_keep_plugin, scope, project, home) if scope else None,
                        apply,
                    )
                )
        elif len(with_hooks) > 1:
            where = " and ".join(str(s.path) for s in with_hooks)
            found.append(
                Finding(
                    CHECK,
                    f"corral's hooks are in {where}: every hook runs {len(with_hooks)} times; "
                    "remove one (`corral install claude --uninstall --scope user|project`)",
                    True,
                )
            )
        if not found:
            if with_hooks or plugin_where:
                how = ", ".join(
                    [*(str(s.path) for s in with_hooks), *([plugin_where] if plugin_where else [])]
                )
                found.append(fine(CHECK, f"corral is installed once: {how}"))
            else:
                found.append(fine(CHECK, "corral is not installed into Claude Code here"))
        return found

    return run


def _reinstall(scope: str, project: Path, home: Path) -> None:
    install.install(scope, project, home)


def _keep_plugin(scope: str, project: Path, home: Path) -> None:
    install.uninstall(scope, project, home)
    install.install(scope, project, home, statusline_only=True)
