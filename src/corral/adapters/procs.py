"""Signalling processes we have proven are ours. The one chokepoint for kill/wait.

Every target is a ProcessIdentity. On Linux a pidfd is opened first and the identity is
checked afterwards, so the signal goes to the very process that was checked, never to a
process that took over its pid in between.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass

from corral.adapters.identity import ProcessIdentity, environ_has, is_alive, started_at
from corral.lowlevel.procfs import STATE, read_stat

_LINUX = sys.platform.startswith("linux")


@dataclass
class Handle:
    """A live, verified process we may signal."""

    identity: ProcessIdentity
    fd: int | None  # pidfd on Linux

    def send(self, sig: int) -> bool:
        try:
            if self.fd is not None:
                signal.pidfd_send_signal(self.fd, sig)
            elif is_alive(self.identity):
                os.kill(self.identity.pid, sig)
            else:
                return False
        except ProcessLookupError:
            return False
        return True

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def open_verified(identity: ProcessIdentity) -> Handle | None:
    """A handle on `identity` if that exact process is alive; None if it is gone or replaced."""
    fd = None
    if _LINUX:
        try:
            fd = os.pidfd_open(identity.pid)
        except ProcessLookupError:
            return None
    if started_at(identity.pid) != identity.started_at:
        if fd is not None:
            os.close(fd)
        return None
    return Handle(identity, fd)


def _exited(handle: Handle) -> bool:
    if handle.fd is not None:
        return bool(select.select([handle.fd], [], [], 0)[0])
    return not is_alive(handle.identity)


def wait_gone(handles: Iterable[Handle], timeout: float) -> set[ProcessIdentity]:
    """Wait until every handle's process has exited or `timeout` passes; return the gone."""
    pending = {h.identity: h for h in handles}
    gone: set[ProcessIdentity] = set()
    deadline = time.monotonic() + timeout
    while pending:
        for ident, handle in list(pending.items()):
            if _exited(handle):
                gone.add(ident)
                del pending[ident]
        remaining = deadline - time.monotonic()
        if not pending or remaining <= 0:
            break
        fds = [h.fd for h in pending.values() if h.fd is not None]
        if len(fds) == len(pending):
            select.select(fds, [], [], remaining)  # pidfds: woken by an exit, no polling
        else:
            time.sleep(min(0.05, remaining))  # no pidfd on this platform
    return gone


def marked_processes(name: str, value: str) -> list[ProcessIdentity]:
    """Processes whose initial environment holds NAME=VALUE (e.g. CORRAL_JOB=<token>).

    Listing is lenient: what vanished or denies access is skipped."""
    found: list[ProcessIdentity] = []
    if _LINUX:
        for entry in os.listdir("/proc"):
            if entry.isdigit() and environ_has(int(entry), name, value):
                when = started_at(int(entry))
                if when is not None:
                    found.append(ProcessIdentity(int(entry), when))
        return found
    import psutil

    for proc in psutil.process_iter():
        try:
            if proc.environ().get(name) == value:
                when = started_at(proc.pid)
                if when is not None:
                    found.append(ProcessIdentity(proc.pid, when))
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def is_zombie(pid: int) -> bool:
    if _LINUX:
        fields = read_stat(pid)
        return fields is not None and fields[STATE] == b"Z"
    return False


def verify_marker(identity: ProcessIdentity, name: str, value: str) -> bool | None:
    """True if the exact process still carries NAME=VALUE; None if that cannot be read."""
    has = environ_has(identity.pid, name, value)
    if not is_alive(identity):
        return False
    return has
