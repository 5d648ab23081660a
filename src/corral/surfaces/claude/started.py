"""PostToolUse for a background job corral's hook wrapped: tell the model, once known, the
URL the server serves on, or that it crashed at start and with which last lines."""

from __future__ import annotations

import json
import time
from typing import Any

SERVER_WAIT = 10.0  # seconds the hook waits for a known server's port before answering
RECORD_WAIT = 2.0  # the supervisor records the job within milliseconds of its start
_STEP = 0.02


def token_of(command: str) -> str | None:
    words = command.split()
    if "--job" not in words:
        return None
    at = words.index("--job") + 1
    token = words[at] if at < len(words) else ""
    return token if len(token) == 32 and set(token) <= set("0123456789abcdef") else None


def note(command: str, wait: float = SERVER_WAIT) -> str | None:
    """The additionalContext for the job `command` (a line the hook rewrote) started (None:
    nothing worth saying)."""
    from corral.service.names import all_records

    token = token_of(command)
    if token is None:
        return None
    deadline = time.monotonic() + RECORD_WAIT
    while (record := next((r for r in all_records() if r.id == token), None)) is None:
        if time.monotonic() > deadline:
            return None
        time.sleep(_STEP)
    return _about(record, wait)


RECENT = 60.0  # a job started this long ago or less can be the one a call just started


def note_for_line(line: str, session: str | None, wait: float = SERVER_WAIT) -> str | None:
    """The same note for a background call corral supervised without rewriting it (the
    shell prefix runs it whole): the newest running job of `session` showing `line`."""
    from corral.lowlevel.redact import display_command
    from corral.service.names import all_records

    if not session:
        return None
    shown = display_command(line)
    now = time.time()
    mine = [
        r
        for r in all_records()
        if r.session == session and r.command == shown and not r.final
        and now - r.created_at <= RECENT
    ]  # fmt: skip
    return _about(max(mine, key=lambda r: r.created_at), wait) if mine else None


def _about(record: Any, wait: float) -> str | None:
    from corral.service.readiness import ReadySpec, wait_ready

    token = record.id
    server = record.port is not None
    spec = ReadySpec("port") if server else ReadySpec("none")
    log = record.extra.get("log")
    got = wait_ready(token, spec, timeout=wait, log=log if isinstance(log, str) else None)
    short, what = token[:8], f"`{record.command}`"
    if got.ready and got.url:
        return (
            f"corral: job {short} ({what}) is ready at {got.url}. Reuse it rather than "
            f"starting another; `corral logs {short}` shows its output."
        )
    if got.ready:
        return None  # not a server, still running (or done with code 0): nothing new
    if got.ended:
        from corral.service.logs import redact_text

        tail = "\n".join(f"  {redact_text(line)}" for line in got.tail) or "  (no output)"
        return (
            f"corral: job {short} ({what}) is NOT running: it {got.reason} right after it "
            f"started. The last lines of its output:\n{tail}"
        )
    return (
        f"corral: job {short} ({what}) is running but opened no port within {wait:g} s; "
        f"`corral logs {short}` shows its output."
    )


def answer(command: str, session: str | None = None, rewritten: bool = True) -> str | None:
    text = note(command) if rewritten else note_for_line(command, session)
    if text is None:
        return None
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": text}}
    )
