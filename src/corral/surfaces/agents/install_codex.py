"""`corral install codex`: corral's hooks in Codex's config.toml, trusted.

Codex runs a configured hook only once it is trusted: `[hooks.state."<file>:<event>:<group>:
<handler>"] trusted_hash = "sha256:…"` in the user's config.toml, the hash being the sha256 of
the hook group as compact, key-sorted JSON (the value `codex app-server` reports). corral
writes that entry for its own hooks, and says so.

The file is TOML that people edit by hand and Codex edits too, so corral never re-serialises
it: it appends one block between marker comments (`uninstall` removes exactly that block),
checks with tomllib that the result parses and holds what it should, and refuses a file it
cannot parse. `--scope project` puts the hooks in `./.codex/config.toml` and their trust
entries in the user's file; Codex loads a project's configuration only in a trusted project.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import tomllib
from pathlib import Path
from typing import Any

from corral.surfaces.agents import run_hook
from corral.surfaces.agents.install import InstallError, Report, read_text, write_text

BEGIN = "# >>> corral: hooks added by `corral install codex` (`--uninstall` removes this block)"
END = "# <<< corral"
# (Codex's event, its snake_case name in trust keys, corral's hook event, matcher, timeout s)
HOOKS: tuple[tuple[str, str, str, str | None, int], ...] = (
    ("PreToolUse", "pre_tool_use", "pre-tool-use", "^Bash$", 30),
    ("PostToolUse", "post_tool_use", "post-tool-use", "^Bash$", 30),
    ("SessionStart", "session_start", "session-start", None, 30),
    ("SessionEnd", "session_end", "session-end", None, 3),  # Codex clamps it to 3 s
)


def codex_home(home: Path) -> Path:
    value = os.environ.get("CODEX_HOME", "")
    return Path(value) if value.strip() else home / ".codex"


def config_path(scope: str, project: Path, home: Path) -> Path:
    if scope == "project":
        return project / ".codex" / "config.toml"
    return codex_home(home) / "config.toml"


def trusted_hash(event: str, command: str, matcher: str | None, timeout: int) -> str:
    """The hash Codex trusts a one-handler hook group by (event: snake_case)."""
    group: dict[str, Any] = {
        "event_name": event,
        "hooks": [{"async": False, "command": command, "timeout": timeout, "type": "command"}],
    }
    if matcher is not None:
        group["matcher"] = matcher
    text = json.dumps(group, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a TOML basic string is JSON's


def _parse(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InstallError(
            f"{path} is not valid TOML ({exc}); fix it or move it away, then run this "
            "again. Nothing was written."
        ) from None


def trust_begin(config: Path) -> str:
    """The first line of the block of trust entries for a project's hooks (user's file)."""
    return (
        f"# >>> corral: trust for the hooks in {config} (`--scope project --uninstall` removes it)"
    )


def without_block(text: str, begin: str = BEGIN) -> str:
    """`text` without corral's block that starts with the line `begin` (and the blank lines
    before it)."""
    lines = text.splitlines(keepends=True)
    if begin not in (line.rstrip("\n") for line in lines):
        return text
    out: list[str] = []
    inside = False
    for line in lines:
        if not inside and line.rstrip("\n") == begin:
            inside = True
            while out and not out[-1].strip():
                out.pop()
            continue
        if inside:
            inside = line.rstrip("\n") != END
            continue
        out.append(line)
    rest = "".join(out)
    return rest + "\n" if rest and not rest.endswith("\n") else rest


def _groups(data: dict[str, Any], event: str) -> int:
    hooks = data.get("hooks")
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    return len(groups) if isinstance(groups, list) else 0


def _trusted(data: dict[str, Any]) -> dict[str, Any]:
    hooks = data.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    return state if isinstance(state, dict) else {}


def _append(text: str, block: str) -> str:
    if not text.strip():
        return block
    return text.rstrip("\n") + "\n\n" + block


def _hook_block(indices: dict[str, int], config: Path) -> tuple[str, list[tuple[str, str]]]:
    """corral's hook groups as TOML, and the trust entries (key, hash) they need."""
    lines = [BEGIN]
    trust: list[tuple[str, str]] = []
    for event, snake, ours, matcher, timeout in HOOKS:
        command = shlex.join(run_hook.command("codex", ours))
        lines.append(f"[[hooks.{event}]]")
        if matcher is not None:
            lines.append(f"matcher = {_toml_string(matcher)}")
        lines += [
            f"[[hooks.{event}.hooks]]",
            'type = "command"',
            f"command = {_toml_string(command)}",
            f"timeout = {timeout}",
        ]
        key = f"{config}:{snake}:{indices[event]}:0"
        trust.append((key, trusted_hash(snake, command, matcher, timeout)))
    return "\n".join(lines) + "\n", trust


def _trust_lines(trust: list[tuple[str, str]], present: dict[str, Any]) -> tuple[str, list[str]]:
    """The TOML tables for the trust entries not yet present, and notes on conflicting ones."""
    lines: list[str] = []
    notes: list[str] = []
    for key, digest in trust:
        entry = present.get(key)
        if isinstance(entry, dict):
            if entry.get("trusted_hash") != digest:
                notes.append(
                    f"Codex already has a trust entry for {key} (not corral's): approve "
                    "corral's hooks in Codex's /hooks"
                )
            continue
        lines += [f"[hooks.state.{_toml_string(key)}]", f"trusted_hash = {_toml_string(digest)}"]
    return "".join(f"{line}\n" for line in lines), notes


def install(scope: str, project: Path, home: Path) -> Report:
    """Append corral's hooks (PreToolUse and PostToolUse for Bash, SessionStart, SessionEnd)
    to Codex's config.toml at `scope`, with the trust entries that let Codex run them;
    idempotent."""
    path = config_path(scope, project, home).absolute()
    user = config_path("user", project, home).absolute()
    text = read_text(path)
    _parse(path, text)
    base = without_block(text)
    data = _parse(path, base)
    indices = {event: _groups(data, event) for event, *_ in HOOKS}
    hooks, trust = _hook_block(indices, path)
    changes: dict[Path, str] = {}
    if path == user:
        entries, notes = _trust_lines(trust, _trusted(data))
        changes[path] = _append(base, hooks + entries + END + "\n")
    else:
        changes[path] = _append(base, hooks + END + "\n")
        user_text = read_text(user)
        _parse(user, user_text)
        user_base = without_block(user_text, trust_begin(path))
        entries, notes = _trust_lines(trust, _trusted(_parse(user, user_base)))
        block = f"{trust_begin(path)}\n{entries}{END}\n"
        changes[user] = _append(user_base, block) if entries else user_base
    report = Report(path, changed=False, notes=notes)
    for target, new in changes.items():  # what corral writes must read back
        try:
            parsed = tomllib.loads(new)
        except tomllib.TOMLDecodeError as exc:
            parsed, why = {}, f" ({exc})"
        else:
            why = ""
        if target == path and any(_groups(parsed, e) != indices[e] + 1 for e, *_ in HOOKS):
            raise InstallError(
                f"corral's hooks cannot be appended to {target}{why}: its `hooks` are written "
                "inline there; write them as [[hooks.EVENT]] tables, or add corral's by hand. "
                "Nothing was written."
            )
        if not parsed:
            raise InstallError(f"{target}: corral's block would not read back{why}; not written")
    for target, new in changes.items():
        if new != read_text(target):
            backup = write_text(target, new)
            report.changed = True
            report.backup = report.backup or backup
    if report.changed:
        report.notes.append(
            f"corral trusted its own hooks in {user} (Codex runs a hook only once trusted)"
        )
        if scope == "project":
            report.notes.append(f"Codex reads {path} only in a project you trusted in Codex")
    return report


def uninstall(scope: str, project: Path, home: Path) -> Report:
    """Remove corral's block from Codex's config.toml at `scope` (for a project, and its
    trust entries from the user's file); everything else stays as it is."""
    path = config_path(scope, project, home).absolute()
    targets = [(path, BEGIN)]
    if scope == "project":
        targets.append((config_path("user", project, home).absolute(), trust_begin(path)))
    report = Report(path, changed=False)
    for target, begin in targets:
        text = read_text(target)
        new = without_block(text, begin)
        if new == text:
            continue
        _parse(target, new)
        backup = write_text(target, new)
        report.changed = True
        report.backup = report.backup or backup
    return report
