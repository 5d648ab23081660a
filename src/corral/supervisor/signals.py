"""The job's signal dispositions, and the supervisor's exit status for the job's: what the
caller would have seen without corral."""

from __future__ import annotations

import os

from corral.lowlevel.procfs import ignored_signals

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from typing import Any
else:
    import _signal as signal  # the C module: the same functions without the enum wrappers

# Signals whose default action dumps core: re-raised only once our core limit is 0.
_CORE_SIGNALS = (
    signal.SIGQUIT, signal.SIGILL, signal.SIGTRAP, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE,
    signal.SIGSEGV, signal.SIGSYS, signal.SIGXCPU, signal.SIGXFSZ,
)  # fmt: skip


def _parent_ignores() -> set[int]:
    """The signals our parent (the shell that ran `CMD &`) ignores, from its SigIgn mask;
    empty when it cannot be read (not Linux, parent gone)."""
    return ignored_signals(os.getppid())


def async_dispositions() -> dict[int, Any]:
    """The dispositions a shell gives `CMD &`, for the job run in its place.

    A shell's asynchronous command keeps what the shell ignores and gets SIGINT and SIGQUIT
    ignored when the shell has no job control; everything else is default. We were started
    as that command: SIGINT, SIGQUIT, SIGTERM and SIGCHLD are still as the shell gave them
    (read before we install our handlers); Python's start-up ignored SIGPIPE and SIGXFSZ,
    so for those the shell's own mask speaks."""
    ignored = _parent_ignores()
    found: dict[int, Any] = {}
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGCHLD):
        found[sig] = signal.SIG_IGN if signal.getsignal(sig) == signal.SIG_IGN else signal.SIG_DFL
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        found[sig] = signal.SIG_IGN if sig in ignored else signal.SIG_DFL
    return found


def to_catch(
    in_place: bool, job_signals: dict[int, Any], inherited_hup: Any
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The signals the supervisor catches, and (in place of `CMD &`) those that go on to CMD:
    SIGHUP, SIGUSR1, SIGUSR2 and SIGWINCH, unless we were started ignoring them (nohup)."""
    caught: tuple[int, ...] = ()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD, signal.SIGQUIT):
        kept = in_place and sig in (signal.SIGINT, signal.SIGQUIT)
        if kept and job_signals[sig] == signal.SIG_IGN:
            continue  # in place of `CMD &`: what the shell made CMD ignore, we ignore too
        caught += (sig,)
    forwarded: tuple[int, ...] = ()
    if in_place:
        found = {sig: signal.getsignal(sig) for sig in (signal.SIGUSR1, signal.SIGUSR2)}
        found[signal.SIGWINCH] = signal.getsignal(signal.SIGWINCH)
        found[signal.SIGHUP] = inherited_hup  # under nohup, CMD ignores it as we do
        forwarded = tuple(sig for sig, how in found.items() if how != signal.SIG_IGN)
    return caught, forwarded


def exit_like(code: int) -> int:
    """Our exit status for the job's: a job killed by a signal kills us by the same one,
    so the caller sees what it would have seen without corral (except "core dumped": we
    dump no core of our own, which would only hide the job's)."""
    if code >= 0:
        return code
    sig = -code
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    except (ImportError, OSError, ValueError):
        if sig in _CORE_SIGNALS:
            return 128 + sig  # never dump a core of ours in place of the job's
    if sig != signal.SIGKILL:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
    os.kill(os.getpid(), sig)
    return 128 + sig  # a signal whose default is to do nothing (SIGCHLD, SIGWINCH, ...)
