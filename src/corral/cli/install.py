"""corral install claude: put corral's hooks, status line and /procs into Claude Code's
settings (user or project), or take them out again with --uninstall."""

from __future__ import annotations

import argparse
from pathlib import Path

from corral.errors import UsageError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.usage = (
        "corral install claude [--scope user|project|local] [--uninstall] "
        "[--statusline-only | --prefix-only | --no-statusline] [--no-shell-prefix] | "
        "corral install claude --paths"
    )
    parser.add_argument("agent", choices=["claude"], help="the agent to install into")
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
    print(f"{done} {report.settings}")
    if report.backup:
        print(f"previous settings kept in {report.backup}")
    for note in report.notes:
        print(f"note: {note}")
    if report.changed and not args.uninstall:
        print("restart Claude Code (or run /hooks) for the change to take effect")
    return 0
