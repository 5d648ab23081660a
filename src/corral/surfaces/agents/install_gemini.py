"""`corral install gemini`: corral's hooks in Gemini CLI's settings.json.

`~/.gemini/settings.json` (user, the default: no project trust prompt) or
`./.gemini/settings.json` (project: Gemini trusts a project's hooks itself, with a warning,
and records them in `~/.gemini/trusted_hooks.json`). The hook groups are merged as the Claude
Code installer merges its own (the same JSON shape): everything else is kept, running it
twice changes nothing, `uninstall` removes only corral's entries, a file that is not valid
JSON is reported and left alone.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from corral.surfaces.agents import run_hook
from corral.surfaces.agents.install import Report
from corral.surfaces.claude.install import (
    _check_hooks,
    _without_ours,
    read_settings,
    write_settings,
)

MARKS = ("corral/surfaces/agents/run_hook.py",)
# (Gemini's event, corral's hook event, matcher): the matcher is an unanchored regex
HOOKS: tuple[tuple[str, str, str | None], ...] = (
    ("BeforeTool", "before-tool", "^run_shell_command$"),
    ("AfterTool", "after-tool", "^run_shell_command$"),
    ("SessionStart", "session-start", None),
    ("SessionEnd", "session-end", None),
)
TIMEOUT_MS = 30_000


def settings_path(scope: str, project: Path, home: Path) -> Path:
    return (project if scope == "project" else home) / ".gemini" / "settings.json"


def _group(event: str, matcher: str | None) -> dict[str, Any]:
    command = shlex.join(run_hook.command("gemini", event))
    group: dict[str, Any] = {"matcher": matcher} if matcher else {}
    group["hooks"] = [{"name": "corral", "type": "command", "command": command,
                       "timeout": TIMEOUT_MS}]  # fmt: skip
    return group


def _ours(groups: list[Any]) -> list[Any]:
    return [
        e
        for g in groups
        for e in g.get("hooks", [])
        if isinstance(e, dict) and any(m in str(e.get("command", "")) for m in MARKS)
    ]


def install(scope: str, project: Path, home: Path) -> Report:
    """Merge corral's hooks (BeforeTool and AfterTool on run_shell_command, SessionStart,
    SessionEnd) into Gemini's settings at `scope`; idempotent."""
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
        if scope == "project":
            report.notes.append(
                "Gemini runs a project's hooks once it trusts the folder (it warns the "
                "first time and records them in ~/.gemini/trusted_hooks.json)"
            )
    return report


def uninstall(scope: str, project: Path, home: Path) -> Report:
    """Remove corral's entries from Gemini's settings at `scope`; the rest stays."""
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
