"""Runs one of corral's agent hooks (codex.py, gemini.py, …: their docstrings are the usage)
from bytecode, as surfaces/claude/run_hook.py does for Claude Code's.

    python3 -I -S run_hook.py AGENT EVENT

A script run by path is compiled from source on every start; a module is imported from its
cached bytecode. Agents' configuration files run this launcher.
"""

import sys

AGENTS = ("codex", "gemini", "qwen", "opencode")


def command(agent: str, event: str) -> "list[str]":
    """The absolute, isolated command line an agent's configuration runs for `event`."""
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r}; expected one of {', '.join(AGENTS)}")
    import os

    return [sys.executable, "-I", "-S", os.path.abspath(__file__), agent, event]


if __name__ == "__main__":
    # The folder that holds the corral package: run_hook.py, agents/, surfaces/, corral/.
    root = __file__
    for _ in range(4):
        root = root.rpartition("/")[0]
    sys.path.insert(0, root or "/")
    if len(sys.argv) < 2 or sys.argv[1] not in AGENTS:
        sys.stderr.write(f"usage: run_hook.py {' | '.join(AGENTS)} EVENT\n")
        sys.exit(2)
    module = __import__(f"corral.surfaces.agents.{sys.argv[1]}", fromlist=["main"])
    from corral.surfaces.claude import exit_now

    exit_now(module.main(sys.argv[2:]))
