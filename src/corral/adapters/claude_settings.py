"""The Bash permission rules of Claude Code's settings files, for the permission-parity check.

Read as Claude Code 2.1.332 reads them (checked against the real CLI and its bundle):

- managed: `managed-settings.json` and `managed-settings.d/*.json` (sorted, dot files skipped)
  in `/etc/claude-code` (Linux) or `/Library/Application Support/ClaudeCode` (macOS);
- user: `$CLAUDE_CONFIG_DIR/settings.json`, by default `~/.claude/settings.json`;
- project: `<project>/.claude/settings.json`, whose *allow* rules count only once the folder
  is trusted (`projects[<folder>].hasTrustDialogAccepted` in `~/.claude.json`); its deny and
  ask rules always count;
- local: `<project>/.claude/settings.local.json`.

Rules of every file add up. With `allowManagedPermissionRulesOnly` in managed settings only
managed allow rules count (deny and ask rules of every file are kept: stricter is safe).
A missing file is fine; a file that cannot be read or parsed makes the rules unsure.
"""

from __future__ import annotations

import json
import os
import sys

from corral.core.claude.permissions import Rules, parse_rules

_MANAGED_DIRS = {"darwin": "/Library/Application Support/ClaudeCode"}
MANAGED_DIR = _MANAGED_DIRS.get(sys.platform, "/etc/claude-code")
_KINDS = ("allow", "ask", "deny")


class _Unsure(Exception):
    """A settings file exists but corral cannot read it with certainty."""


class _Collected:
    """The rules of every settings file read so far."""

    def __init__(self) -> None:
        self.allow: list[str] = []
        self.ask: list[str] = []
        self.deny: list[str] = []

    def add(self, lists: dict[str, list[str]], *, with_allow: bool = True) -> None:
        self.ask += lists["ask"]
        self.deny += lists["deny"]
        if with_allow:
            self.allow += lists["allow"]


def load_rules(
    project_dir: str,
    home: str,
    *,
    config_dir: str | None = None,
    managed_dir: str = MANAGED_DIR,
) -> Rules:
    """The Bash rules that apply to a session in `project_dir` (`config_dir`: the
    session's `CLAUDE_CONFIG_DIR`, when set). Never raises: unreadable means unsure."""
    try:
        return _load(project_dir, home, config_dir or None, managed_dir)
    except _Unsure as why:
        return Rules(unsure=str(why))


def _load(project_dir: str, home: str, config_dir: str | None, managed_dir: str) -> Rules:
    found = _Collected()
    managed_only = False
    for path in _managed_files(managed_dir):
        settings = _read(path)
        found.add(_permissions(settings, path))
        managed_only = managed_only or settings.get("allowManagedPermissionRulesOnly") is True
    user_dir = config_dir or os.path.join(home, ".claude")
    user = os.path.join(user_dir, "settings.json")
    found.add(_permissions(_read(user), user), with_allow=not managed_only)
    project = os.path.join(project_dir, ".claude", "settings.json")
    lists = _permissions(_read(project), project)
    trusted = bool(lists["allow"]) and _trusted(project_dir, config_dir or home)
    found.add(lists, with_allow=trusted and not managed_only)
    local = os.path.join(project_dir, ".claude", "settings.local.json")
    found.add(_permissions(_read(local), local), with_allow=not managed_only)
    return parse_rules(found.allow, found.ask, found.deny)


def _managed_files(managed_dir: str) -> list[str]:
    files = [os.path.join(managed_dir, "managed-settings.json")]
    drop_ins = os.path.join(managed_dir, "managed-settings.d")
    try:
        names = sorted(os.listdir(drop_ins))
    except (FileNotFoundError, NotADirectoryError):
        return files
    except OSError as exc:
        raise _Unsure(f"cannot list {drop_ins}: {exc.strerror}") from exc
    for name in names:
        path = os.path.join(drop_ins, name)
        if name.endswith(".json") and not name.startswith(".") and os.path.isfile(path):
            files.append(path)
    return files


def _read(path: str) -> dict[str, object]:
    """A settings file's object; {} when the file does not exist."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except OSError as exc:
        raise _Unsure(f"cannot read {path}: {exc.strerror}") from exc
    try:
        parsed = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _Unsure(f"cannot parse {path}: {exc}") from exc
    if not isinstance(parsed, dict):
        raise _Unsure(f"{path} does not hold a JSON object")
    return parsed


def _permissions(settings: dict[str, object], path: str) -> dict[str, list[str]]:
    permissions = settings.get("permissions", {})
    if not isinstance(permissions, dict):
        raise _Unsure(f"`permissions` in {path} is not an object")
    lists: dict[str, list[str]] = {}
    for kind in _KINDS:
        entries = permissions.get(kind, [])
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            raise _Unsure(f"`permissions.{kind}` in {path} is not a list of strings")
        lists[kind] = entries
    return lists


def _trusted(project_dir: str, config_home: str) -> bool:
    """Whether Claude Code trusts the folder; unreadable means no (its allow rules are then
    left out, which is stricter than Claude Code at worst)."""
    try:
        settings = _read(os.path.join(config_home, ".claude.json"))
    except _Unsure:
        return False
    projects = settings.get("projects")
    if not isinstance(projects, dict):
        return False
    for key in {project_dir, os.path.realpath(project_dir)}:
        entry = projects.get(key)
        if isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is True:
            return True
    return False


# Flags of the `claude` command line that may carry deny or ask rules the settings files do
# not show; a rewrite could slip past them, so their presence makes the verdict unsure.
# (`--allowedTools` only allows: a rewrite it no longer matches asks, which is safe.)
RULE_FLAGS = ("--disallowedTools", "--disallowed-tools", "--settings", "--setting-sources")


def command_line_rules(pid: int, levels: int = 6) -> str | None:
    """Why the rules may come from the running Claude's command line: the first rule flag
    found on `pid` or one of its ancestors (the hook's parents lead to Claude), else None."""
    from corral.adapters.identity import cmdline, parent_pid

    for _ in range(levels):
        if pid <= 1:
            return None
        argv = cmdline(pid) or []
        for arg in argv[1:]:
            flag = arg.split("=", 1)[0]
            if flag in RULE_FLAGS:
                return f"permission rules given on Claude's command line ({flag})"
        parent = parent_pid(pid)
        if parent is None:
            return None
        pid = parent
    return None
