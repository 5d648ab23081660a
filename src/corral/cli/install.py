"""corral install claude: put corral's hooks, status line and /procs into Claude Code's
settings (user or project), or take them out again with --uninstall. corral install codex |
gemini | qwen | opencode: corral's hooks (or plugin) in that agent's configuration
(surfaces/agents/install.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from corral.errors import UsageError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.usage = (
        "corral install claude [--scope user|project|local] [--uninstall] "
        "[--statusline-only | --prefix-only | --no-statusline] [--no-shell-prefix] | "
        "corral install claude --paths | "
        "corral install codex|gemini|qwen|opencode [--scope user|project] [--uninstall]"
    )
    from corral.surfaces.agents.install import INSTALLERS

    parser.add_argument("agent", choices=["claude", *INSTALLERS], help="the agent to install into")
    parser.add_argument(
        "--scope",
        choices=["user", "project", "local"],
        default="user",
        help="~/.claude/settings.json (user, default), ./.claude/settings.json (project) or "
        "./.claude/settings.local.json (local)",
    )
    parser.add_argument(
        "--no-shell-prefix",
        action="store_true",
        help="no CLAUDE_CODE_SHELL_PREFIX: the hook rewrites lines instead (it cannot in auto "
        "mode, where Claude Code's classifier decides)",
    )
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--uninstall", action="store_true", help="remove what install added")
    what.add_argument(
        "--statusline-only",
        action="store_true",
        help="only the status line (for plugin users: plugins cannot set one)",
    )
    what.add_argument(
        "--prefix-only",
        action="store_true",
        help="only the shell prefix in the settings' env (for plugin users: plugins cannot "
        "set env)",
    )
    what.add_argument("--no-statusline", action="store_true", help="hooks and /procs only")
    what.add_argument(
        "--paths",
        action="store_true",
        help="print this corral's python, hook and status line paths (the plugin's wrappers "
        "read them)",
    )


def main(args: argparse.Namespace) -> int:
    if args.agent != "claude":
        return _other_agent(args)
    from corral.surfaces.claude import hook, install, statusline

    if args.paths:
        if args.scope != "user":
            raise UsageError("--paths takes no --scope")
        python, _, _, hook_path, _ = hook.command("pre-tool-use")
        print(python)
        print(hook_path)
        print(statusline.command()[3])
        return 0
    project, home = Path.cwd(), Path.home()
    if args.uninstall:
        report = install.uninstall(args.scope, project, home)
        done = "removed corral from" if report.changed else "corral was not in"
    else:
        report = install.install(
            args.scope,
            project,
            home,
            statusline_only=args.statusline_only,
            with_statusline=not args.no_statusline,
            with_prefix=not args.no_shell_prefix,
            prefix_only=args.prefix_only,
        )
        done = "installed corral into" if report.changed else "already installed in"
    return _show(report, done, "previous settings", "Claude Code (or run /hooks)", args.uninstall)


def _show(report: Any, done: str, previous: str, restart: str, uninstall: bool) -> int:
    """An install's report (surfaces.claude.install.Report) as lines for a person."""
    print(f"{done} {report.settings}")
    if report.backup:
        print(f"{previous} kept in {report.backup}")
    for note in report.notes:
        print(f"note: {note}")
    if report.changed and not uninstall:
        print(f"restart {restart} for the change to take effect")
    return 0


CLAUDE_ONLY = ("no_shell_prefix", "statusline_only", "prefix_only", "no_statusline", "paths")


def _other_agent(args: argparse.Namespace) -> int:
    from corral.surfaces.agents import install

    for flag in CLAUDE_ONLY:
        if getattr(args, flag):
            option = "--" + flag.replace("_", "-")
            raise UsageError(f"{option} is for `corral install claude` only")
    report = install.run(args.agent, args.scope, Path.cwd(), Path.home(), uninstall=args.uninstall)
    if args.uninstall:
        done = "removed corral from" if report.changed else "corral was not in"
    else:
        done = "installed corral into" if report.changed else "already installed in"
    return _show(report, done, "previous file", install.TITLES[args.agent], args.uninstall)
