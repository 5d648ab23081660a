"""corral's Claude Code hook: one entry point for every hook event it answers.

usage: python3 -I -S hook.py pre-tool-use | post-tool-use | session-start | session-end

Reads the hook's JSON on stdin. Fails open: any internal error means exit 0, no output and
one line in corral's log. Started by path in isolated mode, so its start-up is a budget.
"""

from __future__ import annotations

import os
import sys

EVENTS = ("pre-tool-use", "post-tool-use", "session-start", "session-end")


def command(event: str) -> list[str]:
    """The absolute, isolated command line that settings files run for `event`."""
    if event not in EVENTS:
        raise ValueError(f"unknown hook event {event!r}; expected one of {', '.join(EVENTS)}")
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), event]


def main(argv: list[str]) -> int:
    return 0  # filled in by issue 4's hook work


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
