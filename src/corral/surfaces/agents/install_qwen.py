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
from corral.surfaces.agents.install import Report, merge_hooks, remove_hooks
from corral.surfaces.claude.install import read_settings

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


def install(scope: str, project: Path, home: Path) -> Report:
    """Merge corral's PreToolUse (run_shell_command), SessionStart and SessionEnd hooks into
    Qwen Code's settings at `scope`; idempotent."""
    path = settings_path(scope, project, home)
    report = merge_hooks(path, [(name, _group(event, m)) for name, event, m in HOOKS])
    if read_settings(path).get("disableAllHooks") is True:
        report.notes.append(f"{path} sets disableAllHooks: Qwen Code runs no hook")
    return report


def uninstall(scope: str, project: Path, home: Path) -> Report:
    """Remove corral's entries from Qwen Code's settings at `scope`; the rest stays."""
    return remove_hooks(settings_path(scope, project, home))
