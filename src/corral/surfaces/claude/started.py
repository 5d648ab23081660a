"""PostToolUse for a background job corral's hook wrapped: tell the model, once known, the
URL the server serves on, or that it crashed at start and with which last lines."""

from __future__ import annotations

import json
import time

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
    """The additionalContext for the job `command` started (None: nothing worth saying)."""
    from corral.service.names import all_records
    from corral.service.readiness import ReadySpec, wait_ready

    token = token_of(command)
    if token is None:
        return None
    deadline = time.monotonic() + RECORD_WAIT
    while (record := next((r for r in all_records() if r.id == token), None)) is None:
        if time.monotonic() > deadline:
            return None
        time.sleep(_STEP)
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


def answer(command: str) -> str | None:
    text = note(command)
    if text is None:
        return None
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": text}}
    )
