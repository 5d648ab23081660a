"""`corral install AGENT` for agents other than Claude Code: one module per agent
(install_codex.py, install_gemini.py, …) with `install(scope, project, home)` and
`uninstall(scope, project, home)`, both returning the Claude installer's Report. This module
holds what they share: the table of installers, and writing a configuration file atomically,
keeping its mode and the previous file as `<name>.corral-backup`."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from corral.surfaces.claude.install import InstallError, Report

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
