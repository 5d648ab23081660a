"""The `corral` command: one module per subcommand, imported only when it runs."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from corral.errors import EXIT_FAILURE, EXIT_INTERRUPT, EXIT_USAGE, CorralError
from corral.lowlevel.locations import UnsafeFolder

# name -> (module, one-line help). Each module has configure(parser) and main(args) -> int.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("corral.cli.run", "run a command under corral's supervisor"),
    "ls": ("corral.cli.ls", "list jobs with ports, age, processes, CPU, memory"),
    "logs": ("corral.cli.logs", "a job's output; -f follows it until the job ends"),
    "restart": ("corral.cli.restart", "stop a job (verified) and start the same line again"),
    "mcp": ("corral.cli.mcp", "serve corral's tools to an agent over MCP (stdio)"),
    "stop": ("corral.cli.stop", "stop jobs, checking every process's identity first"),
    "clean": ("corral.cli.clean", "forget finished jobs and records of dead supervisors"),
    "attach": ("corral.cli.attach", "open a tmux job's window (tmux backend)"),
    "session": ("corral.cli.session", "end an agent session, keeping or stopping its processes"),
    "audit": ("corral.cli.audit", "list the audit log of stops"),
    "daemon": ("corral.cli.daemon", "serve the HTTP API on a Unix socket (optional)"),
    "explain": ("corral.cli.explain", "show why a shell line would or would not be supervised"),
    "procs": ("corral.cli.procs", "what Claude Code's /procs shows: a session's jobs; stop them"),
    "statusline": ("corral.cli.statusline", "the Claude Code status line band for a folder"),
    "install": ("corral.cli.install", "install corral into Claude Code's settings (or remove it)"),
    "doctor": ("corral.cli.doctor", "check corral's state and installs; --fix repairs them"),
    "tui": ("corral.cli.tui", "the control room: jobs, ports, logs; stop and restart them"),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"corral: {message}\n")
        sys.exit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="corral",
        description="Give every dev server, watcher and background job an owner, "
        "its ports and a stop button.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (_, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, description=help_text)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list and sys.stdin.isatty() and sys.stdout.isatty():
        args_list = ["tui"]  # a person at a terminal: the control room
    parser = build_parser()
    name = args_list[0] if args_list else None
    if name not in COMMANDS:
        parser.parse_args(args_list)  # prints help or the usage error and exits
        return EXIT_USAGE
    module = importlib.import_module(COMMANDS[name][0])
    sub = _Parser(prog=f"corral {name}", description=COMMANDS[name][1])
    module.configure(sub)
    args = sub.parse_args(args_list[1:])
    try:
        result: int = module.main(args)
    except CorralError as exc:
        from corral.core.text import printable

        sys.stderr.write(f"corral {name}: {printable(str(exc))}\n")
        return exc.exit_code
    except UnsafeFolder as exc:  # one clear line: which folder, why, what to do
        sys.stderr.write(f"corral {name}: {exc.filename}: {exc.strerror}\n")
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return EXIT_INTERRUPT
    except BrokenPipeError:  # `corral ls | head`: the reader left; say nothing more
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILURE
    return result


def entry() -> None:
    status = main()
    if sys.argv[1:2] in (["run"], ["restart"]):
        # `run -d` is waited on by an agent: once the job is ready and said so, nothing is
        # left to clean up, and the interpreter's teardown costs milliseconds of its wait.
        import os

        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BrokenPipeError:
            status = status or EXIT_FAILURE
        os._exit(status)
    sys.exit(status)
