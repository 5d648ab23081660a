"""Waiting for a file to change: the one chokepoint for inotify (Linux, through ctypes).

Elsewhere (macOS) `FileWatch.fileno()` is None and callers wait in short steps instead.
"""

from __future__ import annotations

import os
import sys

_LINUX = sys.platform.startswith("linux")
IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_CLOSE_WRITE = 0x008
IN_CREATE = 0x100
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
CHANGED = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF
FALLBACK_STEP = 0.05  # seconds between looks where the OS gives no file events


class FileWatch:
    """Events on one file (writes, truncation, removal). A pollable fd on Linux."""

    def __init__(self, path: str, mask: int = CHANGED) -> None:
        self._fd: int | None = None
        if not _LINUX:
            return
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fd = int(libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC))
        if fd < 0:
            return  # out of inotify instances: the caller falls back to short waits
        if int(libc.inotify_add_watch(fd, os.fsencode(path), mask)) < 0:
            os.close(fd)
            return
        self._fd = fd

    def fileno(self) -> int | None:
        return self._fd

    def drain(self) -> None:
        """Forget the events read so far (the caller re-reads the file itself)."""
        if self._fd is None:
            return
        try:
            while os.read(self._fd, 65536):
                pass
        except BlockingIOError:
            pass

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> FileWatch:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
