"""The front of a job run in place of `CMD &` (the supervisor's --async mode).

A shell's `$!` is the process it started for `CMD &`, and `wait $!` returns when that process
exits: without corral, when CMD exits, whatever CMD left running. The supervisor must outlive
CMD to keep what CMD left owned and stoppable, so in this mode the process the shell started
(the front, `$!`) forks the supervisor proper (the keeper: it records the job, leads it as the
child subreaper, and lives until every process of the job is gone) and only stands for CMD:

- it exits as CMD did (its status, or killed by the same signal) as soon as CMD ends;
- `kill $!` (SIGTERM, SIGINT) asks the keeper to stop the whole job;
- `kill -HUP $!` (SIGUSR1, SIGUSR2, SIGWINCH) reaches CMD itself, as it would have;
- `kill -KILL $!` kills the front, and the keeper kills CMD at once (as the signal would
  have), leaving the rest of the job supervised.

The keeper tells the front, on a pipe: `pid PID TICKS` once CMD runs, then `status
WAITSTATUS` once it has reaped CMD while other processes of the job run on, or `done
WAITSTATUS` once CMD and the whole job have ended and the keeper is exiting (the front waits
for it, so nothing of the job outlives `wait $!` that would not have without corral). If
the pipe closes without a status (the keeper ran the line unsupervised in its own place, or
died), the keeper's own exit status is CMD's.
"""

from __future__ import annotations

import os
import select

from corral.lowlevel.procfs import start_ticks
from corral.supervisor.system import release_stdio

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
else:
    import _signal as signal

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class _Command:
    """CMD as the front knows it: a pidfd (or a pid where there is none) once told."""

    def __init__(self) -> None:
        self.fd: int | None = None
        self.pid = 0

    def learn(self, pid: int, ticks: int) -> None:
        if hasattr(os, "pidfd_open"):
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                return  # already gone
            if start_ticks(pid) != ticks:  # not the process the keeper started
                os.close(fd)
                return
            self.fd = fd
        self.pid = pid

    def signal(self, sig: int) -> bool:
        try:
            if self.fd is not None:
                signal.pidfd_send_signal(self.fd, sig)
            elif self.pid:
                os.kill(self.pid, sig)
            else:
                return False
        except OSError:
            return False
        return True


def run(keeper: int, status_fd: int, handled: tuple[int, ...], forwarded: tuple[int, ...]) -> int:
    """Stand for CMD until it ends; return its wait status. `handled` are the signals we
    catch (blocked by the caller across the fork), `forwarded` those that reach CMD."""
    rfd, wfd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wfd, warn_on_full_buffer=False)
    for sig in (*handled, signal.SIGCHLD):
        signal.signal(sig, lambda *_: None)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [*handled, signal.SIGCHLD])
    release_stdio()
    command = _Command()
    poller = select.poll()
    poller.register(rfd, select.POLLIN)
    poller.register(status_fd, select.POLLIN)
    told = b""
    reading = True  # until the keeper closes the pipe
    early: list[int] = []  # signals for CMD that came before we knew it
    keeper_status: int | None = None
    while True:
        ready = {fd for fd, _ in poller.poll()}
        if status_fd in ready:  # first: a signal that came with CMD's pid goes to CMD
            data = os.read(status_fd, 512)
            if not data:  # no status will come: the keeper's own is CMD's
                poller.unregister(status_fd)
                reading = False
            told += data
            while b"\n" in told:
                message, _, told = told.partition(b"\n")
                word, *numbers = message.split() or [b""]
                if word == b"status" and len(numbers) == 1:
                    return int(numbers[0])
                if word == b"done" and len(numbers) == 1:  # the keeper is ending too:
                    _reap(keeper)  # `wait $!` returns once nothing of the job is left
                    return int(numbers[0])
                if word == b"pid" and len(numbers) == 2:
                    command.learn(int(numbers[0]), int(numbers[1]))
                    for sig in early:
                        command.signal(sig)
                    early.clear()
        if rfd in ready:
            for sig in os.read(rfd, 512):
                if keeper_status is not None:
                    continue
                if sig in forwarded and command.pid:
                    command.signal(sig)
                elif sig in forwarded and reading:
                    early.append(sig)  # CMD is starting: the keeper tells us its pid next
                elif sig in STOP_SIGNALS or sig in forwarded:
                    os.kill(keeper, sig)  # our unreaped child: the pid is still its
        if keeper_status is None:
            try:
                pid, status = os.waitpid(keeper, os.WNOHANG)
            except ChildProcessError:
                pid, status = keeper, 0
            if pid == keeper:
                keeper_status = status
        if keeper_status is not None and not reading:
            return keeper_status


def _reap(keeper: int) -> None:
    try:
        os.waitpid(keeper, 0)
    except ChildProcessError:
        pass
