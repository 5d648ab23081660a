"""The shell a job runs in and the environment its caller really gave: shared by the
supervisor and Claude Code's shell prefix (which must run a string exactly as the supervisor
would, or leave it alone). Standard library only."""

from __future__ import annotations

import os


def user_shell(startup: bool = False, shell: str | None = None) -> tuple[str, list[str]]:
    """The shell that runs the line and the options that go before `-c`: `shell` when
    given (the caller knows it: Claude Code's shell prefix), else $SHELL when it is bash or
    zsh, else /bin/sh.

    A line usually comes from inside another shell that already read its start-up files,
    so zsh runs it with `-f` (no .zshenv again). `startup`: the line is a whole string the
    caller's shell would have run itself (Claude Code's shell prefix), so zsh reads its
    start-up files as `zsh -c` does."""
    shell = os.environ.get("SHELL", "") if shell is None else shell
    name = os.path.basename(shell)
    if os.path.isabs(shell) and os.access(shell, os.X_OK):
        if name == "bash":
            return shell, ["+m"]
        if name == "zsh":
            return shell, ["+m"] if startup else ["-f", "+m"]
    return "/bin/sh", ["+m"]


def caller_environment() -> dict[bytes, bytes]:
    """The environment this program was really given.

    os.environ is not it: Python's PEP 538 locale coercion adds LC_CTYPE=C.UTF-8 to it when
    the caller's locale is C or unset, even in isolated mode, and the line must not see a
    variable its caller never set. Linux keeps the original in /proc/self/environ; elsewhere
    os.environ is the best there is."""
    try:
        with open("/proc/self/environ", "rb") as f:
            entries = f.read().split(b"\0")
    except OSError:
        return dict(os.environb)
    env: dict[bytes, bytes] = {}
    for entry in entries:
        key, sep, value = entry.partition(b"=")
        if sep and key and key not in env:  # the first one wins, as in os.environ
            env[key] = value
    return env
