"""`corral install opencode`: corral's plugin in opencode's plugin folder.

`$XDG_CONFIG_HOME/opencode/plugins/corral.ts` (user, default `~/.config/opencode`) or
`./.opencode/plugins/corral.ts` (project); opencode loads every file there at start. The
plugin is opencode_plugin.ts with the absolute command of corral's hook program written in.
Running it twice changes nothing; a `corral.ts` that corral did not write is reported and
left alone; `uninstall` removes only corral's file (and the plugin folder, if it is empty).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from corral.surfaces.agents import opencode
from corral.surfaces.claude.install import InstallError, Report

FILE = "corral.ts"


def plugin_path(
    scope: str, project: Path, home: Path, environ: Mapping[str, str] = os.environ
) -> Path:
    if scope == "project":
        return project / ".opencode" / "plugins" / FILE
    config = environ.get("XDG_CONFIG_HOME", "")
    base = Path(config) if os.path.isabs(config) else home / ".config"
    return base / "opencode" / "plugins" / FILE


def _ours(path: Path) -> bool | None:
    """Whether the file at `path` is corral's plugin (None: there is none)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InstallError(f"cannot read {path}: {exc}; nothing was written") from None
    return text.startswith(opencode.PLUGIN_MARK)


def install(scope: str, project: Path, home: Path) -> Report:
    """Write corral's plugin into opencode's plugin folder at `scope`; idempotent."""
    path = plugin_path(scope, project, home)
    text = opencode.plugin_text(opencode.hook_program())
    if _ours(path) is False:
        raise InstallError(
            f"{path} is not corral's plugin: move it away, then run this again. "
            "Nothing was written."
        )
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return Report(path, changed=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)
    return Report(path, changed=True)


def uninstall(scope: str, project: Path, home: Path) -> Report:
    """Remove corral's plugin from opencode's plugin folder at `scope`."""
    path = plugin_path(scope, project, home)
    if not _ours(path):
        return Report(path, changed=False)
    path.unlink()
    try:
        path.parent.rmdir()  # only when nothing else is in it
    except OSError:
        pass
    return Report(path, changed=True)
