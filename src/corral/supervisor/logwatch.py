"""The supervisor's watch of its job's log (Linux): the time index and the size cap.

The job's bytes go straight to the file, untouched; the supervisor only learns that the file
grew (inotify IN_MODIFY) and then looks at its size. Idle, it does nothing. Once the log
grows it writes one index entry (joblog.py says what an entry means), stops watching for
a second, and looks again: still growing, it writes an entry and waits another second;
quiet, it writes a last entry and watches again. So a job that writes all the time costs one
wake-up a second. The size cap (`--log-cap`, corral's own logs only) is kept at each look.

Each watch holds one inotify instance for the job's life, and Linux allows a user 128 by
default (fs.inotify.max_user_instances): past that, a job's log is not watched (a line in
corral's log says so), `corral logs --since` has no index for it, and its cap is kept when
corral reads or lists it, as for the tmux backend.
"""

from __future__ import annotations

import os
import time

from corral.lowlevel import joblog, libc

_IN_MODIFY = 0x2
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
GRAIN = 1.0  # seconds between two looks at a growing log


class LogWatch:
    def __init__(self, log: str, times: str, cap: int | None) -> None:
        self.log, self.cap = log, cap
        fd, err = libc.call("inotify_init1", _IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            raise OSError(err, "inotify_init1")
        self.fd = fd
        try:
            watch, err = libc.call("inotify_add_watch", fd, os.fsencode(log), _IN_MODIFY)
            if watch < 0:
                raise OSError(err, "inotify_add_watch")
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
            self.times = os.open(times, flags, 0o600)
        except OSError:
            os.close(fd)
            raise
        self.armed = True  # the fd is polled (False: a look is due at `look_at`)
        self.look_at: float | None = None
        self.size = self._size()
        self._note(self.size)

    def _size(self) -> int:
        try:
            size = os.stat(self.log).st_size
        except OSError:
            size = 0
        return joblog.dropped_bytes(self.log) + size

    def _note(self, offset: int) -> None:
        try:
            os.write(self.times, f"{time.time():.2f} {offset}\n".encode())
        except OSError:
            pass  # a full disk: --since becomes coarser, the job is not disturbed

    def _drain(self) -> None:
        try:
            while os.read(self.fd, 4096):
                pass
        except BlockingIOError:
            pass

    def _keep_cap(self) -> None:
        if self.cap is not None:
            try:
                joblog.trim(self.log, self.cap)
            except OSError:
                pass

    def grew(self) -> None:
        """The fd was readable: the log grew after a quiet spell, just now."""
        self._drain()
        self._note(self.size)  # what it held until now; the rest is this moment's
        self.armed = False
        self.look_at = time.monotonic() + GRAIN
        self._keep_cap()

    def look(self) -> None:
        """A second after the log grew: note where it is, and watch again once quiet."""
        self._keep_cap()
        self._drain()  # the trim's own events too
        size = self._size()
        if size == self.size:  # quiet: the last entry already says where it stands
            self.armed, self.look_at = True, None
            return
        self._note(size)
        self.look_at = time.monotonic() + GRAIN
        self.size = size

    def close(self) -> None:
        for fd in (self.fd, self.times):
            os.close(fd)
