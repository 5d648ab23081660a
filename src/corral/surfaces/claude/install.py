"""Installing corral into Claude Code's settings files, and taking it out again.

`merge` and `unmerge` are pure: they take a settings object and return a new one. What is
ours is recognised by the path of our entry points in a command (`…/corral/surfaces/claude/
run_hook.py`, `…/run_statusline.py`, or `hook.py` and `statusline.py` as earlier versions
wrote them), so a reinstall from another interpreter replaces the old
entries, and `unmerge` removes only those, whatever else the user changed meanwhile. The
user's own status line is kept inside ours (`--then`), so it comes back unchanged.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral.errors import CorralError
from corral.surfaces.claude import hook, prefix, statusline

# Our entry points as settings name them: the launchers, then the scripts they load (what
# earlier versions of corral wrote, still recognised so that a reinstall replaces them).
HOOK_MARKS = (
    "corral/surfaces/claude/run_hook.py",
    "corral/surfaces/claude/hook.py",
    "corral-hook pre-tool-use",  # the portable entries of a project install
    "corral-hook post-tool-use",
    "corral-hook session-start",
    "corral-hook session-end",
)
STATUSLINE_MARKS = (
    "corral/surfaces/claude/run_statusline.py",
    "corral/surfaces/claude/statusline.py",
    "corral-hook statusline",
)
# A project's settings file is committed: it names no path of the installing machine. Its
# commands find corral's `corral-hook` (installed beside `corral`) on PATH, and do nothing
# where corral is not installed. What is of this machine (the shell prefix, which must be a
# program that exists: Claude Code runs every Bash command through it) goes to the project's
# settings.local.json, which is not committed.
PORTABLE_HOOK = "corral-hook {event} 2>/dev/null || exit 0"
PORTABLE_PROCS = "corral procs"
# corral's hook event -> (Claude Code's event name, matcher)
EVENTS: dict[str, tuple[str, str | None]] = {
    "pre-tool-use": ("PreToolUse", "Bash"),
    "post-tool-use": ("PostToolUse", "Bash"),
    "session-start": ("SessionStart", None),
    "session-end": ("SessionEnd", None),
}
SETTINGS_HINT = "/procs"
PLUGIN_HINT = "/corral:procs"  # plugin commands are namespaced by the plugin's name
PROCS_MARK = "<!-- corral's /procs: `corral install claude` writes it, `--uninstall` removes it -->"
PROCS_TEMPLATE = """---
description: "corral: this session's dev servers and background jobs with ports; stop-all | stop ID | clean | earlier"
argument-hint: "[stop-all | stop ID | clean | earlier]"
allowed-tools: Bash({pattern}:*)
disable-model-invocation: true
---
{mark}
!`{run} --exit-zero '$ARGUMENTS'`

Above is corral's answer to `/procs $ARGUMENTS`. Show it to the user exactly as printed, in
one code block, without commentary and without running any command.
"""  # noqa: E501 - the description is one line of YAML


class InstallError(CorralError):
    """A settings file corral will not touch; nothing was written."""


Settings = dict[str, Any]


def _names_ours(command: str, marks: tuple[str, ...]) -> bool:
    return any(mark in command for mark in marks)


def _is_ours(entry: Any, marks: tuple[str, ...]) -> bool:
    return isinstance(entry, dict) and _names_ours(str(entry.get("command", "")), marks)


def _check_hooks(settings: Mapping[str, Any]) -> None:
    hooks = settings.get("hooks")
    if hooks is None:
        return
    if not isinstance(hooks, dict):
        raise InstallError("`hooks` is not a JSON object: fix it by hand first")
    for name, groups in hooks.items():
        if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
            raise InstallError(f"`hooks.{name}` is not a list of objects: fix it by hand first")
        for g in groups:
            if "hooks" in g and not isinstance(g["hooks"], list):
                raise InstallError(f"`hooks.{name}[].hooks` is not a list: fix it by hand first")


def _without_ours(groups: list[Any], marks: tuple[str, ...]) -> list[Any]:
    """`groups` minus our entries; a group left empty by that removal goes too."""
    kept = []
    for group in groups:
        inner = group.get("hooks")
        if not isinstance(inner, list) or not any(_is_ours(e, marks) for e in inner):
            kept.append(group)
            continue
        rest = [e for e in inner if not _is_ours(e, marks)]
        if rest:
            kept.append({**group, "hooks": rest})
    return kept


def _our_group(event: str, command: str) -> dict[str, Any]:
    _, matcher = EVENTS[event]
    group: dict[str, Any] = {"matcher": matcher} if matcher else {}
    group["hooks"] = [{"type": "command", "command": command}]
    return group


def _their_statusline(current: Any) -> tuple[dict[str, Any] | None, str | None]:
    """(their status line object, their command) from the current `statusLine` value."""
    if current is None:
        return None, None
    if not isinstance(current, dict) or not isinstance(current.get("command"), str):
        raise InstallError(
            "`statusLine` is not a command status line, so corral cannot put its own before "
            "it: fix it by hand, or install with --no-statusline"
        )
    if not _names_ours(current["command"], STATUSLINE_MARKS):
        return current, current["command"]
    then = chained_command(current["command"])
    return (None, None) if then is None else ({**current, "command": then}, then)


def chained_command(ours: str) -> str | None:
    """The user's status line command kept inside ours (`--then`), if any."""
    try:
        words = shlex.split(ours)
    except ValueError:
        return None
    for at, word in enumerate(words[:-1]):
        if word == "--then":
            return words[at + 1]
    return None


def _env(settings: Settings) -> dict[str, Any]:
    env = settings.get("env", {})
    if not isinstance(env, dict):
        raise InstallError("`env` is not a JSON object: fix it by hand first")
    return env


def _merge_prefix(out: Settings, launcher: str) -> None:
    """Our shell prefix in the settings' `env`; a prefix of the user's own is kept in
    CHAINED, which ours runs after it (Claude Code accepts a single program there)."""
    env = _env(out)
    current = env.get(prefix.PREFIX)
    if isinstance(current, str) and current and not prefix.active({prefix.PREFIX: current}):
        env[prefix.CHAINED] = current
    env[prefix.PREFIX] = launcher
    out["env"] = env


def _unmerge_prefix(out: Settings) -> None:
    env = out.get("env")
    if not isinstance(env, dict):
        return
    current = env.get(prefix.PREFIX)
    if not isinstance(current, str) or not prefix.active({prefix.PREFIX: current}):
        return
    theirs = env.pop(prefix.CHAINED, None)
    if isinstance(theirs, str) and theirs:
        env[prefix.PREFIX] = theirs
    else:
        del env[prefix.PREFIX]
    if env:
        out["env"] = env
    else:
        out.pop("env", None)


def merge(
    settings: Mapping[str, Any],
    hook_commands: Mapping[str, str] | None,
    statusline_command: Callable[[str | None], str] | None,
    shell_prefix: str | None = None,
) -> Settings:
    """`settings` with our hooks (`hook_commands`: event -> command; None: leave hooks), our
    status line (`statusline_command(theirs)` gives ours, chaining theirs; None: leave it) and
    our shell prefix (the program's path; None: leave `env`)."""
    out: Settings = copy.deepcopy(dict(settings))
    if shell_prefix is not None:
        _merge_prefix(out, shell_prefix)
    if hook_commands is not None:
        _check_hooks(out)
        hooks = out.setdefault("hooks", {})
        for event, command in hook_commands.items():
            name, _ = EVENTS[event]
            groups = hooks.get(name, [])
            wanted = _our_group(event, command)
            ours = [e for g in groups for e in g.get("hooks", []) if _is_ours(e, HOOK_MARKS)]
            if wanted in groups and len(ours) == 1:
                continue  # already there, exactly: leave it where it is
            hooks[name] = [*_without_ours(groups, HOOK_MARKS), wanted]
    if statusline_command is not None:
        theirs, their_command = _their_statusline(out.get("statusLine"))
        line = dict(theirs) if theirs else {"type": "command"}
        line["type"] = "command"
        line["command"] = statusline_command(their_command)
        out["statusLine"] = line
    return out


def unmerge(settings: Mapping[str, Any]) -> Settings:
    """`settings` without anything of ours; their status line and shell prefix come back."""
    out: Settings = copy.deepcopy(dict(settings))
    if "env" in out:
        _unmerge_prefix(out)
    hooks = out.get("hooks")
    if isinstance(hooks, dict):
        _check_hooks(out)
        for name in list(hooks):
            groups = hooks[name]
            kept = _without_ours(groups, HOOK_MARKS)
            if kept != groups:
                if kept:
                    hooks[name] = kept
                else:
                    del hooks[name]  # emptied by us
        if not hooks and settings.get("hooks"):
            del out["hooks"]
    current = out.get("statusLine")
    if isinstance(current, dict) and _names_ours(str(current.get("command", "")), STATUSLINE_MARKS):
        theirs, _ = _their_statusline(current)
        if theirs is None:
            del out["statusLine"]
        else:
            out["statusLine"] = theirs
    return out


# -- files --------------------------------------------------------------------------------


def claude_dir(home: Path) -> Path:
    """Claude Code's user folder: `CLAUDE_CONFIG_DIR` when set, else ~/.claude."""
    config = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(config) if config else home / ".claude"


def settings_path(scope: str, project: Path, home: Path) -> Path:
    if scope == "user":
        return claude_dir(home) / "settings.json"
    if scope == "local":
        return project / ".claude" / "settings.local.json"
    return project / ".claude" / "settings.json"


def commands_dir(scope: str, project: Path, home: Path) -> Path:
    return (claude_dir(home) if scope == "user" else project / ".claude") / "commands"


def plugin_enabled(project: Path, home: Path) -> tuple[Path, str] | None:
    """Where corral's plugin is enabled for this project (`enabledPlugins` in the user's,
    the project's or the local settings), and under which id; None when it is not."""
    for scope in ("local", "project", "user"):
        path = settings_path(scope, project, home)
        try:
            enabled = read_settings(path).get("enabledPlugins")
        except InstallError:
            continue
        if not isinstance(enabled, dict):
            continue
        for key, on in enabled.items():
            if isinstance(key, str) and key.partition("@")[0] == "corral" and on is True:
                return path, key
    return None


def read_settings(path: Path) -> Settings:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InstallError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "fix it or move it away, then run this again. Nothing was written."
        ) from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object; nothing was written")
    return data


def write_settings(path: Path, data: Mapping[str, Any], keep_backup: bool = True) -> Path | None:
    """Write `data` atomically; the previous file is kept as `<name>.corral-backup` (unless
    not `keep_backup`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    mode = 0o644
    if path.exists():
        mode = path.stat().st_mode & 0o777
        if keep_backup:
            backup = path.with_name(path.name + ".corral-backup")
            backup.write_bytes(path.read_bytes())
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.chmod(temp, mode)
    os.replace(temp, path)
    return backup


def procs_command(run: str, pattern: str | None = None) -> str:
    """The `/procs` markdown command that runs `run` (a shell command prefix)."""
    return PROCS_TEMPLATE.format(pattern=pattern or run, run=run, mark=PROCS_MARK)


def installed_procs_command() -> str:
    """`/procs` for a settings install: this interpreter's corral, by absolute path (-P: not
    from the project's folder; user site-packages stay, for `pip install --user`)."""
    return procs_command(shlex.join([sys.executable, "-P", "-m", "corral", "procs"]))


def hook_commands(portable: bool = False) -> dict[str, str]:
    """Our hook command per event: this interpreter's hook by absolute path, or (`portable`)
    the `corral-hook` found on PATH, silent where corral is not installed."""
    if portable:
        return {event: PORTABLE_HOOK.format(event=event) for event in EVENTS}
    return {event: shlex.join(hook.command(event)) for event in EVENTS}


def statusline_for(hint: str, portable: bool = False) -> Callable[[str | None], str]:
    if portable:
        return lambda theirs: shlex.join(
            ["corral-hook", "statusline", *statusline.command(hint, theirs)[4:]]
        )
    return lambda theirs: shlex.join(statusline.command(hint, theirs))


@dataclass
class Report:
    settings: Path
    changed: bool
    backup: Path | None = None
    notes: list[str] = field(default_factory=list)


def _launcher() -> str:
    """Write the shell prefix's program for this corral; its path."""
    from corral.lowlevel import locations

    launcher = prefix.launcher_path(locations.home_dir())
    prefix.write_launcher(launcher)
    return launcher


def install(
    scope: str,
    project: Path,
    home: Path,
    *,
    statusline_only: bool = False,
    with_statusline: bool = True,
    with_prefix: bool = True,
    prefix_only: bool = False,
) -> Report:
    """Merge our hooks (unless `statusline_only` or `prefix_only`), status line and shell
    prefix (writing its program) into the scope's settings and write `/procs` beside them.
    Running it again changes nothing.

    Where corral's plugin is enabled, it brings the hooks and `/corral:procs`: only what a
    plugin cannot set (the status line and the shell prefix) is installed, and the report says
    so. A project install writes portable commands (`corral-hook` on PATH) and puts the shell
    prefix, a path of this machine, in the project's settings.local.json."""
    notes: list[str] = []
    plugin = None if statusline_only or prefix_only else plugin_enabled(project, home)
    if plugin is not None:
        where, key = plugin
        notes.append(
            f"corral's plugin is enabled ({key} in {where}): it runs corral's hooks and "
            "/corral:procs, so only the status line and the shell prefix were installed "
            "(plugins cannot set those); a second copy of the hooks would only run twice"
        )
        statusline_only = True
    portable = scope == "project"
    path = settings_path(scope, project, home)
    current = read_settings(path)
    hint = PLUGIN_HINT if statusline_only else SETTINGS_HINT
    wants_prefix = (with_prefix and (plugin is not None or not statusline_only)) or prefix_only
    hooks = None if statusline_only or prefix_only else hook_commands(portable)
    line = None
    if (with_statusline or statusline_only) and not prefix_only:
        line = statusline_for(hint, portable)
    if plugin is not None and not with_statusline:
        line = None
    local_path = settings_path("local", project, home)
    local = read_settings(local_path) if wants_prefix and portable else None  # checked first
    launcher = _launcher() if wants_prefix else None
    new = merge(current, hooks, line, None if portable else launcher)
    report = Report(path, new != current, notes=notes)
    if report.changed:
        report.backup = write_settings(path, new)
    if local is not None:
        # A prefix of the user's own in the project's file is what the local one overrides:
        # ours runs it after itself, as it would one found in the same file.
        theirs = _their_prefix(new)
        seeded = local
        if theirs and prefix.PREFIX not in _env(local):
            seeded = {**local, "env": {**_env(local), prefix.PREFIX: theirs}}
        new_local = merge(seeded, None, None, launcher)
        if new_local != local:
            write_settings(local_path, new_local)
            report.changed = True
        report.notes.append(
            f"the shell prefix names this machine's corral, so it went to {local_path} "
            f"(not committed); {path} names no path of this machine"
        )
    if new.get("disableAllHooks") is True:
        report.notes.append(
            f"{path} sets disableAllHooks: Claude Code runs no hook and no status line"
        )
    if not statusline_only and not prefix_only:
        target = commands_dir(scope, project, home) / "procs.md"
        text = procs_command(PORTABLE_PROCS) if portable else installed_procs_command()
        if target.exists() and PROCS_MARK not in target.read_text(encoding="utf-8"):
            report.notes.append(f"kept your own {target}; corral's list is `corral procs`")
        elif not target.exists() or target.read_text(encoding="utf-8") != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            report.changed = True
    return report


def _their_prefix(settings: Settings) -> str | None:
    """The shell prefix `settings` set that is not corral's, if any."""
    value = (
        settings.get("env", {}).get(prefix.PREFIX)
        if isinstance(settings.get("env"), dict)
        else None
    )
    if isinstance(value, str) and value and not prefix.active({prefix.PREFIX: value}):
        return value
    return None


def _remove_ours(path: Path, also_in: Settings | None = None) -> tuple[bool, list[Path]]:
    """Take our entries out of `path`. A file left with no settings, that held none before
    corral's install, is removed, and so is the backup corral's install made of it: nothing
    of corral's stays behind. Returns (changed, files removed)."""
    current = read_settings(path)
    new = unmerge(current)
    if new == current:
        return False, []
    if also_in is not None and _their_prefix(new) == _their_prefix(also_in) is not None:
        # the user's prefix came back from the chain, but it lives in `also_in`: not here
        _env(new).pop(prefix.PREFIX, None)
        if not new["env"]:
            del new["env"]
    backup = path.with_name(path.name + ".corral-backup")
    removed = []
    before: Settings | None = None
    if backup.exists():
        try:
            before = read_settings(backup)
        except InstallError:
            before = None
    if not new and (not backup.exists() or before == {}):
        path.unlink()
        removed.append(path)
    else:
        write_settings(path, new, keep_backup=False)
    if backup.exists():
        backup.unlink()
        removed.append(backup)
    return True, removed


def _rmdir_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()  # only when nothing else is in it
    except OSError:
        pass


def uninstall(scope: str, project: Path, home: Path) -> Report:
    """Remove what `install` added, keeping everything else as it is now; no empty file and
    no backup of corral's is left."""
    path = settings_path(scope, project, home)
    changed, _ = _remove_ours(path)
    report = Report(path, changed)
    if scope == "project":  # the shell prefix of a project install lives in the local file
        kept = read_settings(path) if path.exists() else {}
        local_changed, _ = _remove_ours(settings_path("local", project, home), also_in=kept)
        report.changed = report.changed or local_changed
    target = commands_dir(scope, project, home) / "procs.md"
    if target.exists() and PROCS_MARK in target.read_text(encoding="utf-8"):
        target.unlink()
        report.changed = True
        _rmdir_if_empty(target.parent)
    if scope != "user":
        _rmdir_if_empty(path.parent)
    return report
