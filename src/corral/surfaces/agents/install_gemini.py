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
from corral.surfaces.agents.install import Report, merge_hooks, remove_hooks

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


def install(scope: str, project: Path, home: Path) -> Report:
    """Merge corral's hooks (BeforeTool and AfterTool on run_shell_command, SessionStart,
    SessionEnd) into Gemini's settings at `scope`; idempotent."""
    path = settings_path(scope, project, home)
    report = merge_hooks(path, [(name, _group(event, m)) for name, event, m in HOOKS])
    if report.changed and scope == "project":
        report.notes.append(
            "Gemini runs a project's hooks once it trusts the folder (it warns the "
            "first time and records them in ~/.gemini/trusted_hooks.json)"
        )
    return report


def uninstall(scope: str, project: Path, home: Path) -> Report:
    """Remove corral's entries from Gemini's settings at `scope`; the rest stays."""
    return remove_hooks(settings_path(scope, project, home))
