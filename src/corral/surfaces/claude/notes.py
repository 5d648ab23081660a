"""What the PreToolUse hook and corral's shell prefix tell each other: whether the prefix is
installed, which Bash calls run as background tasks (the hook sees `run_in_background`,
the prefix does not), and what the hook's line reader found in a line (nothing to
supervise, or the jobs it starts and how): the prefix then checks that against the live
jobs without reading the line again. A note never changes a permission decision, and any
doubt about one (`take_reading`, `reading_of`) means the prefix reads the line itself."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Mapping, Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from corral.core.shell.decision import InPlace, Reading

NAME = "corral-claude-prefix"
PREFIX = "CLAUDE_CODE_SHELL_PREFIX"
CHAINED = "CORRAL_CHAINED_SHELL_PREFIX"  # the user's own prefix, run after ours
NOTE_SECONDS = 600.0  # a note older than this is stale (the call never ran)


def active(environ: Mapping[str, str]) -> bool:
    """Claude Code runs its commands through corral's prefix (hooks see the variable)."""
    return environ.get(PREFIX, "").rpartition("/")[2] == NAME


def notes_dir(home: str) -> str:
    return os.path.join(home, "prefix-notes")


def _note_path(home: str, session: str, command: str) -> str:
    from corral.lowlevel.redact import command_digest

    return os.path.join(notes_dir(home), command_digest(f"{session}\0{command}")[:32])


def note_background(home: str, session: str, command: str) -> None:
    """Tell the prefix that this session's next `command` runs as a background task (the
    PreToolUse hook sees `run_in_background`; the prefix does not)."""
    path = _note_path(home, session, command)
    from corral.lowlevel.locations import ensure_private

    ensure_private(os.path.dirname(path))  # and the home, 0700 (makedirs: the umask's mode)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{time.time()}\n")


def take_note(home: str, session: str, command: str) -> bool:
    """True (once) when the hook noted `command` as a background task of `session`."""
    path = _note_path(home, session, command)
    found = False
    try:
        names = os.listdir(notes_dir(home))
    except OSError:
        return False
    for name in names:  # this note, and any left by calls that never ran
        note = os.path.join(notes_dir(home), name)
        try:
            with open(note, encoding="utf-8") as f:
                fresh = time.time() - float(f.read().strip() or 0) < NOTE_SECONDS
            if note == path or not fresh:
                os.unlink(note)
                found = found or (note == path and fresh)
        except (OSError, ValueError):
            continue
    return found


READ_SECONDS = 60.0  # the reader's verdict on a line, kept for the call that runs it
READ_VERSION = 1
READ_LIMIT = 1 << 20  # a note is the line and its rewrite: a longer file is not one of ours


def _read_path(home: str, session: str, real_cwd: str, command: str) -> str:
    from corral.lowlevel.redact import command_digest

    key = command_digest(f"{session}\0{real_cwd}\0{command}")[:32]
    # not among the background notes: any note there sends every Bash call to python
    return os.path.join(home, "prefix-read", key)


def note_reading(
    home: str,
    session: str,
    cwd: str,
    command: str,
    *,
    background: bool,
    wrapper: Sequence[str],
    reading: Reading,
) -> None:
    """Leave the prefix what the line reader found in `command`, run in `cwd` by `session`
    (as a background task or not, to be started by `wrapper`): a line with nothing to
    supervise, or the jobs it starts and how (`Reading`). The prefix then checks it against
    the live jobs without reading the line again. Written whole (a rename), mode 0600, in
    corral's private home; notes of calls that never ran are swept."""
    import json

    from corral.lowlevel.locations import ensure_private
    from corral.lowlevel.redact import command_digest

    decision = reading.decision
    real_cwd = os.path.realpath(cwd)
    body = {
        "v": READ_VERSION,
        "at": time.time(),
        "session": session,
        "cwd": real_cwd,
        "command": command,
        "background": background,
        "wrapper": list(wrapper),
        "action": str(decision.action),
        "mode": None if decision.mode is None else str(decision.mode),
        "rewritten": decision.rewritten,
        "token": decision.job_token,
        "jobs": [
            [*job, runner] for job, runner in zip(decision.jobs, reading.runners, strict=True)
        ],
        "in_place": [w._asdict() for w in decision.in_place],
    }
    text = json.dumps(body, separators=(",", ":"))
    path = _read_path(home, session, real_cwd, command)
    folder = ensure_private(os.path.dirname(path))
    temp = f"{path}.{os.getpid()}-{os.urandom(4).hex()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    fd = os.open(temp, flags, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(f"{text}\n{command_digest(text)}\n")
        os.replace(temp, path)
    except OSError:
        _unlink(temp)
        raise
    now = time.time()
    with os.scandir(folder) as entries:  # notes of calls that never ran (denied, say)
        for entry in entries:
            try:
                if now - entry.stat().st_mtime > READ_SECONDS:
                    os.unlink(entry.path)
            except OSError:
                continue


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def take_reading(
    home: str, session: str, cwd: str, command: str, *, background: bool
) -> dict[str, Any] | None:
    """The note the hook left on `command` in `cwd` for `session` (once: it is removed), or
    None when there is none to trust: missing, not a private regular file of this user,
    damaged (its digest), of another format, another session, folder, command or kind of
    call, or older than READ_SECONDS. What it says of the jobs is checked by `reading_of`."""
    real_cwd = os.path.realpath(cwd)
    path = _read_path(home, session, real_cwd, command)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError:  # a symlink, say: not a note of ours, and not left for the next call
        _unlink(path)
        return None
    try:
        _unlink(path)  # used once, whatever it holds
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return None
        raw = os.read(fd, READ_LIMIT + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(raw) > READ_LIMIT:
        return None
    from corral.lowlevel.redact import command_digest
    from corral.surfaces.claude import parse

    try:
        text, digest, end = raw.decode("utf-8").split("\n")
        if end or digest != command_digest(text):
            return None
        body = parse(text)
    except ValueError:  # not UTF-8, not three lines, not JSON
        return None
    if not isinstance(body, dict):
        return None
    at = body.get("at")
    fresh = isinstance(at, float) and 0 <= time.time() - at < READ_SECONDS
    same = (
        body.get("v") == READ_VERSION
        and body.get("session") == session
        and body.get("cwd") == real_cwd
        and body.get("command") == command
        and body.get("background") is background
    )
    return body if fresh and same else None


def nothing_to_supervise(body: dict[str, Any]) -> bool:
    """The note says the reader found nothing in the line: it runs as it came."""
    return body.get("action") == "untouched" and body.get("jobs") == []


def _int(value: object) -> bool:
    return type(value) is int


def _str(value: object) -> bool:
    return isinstance(value, str)


def _no_words_or_words(value: object) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(w, str) for w in value))


# Each field of an in-place rewrite (core.shell.decision.InPlace) and the shape its value has.
_IN_PLACE_FIELDS = {
    "job": _int,
    "token": _str,
    "start": _int,
    "end": _int,
    "text": _str,
    "head": lambda v: v is None or isinstance(v, str),
    "opens": _int,
    "amp": _int,
    "before": _str,
    "after": _str,
    "statement": _str,
    "form": _str,
    "guard": _no_words_or_words,
    "earlier": _int,
    "shim": _str,
    "values": _no_words_or_words,
}


def _in_place_of(value: object, jobs: int) -> InPlace | None:
    """An in-place rewrite as a note holds it (every field of InPlace, named), or None."""
    from corral.core.shell.decision import InPlace
    from corral.lowlevel.record import is_token

    if not isinstance(value, dict) or tuple(_IN_PLACE_FIELDS) != InPlace._fields:
        return None  # (a field corral added since: read the line)
    if set(value) != set(_IN_PLACE_FIELDS):
        return None
    if not all(check(value[name]) for name, check in _IN_PLACE_FIELDS.items()):
        return None
    wrap = InPlace(**value)
    if wrap.guard is not None:  # a JSON list
        wrap = wrap._replace(guard=tuple(wrap.guard))
    if wrap.values is not None:
        wrap = wrap._replace(values=tuple(wrap.values))
    if not (0 <= wrap.job < jobs and is_token(wrap.token) and 0 <= wrap.start <= wrap.end):
        return None
    return wrap


def reading_of(body: dict[str, Any], wrapper: Sequence[str]) -> Reading | None:
    """The `Reading` a note from `take_reading` holds, or None unless every part of it has
    the shape the hook writes and it was made for the same supervisor words (`wrapper`)."""
    if body.get("wrapper") != list(wrapper):
        return None
    from corral.core.shell.decision import Action, Decision, JobSpec, Mode, Reading
    from corral.lowlevel.record import is_token

    action, mode, rewritten, token = (body.get(k) for k in ("action", "mode", "rewritten", "token"))
    jobs, moved = body.get("jobs"), body.get("in_place")
    if not isinstance(jobs, list) or not isinstance(moved, list):
        return None
    specs: list[JobSpec] = []
    runners: list[bool] = []
    for job in jobs:
        if not (isinstance(job, list) and len(job) == 5):
            return None
        display, identity, cwd, port, runner = job
        if not (
            isinstance(display, str)
            and isinstance(identity, str)
            and identity
            and isinstance(cwd, str)
            and cwd.startswith("/")
            and (port is None or (type(port) is int and 0 < port < 65536))
            and isinstance(runner, bool)
        ):
            return None
        specs.append(JobSpec(display, identity, cwd, port))
        runners.append(runner)
    wraps: list[InPlace] = []
    for w in moved:
        wrap = _in_place_of(w, len(specs))
        if wrap is None:
            return None
        wraps.append(wrap)
    if action == Action.UNTOUCHED:
        if mode is not None or rewritten is not None or token is not None or wraps:
            return None
        return Reading(
            Decision(True, None, Action.UNTOUCHED, None, None, None, tuple(specs)),
            tuple(runners),
        )
    if action != Action.WRAP or not specs or not is_token(token) or not isinstance(rewritten, str):
        return None
    if mode not in (Mode.TASK, Mode.DETACHED, Mode.IN_PLACE) or bool(wraps) != (
        mode == Mode.IN_PLACE
    ):
        return None
    decision = Decision(
        True, None, Action.WRAP, Mode(mode), rewritten, None, tuple(specs), token, tuple(wraps)
    )
    return Reading(decision, tuple(runners))
