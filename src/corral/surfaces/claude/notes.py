"""What the PreToolUse hook and corral's shell prefix tell each other: whether the prefix is
installed, which Bash calls run as background tasks (the hook sees `run_in_background`,
the prefix does not), and which lines the hook's line reader already found nothing to
supervise in (the prefix then runs them without reading them again). A note never changes a
permission decision."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

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


UNTOUCHED_SECONDS = 60.0  # the reader's verdict on a line, kept for the call that runs it


def _untouched_path(home: str, session: str, cwd: str, command: str) -> str:
    from corral.lowlevel.redact import command_digest

    key = command_digest(f"{session}\0{os.path.realpath(cwd)}\0{command}")[:32]
    # not among the background notes: any note there sends every Bash call to python
    return os.path.join(home, "prefix-read", key)


def note_untouched(home: str, session: str, cwd: str, command: str) -> None:
    """Tell the prefix that the line reader found nothing to supervise in `command` run in
    `cwd` (a verdict on the line alone: no job it starts, none it sends to the background)."""
    from corral.lowlevel.locations import ensure_private

    path = _untouched_path(home, session, cwd, command)
    folder = os.path.dirname(path)
    ensure_private(folder)
    now = time.time()
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{now}\n")
    with os.scandir(folder) as entries:  # notes of calls that never ran (denied, say)
        for entry in entries:
            try:
                if now - entry.stat().st_mtime > UNTOUCHED_SECONDS:
                    os.unlink(entry.path)
            except OSError:
                continue


def take_untouched(home: str, session: str, cwd: str, command: str) -> bool:
    """True (once, within UNTOUCHED_SECONDS) when the hook noted `command` in `cwd` as a
    line with nothing to supervise."""
    path = _untouched_path(home, session, cwd, command)
    try:
        with open(path, encoding="utf-8") as f:
            fresh = 0 <= time.time() - float(f.read().strip() or 0) < UNTOUCHED_SECONDS
        os.unlink(path)
    except (OSError, ValueError):
        return False
    return fresh
