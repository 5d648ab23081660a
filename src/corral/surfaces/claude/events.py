"""SessionStart, SessionEnd and the PostToolUse notes of corral's Claude Code hook."""

from __future__ import annotations

import json
import os
import shlex
import sys
from typing import Any

from corral import config
from corral.service import claude
from corral.service.hooks import briefing

# Set by corral's mod (the plugin's mod/register.ts) in the environment of everything Claude
# Code runs after the session started: the mod then re-tells the session its jobs after a
# compaction or a /clear and hands the session's end to the daemon, so the hooks do not.
# (At startup and on a resume the SessionStart hook runs before the mod could set it: the
# hooks brief the session then, and the mod does not.)
MOD = "CORRAL_MOD"
MOD_RETELLS = ("compact", "clear")


def answer(event: str, payload: dict[str, Any], home: str) -> str | None:
    session = payload.get("session_id")
    session = session if isinstance(session, str) and session else None
    mod = bool(os.environ.get(MOD))
    if event == "session-start":
        tell = not (mod and payload.get("source") in MOD_RETELLS)
        return session_start(payload, session, tell=tell)
    if event == "session-end":
        if mod:
            return None
        if session is not None and config.session_end() == "terminate":
            stop_in_background(session)
        return None
    if event == "post-tool-use":
        claude.remember_background(session)
        tool_input = payload.get("tool_input")
        command = tool_input.get("command") if isinstance(tool_input, dict) else None
        response = payload.get("tool_response")
        background = isinstance(response, dict) and response.get("backgroundTaskId")
        if isinstance(command, str) and background:  # supervised whole by the shell prefix?
            from corral.surfaces.claude import started

            return started.answer(command, session, rewritten=False)
    return None


def session_start(payload: dict[str, Any], session: str | None, *, tell: bool = True) -> str | None:
    env_file = os.environ.get("CLAUDE_ENV_FILE")
    if env_file and session:
        with open(env_file, "a", encoding="utf-8") as f:
            f.write(f"export CORRAL_SESSION={shlex.quote(session)}\n")
    cwd = payload.get("cwd")
    if not tell:
        return None
    if not isinstance(cwd, str) or not os.path.isdir(cwd):
        return None
    source = payload.get("source")
    text = briefing(cwd, session, source if isinstance(source, str) else None)
    if not text:
        return None
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
    )


def stop_in_background(session: str) -> None:
    """SessionEnd has 1.5 s: start `corral session end S --terminate` in a new session of its
    own and return at once; it stops and audits the session's processes by itself."""
    argv = [sys.executable, "-I", "-m", "corral", "session", "end", session, "--terminate"]
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        os.posix_spawn(
            sys.executable,
            argv,
            dict(os.environ),
            file_actions=[(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)],
            setsid=True,
        )
    finally:
        os.close(devnull)
