"""`corral install qwen`: corral's hooks in Qwen Code's settings.json.

`~/.qwen/settings.json` (user, the default) or `./.qwen/settings.json` (project). Qwen's
hooks have the Claude Code shape (`hooks.<Event>: [{matcher, hooks: [{type, command,
timeout}]}]`, the timeout in seconds), so they are merged as the Claude installer merges its
own: everything else is kept, running it twice changes nothing, `uninstall` removes only
corral's entries, a file that is not valid JSON is reported and left alone.

Qwen Code 0.24 ignores a hook's `updatedInput`: corral cannot rewrite a line there, only deny
it, and a line it would run under its supervisor is denied with the `corral run -d` line to
run instead (qwen.py).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from corral.surfaces.agents import run_hook
from corral.surfaces.claude.install import (
    Report,
    _check_hooks,
    _without_ours,
    read_settings,
    write_settings,
)

MARKS = ("corral/surfaces/agents/run_hook.py",)
# (Qwen's event, corral's hook event, matcher)
HOOKS: tuple[tuple[str, str, str | None], ...] = (
    ("PreToolUse", "pre-tool-use", "^run_shell_command$"),
    ("SessionStart", "session-start", None),
    ("SessionEnd", "session-end", None),
)
TIMEOUT_SECONDS = 30


def settings_path(scope: str, project: Path, home: Path) -> Path:
    return (project if scope == "project" else home) / ".qwen" / "settings.json"


def _group(event: str, matcher: str | None) -> dict[str, Any]:
    command = shlex.join(run_hook.command("qwen", event))
    group: dict[str, Any] = {"matcher": matcher} if matcher else {}
    group["hooks"] = [{"type": "command", "command": command, "timeout": TIMEOUT_SECONDS}]
    return group


def _ours(groups: list[Any]) -> list[Any]:
    return [
        e
        for g in groups
        for e in g.get("hooks", [])
        if isinstance(e, dict) and any(m in str(e.get("command", "")) for m in MARKS)
    ]


def install(scope: str, project: Path, home: Path) -> Report:
    """Merge corral's PreToolUse (run_shell_command), SessionStart and SessionEnd hooks into
    Qwen Code's settings at `scope`; idempotent."""
    path = settings_path(scope, project, home)
    settings = read_settings(path)
    _check_hooks(settings)
    hooks = settings.setdefault("hooks", {})
    changed = False
    for name, event, matcher in HOOKS:
        groups = hooks.get(name, [])
        wanted = _group(event, matcher)
        if wanted in groups and len(_ours(groups)) == 1:
            continue  # already there, exactly: leave it where it is
        hooks[name] = [*_without_ours(groups, MARKS), wanted]
        changed = True
    report = Report(path, changed=changed)
    if changed:
        report.backup = write_settings(path, settings)
    if settings.get("disableAllHooks") is True:
        report.notes.append(f"{path} sets disableAllHooks: Qwen Code runs no hook")
    return report


def uninstall(scope: str, project: Path, home: Path) -> Report:
    """Remove corral's entries from Qwen Code's settings at `scope`; the rest stays."""
    path = settings_path(scope, project, home)
    settings = read_settings(path)
    hooks = settings.get("hooks")
    report = Report(path, changed=False)
    if not isinstance(hooks, dict):
        return report
    _check_hooks(settings)
    for name in list(hooks):
        kept = _without_ours(hooks[name], MARKS)
        if kept == hooks[name]:
            continue
        report.changed = True
        if kept:
            hooks[name] = kept
        else:
            del hooks[name]
    if report.changed:
        if not hooks:
            del settings["hooks"]
        report.backup = write_settings(path, settings)
    return report
