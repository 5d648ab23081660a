"""PostToolUse for a background job corral's hook wrapped: tell the model, once known, the
URL the server serves on, or that it crashed at start and with which last lines.

The hook must not hold the agent while a server starts: it waits SERVER_WAIT at most. A
server with no port open by then is noted as pending (`<home>/hook-pending/<id>`, holding
the session), and the next PostToolUse of that session tells its URL (or its crash) once.
So is a job whose supervisor has not recorded it within RECORD_WAIT (a loaded machine): a
later call of the session tells what became of it once it is recorded; a note still without
a record RECORD_LATE after it was made is dropped, and any note PENDING_FOR after it was made
(whichever session's call finds it)."""

from __future__ import annotations

import time

TYPE_CHECKING = False  # no `typing` nor `json` at import: the hook reads PENDING_FOLDER
if TYPE_CHECKING:
    from typing import Any

SERVER_WAIT = 2.0  # seconds the hook waits for a known server's port before answering
PENDING_FOR = 600.0  # a server still without a port after this long is no longer awaited
RECORD_WAIT = 2.0  # the supervisor records the job within milliseconds of its start
RECORD_LATE = 60.0  # a pending job still without a record after this long is not awaited
_STEP = 0.02


def token_of(command: str) -> str | None:
    words = command.split()
    if "--job" not in words:
        return None
    at = words.index("--job") + 1
    token = words[at] if at < len(words) else ""
    return token if len(token) == 32 and set(token) <= set("0123456789abcdef") else None


def note(command: str, session: str | None = None, wait: float = SERVER_WAIT) -> str | None:
    """The additionalContext for the job `command` (a line the hook rewrote) started (None:
    nothing worth saying)."""
    from corral.service.names import all_records

    token = token_of(command)
    if token is None:
        return None
    deadline = time.monotonic() + RECORD_WAIT
    while (record := next((r for r in all_records() if r.id == token), None)) is None:
        if time.monotonic() > deadline:
            if session is not None:
                _mark_pending(token, session)  # told at a later call, once it is recorded
            return None
        time.sleep(_STEP)
    return _about(record, wait, session)


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
    return _about(max(mine, key=lambda r: r.created_at), wait, session) if mine else None


def _about(record: Any, wait: float, session: str | None, later: bool = False) -> str | None:
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

        if later and not _failed(token):
            return None  # stopped on request (or done well) since: nothing to warn of
        tail = "\n".join(f"  {redact_text(line)}" for line in got.tail) or "  (no output)"
        when = "" if later else " right after it started"
        left = _left_running(token) if _unrecorded(got.reason or "") else None
        if left is not None:  # its supervisor died, not the job: it still runs
            return (
                f"corral: job {short} ({what}) runs unsupervised{when}: {left}. "
                f"The last lines of its output:\n{tail}"
            )
        return (
            f"corral: job {short} ({what}) is NOT running: it {_happened(got.reason or '')}"
            f"{when}. The last lines of its output:\n{tail}"
        )
    if later:
        return None
    if session is None or not _mark_pending(record.id, session):
        return (
            f"corral: job {short} ({what}) is running but opened no port within {wait:g} s; "
            f"`corral logs {short}` shows its output."
        )
    return (
        f"corral: job {short} ({what}) is running and opened no port yet (waited {wait:g} s); "
        f"corral will tell its URL after a later tool call once it opens one; `corral logs "
        f"{short}` shows its output."
    )


def _happened(reason: str) -> str:
    """readiness's reason for a job's end, after "it": `exited with code N`, `was killed by
    signal N`, `ended without its supervisor recording how`."""
    if reason.startswith("killed"):
        return "was " + reason
    if _unrecorded(reason):
        return "ended without its supervisor recording how"
    return reason


def _unrecorded(reason: str) -> bool:
    """Whether readiness saw the supervisor end with no end of the job recorded: the job's
    processes may have outlived it."""
    return reason.startswith("its supervisor ended")


def _left_running(token: str) -> str | None:
    """The listing's note on job `token` when processes of it outlived its supervisor (its
    state is then `unsupervised`: how many remain, how to stop them); else None."""
    from corral.lowlevel.record import UNSUPERVISED
    from corral.service.jobs import list_jobs

    view = next((j for j in list_jobs(measure=False).jobs if j.id == token), None)
    return view.note if view is not None and view.state == UNSUPERVISED else None


def _failed(token: str) -> bool:
    """Whether job `token` ended as a failure (core.outcomes.failed), or with no end recorded;
    not when it was stopped on request or exited with code 0."""
    from corral.core.outcomes import failed
    from corral.service.names import all_records

    record = next((r for r in all_records() if r.id == token), None)
    if record is None or not record.final:
        return True
    return failed(record.state, record.exit_code, record.signal)


def _pending_dir() -> str:
    from corral.lowlevel.locations import home_dir

    return home_dir() + "/" + PENDING_FOLDER


PENDING_FOLDER = "hook-pending"


def _mark_pending(token: str, session: str) -> bool:
    import os

    folder = _pending_dir()
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        with open(f"{folder}/{token}", "w", encoding="utf-8") as f:
            f.write(session)
    except (OSError, ValueError):  # ValueError: a session id UTF-8 cannot write
        return False
    return True


def pending_notes(session: str | None) -> str | None:
    """What became known about this session's pending jobs (each told once); notes of any
    session older than PENDING_FOR are dropped on the way, and so is a note that cannot be
    read or told (one line in corral's log): kept, it would fail every later call."""
    import os

    from corral.lowlevel.locations import ledger_dir
    from corral.lowlevel.record import is_token

    if not session:
        return None
    folder = _pending_dir()
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    records = None
    texts = []
    for token in names:
        path = f"{folder}/{token}"
        try:
            age = time.time() - os.stat(path).st_mtime
            with open(path, "rb") as f:
                mine = f.read() == session.encode("utf-8", "surrogatepass")
            if age > PENDING_FOR or (mine and not is_token(token)):
                os.unlink(path)  # the unlink is the claim: told by one call only
                continue
            if not mine:
                continue
            if not os.path.exists(f"{ledger_dir()}/{token}.json"):  # one stat, no ledger read
                if age > RECORD_LATE:
                    os.unlink(path)
                continue
            if records is None:  # imported and read only for a note of this session's
                from corral.service.names import all_records

                records = {r.id: r for r in all_records()}
            record = records.get(token)
            if record is None:
                continue
            text = _about(record, 0.0, session, later=True)
            # told, or nothing more to tell: no server (running), or it ended since
            if text is not None or record.port is None or record.final:
                os.unlink(path)
        except OSError:
            continue
        except Exception as exc:  # noqa: BLE001 - one bad note must not silence the others
            _drop(path, f"pending note {token}: {type(exc).__name__}: {exc}; dropped")
            continue
        if text is not None:
            texts.append(text)
    return "\n".join(texts) or None


def _drop(path: str, why: str) -> None:
    import os

    from corral.lowlevel import logline

    logline.warn(why)
    try:
        os.unlink(path)
    except OSError:
        pass


def answer(command: str | None, session: str | None = None, rewritten: bool = True) -> str | None:
    """PostToolUse's answer: the note on the job `command` started (None: a call that started
    none), after what became known about the session's pending servers."""
    # a pending note is told once (it is removed as it is told): an error telling the new
    # job must not lose it, nor an error in the pending notes silence the new job
    texts = [_guarded("pending notes", pending_notes, session)]
    if command is not None:
        told = note if rewritten else note_for_line
        texts.append(_guarded("the job's note", told, command, session))
    text = "\n".join(t for t in texts if t)
    if not text:
        return None
    import json

    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": text}}
    )


def _guarded(what: str, tell: Any, *args: Any) -> str | None:
    """`tell(*args)`; None, with one line in corral's log, when it raises."""
    try:
        text: str | None = tell(*args)
    except Exception as exc:  # noqa: BLE001 - PostToolUse tells what it can
        from corral.lowlevel import logline

        logline.warn(f"{what}: {type(exc).__name__}: {exc}")
        return None
    return text
