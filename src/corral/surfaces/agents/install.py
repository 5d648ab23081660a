"""`corral install AGENT` for agents other than Claude Code: one module per agent
(install_codex.py, install_gemini.py, …) with `install(scope, project, home)` and
`uninstall(scope, project, home)`, both returning the Claude installer's Report. This module
holds what they share: the table of installers, writing a configuration file atomically,
keeping its mode and the previous file as `<name>.corral-backup`, and merging hook groups
into a settings.json of Claude Code's shape (Gemini's, Qwen's)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from corral.surfaces.claude.install import (
    InstallError,
    Report,
    _check_hooks,
    _without_ours,
    read_settings,
    write_settings,
)

__all__ = ["INSTALLERS", "InstallError", "Report", "run", "write_text"]

TITLES = {"codex": "Codex", "gemini": "Gemini CLI", "qwen": "Qwen Code", "opencode": "opencode"}
# agent -> (module under corral.surfaces.agents, its scopes)
INSTALLERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "codex": ("install_codex", ("user", "project")),
    "gemini": ("install_gemini", ("user", "project")),
    "qwen": ("install_qwen", ("user", "project")),
    "opencode": ("install_opencode", ("user", "project")),
}


def run(agent: str, scope: str, project: Path, home: Path, *, uninstall: bool) -> Report:
    """Install corral's hooks into `agent`'s configuration at `scope` (or take them out)."""
    name, scopes = INSTALLERS[agent]
    if scope not in scopes:
        raise InstallError(f"corral install {agent} takes --scope {' or '.join(scopes)}")
    module = importlib.import_module(f"corral.surfaces.agents.{name}")
    action = module.uninstall if uninstall else module.install
    report: Report = action(scope, project, home)
    return report


def write_text(path: Path, text: str) -> Path | None:
    """Write `text` to `path` atomically; the previous file is kept as
    `<name>.corral-backup` (returned), its mode is kept."""
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    mode = 0o644
    if path.exists():
        backup = path.with_name(path.name + ".corral-backup")
        backup.write_bytes(path.read_bytes())
        mode = path.stat().st_mode & 0o777
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(text, encoding="utf-8")
    os.chmod(temp, mode)
    os.replace(temp, path)
    return backup


def read_text(path: Path) -> str:
    """The file's text, "" when it does not exist."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise InstallError(f"cannot read {path}: {exc}; nothing was written") from None


# corral's entries in an agent's hooks, whatever interpreter wrote them: the launcher's path.
HOOK_MARKS = ("corral/surfaces/agents/run_hook.py",)


def _ours(groups: list[Any]) -> list[Any]:
    return [
        e
        for g in groups
        for e in g.get("hooks", [])
        if isinstance(e, dict) and any(m in str(e.get("command", "")) for m in HOOK_MARKS)
    ]


def merge_hooks(path: Path, groups: Sequence[tuple[str, dict[str, Any]]]) -> Report:
    """Put each (event, group) into the `hooks` of the JSON settings file at `path` (Claude
    Code's shape: `hooks.<Event>: [{matcher, hooks: [...]}]`), replacing corral's earlier
    entries and keeping everything else; a group already there exactly is left in place.
    A file that is not a JSON object of that shape is refused and left alone."""

    settings = read_settings(path)
    _check_hooks(settings)
    hooks = settings.setdefault("hooks", {})
    changed = False
    for name, wanted in groups:
        current = hooks.get(name, [])
        if wanted in current and len(_ours(current)) == 1:
            continue  # already there, exactly: leave it where it is
        hooks[name] = [*_without_ours(current, HOOK_MARKS), wanted]
        changed = True
    report = Report(path, changed=changed)
    if changed:
        report.backup = write_settings(path, settings)
    return report


def remove_hooks(path: Path) -> Report:
    """Take corral's entries out of the `hooks` of the JSON settings file at `path`; an event
    left with no group goes, and `hooks` too once empty; everything else stays. As for Claude
    Code's settings, nothing of corral's stays behind: a file left empty that held nothing
    before corral's install is removed, and so is the backup the install made."""

    settings = read_settings(path)
    hooks = settings.get("hooks")
    report = Report(path, changed=False)
    if not isinstance(hooks, dict):
        return report
    _check_hooks(settings)
    for name in list(hooks):
        kept = _without_ours(hooks[name], HOOK_MARKS)
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
        backup = path.with_name(path.name + ".corral-backup")
        try:
            before = read_settings(backup) if backup.exists() else {}
        except InstallError:
            before = None
        if not settings and before == {}:
            path.unlink()
            try:
                path.parent.rmdir()  # only when nothing else is in it
            except OSError:
                pass
        else:
            write_settings(path, settings, keep_backup=False)
        backup.unlink(missing_ok=True)
    return report
