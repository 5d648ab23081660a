"""What the PreToolUse hook and corral's shell prefix tell each other: whether the prefix is
installed, and which Bash calls run as background tasks (the hook sees `run_in_background`,
the prefix does not). A note never changes a permission decision."""

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
