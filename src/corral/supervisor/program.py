"""corral's job supervisor: runs one shell line as the leader of a new process group.

usage: python3 -I -S launcher.py [--job TOKEN] [--task | --detached] [--async]
           [--session ID] [--grace SECONDS] [--ledger DIR] [--identity DIGEST]
           [--port N] [--ready-fd FD] [--log-cap BYTES] [--meta KEY=VALUE ...]
           [--no-fallback] [--shell-startup] -- LINE

Runs LINE unchanged with the user's shell ($SHELL if bash or zsh, else /bin/sh) in a new
process group that this program leads, records the job in the ledger folder
(<ledger>/<token>.json, written atomically), and stays alive until every process of the
job is gone; then it records how the job ended and exits with the line's exit status.

  --job TOKEN      the job's 128-bit id as 32 hex digits (made up when absent)
  --task           stop the job when the launching shell goes away (default)
  --detached       keep running when the launching shell goes away
  --async          LINE is one command a shell sent to the background mid-line (`CMD &`,
                   rewritten in place): the job stays in the caller's process group and
                   starts with the signal dispositions the shell gives such a command
                   (SIGINT and SIGQUIT ignored by a non-interactive shell, what the shell
                   ignores); a SIGINT or SIGQUIT we were started ignoring stays ignored,
                   SIGHUP, SIGUSR1, SIGUSR2 and SIGWINCH are passed on to the job's first
                   process. The whole job is still stopped (every descendant, one by one).
                   The process started (`$!`) stands for the command: it exits as the
                   command does, while a process it forks supervises the job to its end
                   (front.py)
  --session ID     the agent session that owns the job (default: $CORRAL_SESSION,
                   then the agent's: $CLAUDE_CODE_SESSION_ID, $CODEX_THREAD_ID,
                   $QWEN_CODE_SESSION_ID)
  --grace SECONDS  time between SIGTERM and SIGKILL when stopping (default 3)
  --ledger DIR     the ledger folder (default: $CORRAL_HOME/ledger, else the user's
                   state folder)
  --identity D     the job's identity digest for duplicate checks (from the line reader)
  --port N         the port the line asks for (from the line reader)
  --ready-fd FD    write "ok" to FD once the job is started, then close it
  --log-cap BYTES  when the job's output goes to one of corral's own logs, drop its oldest
                   bytes whenever it passes BYTES (the newest half is kept)
  --meta KEY=VALUE add a text field to the job's record (repeatable; may set `backend`,
                   and `command`: the agent's command when LINE wraps it)
  --no-fallback    if the job cannot be supervised, run nothing: write "fail REASON" to
                   the ready fd and exit 1 (`corral run -d`)
  --shell-startup  LINE is a whole string the caller's shell would have run itself (Claude
                   Code's shell prefix): zsh reads its start-up files as `zsh -c` does
                   (otherwise it runs LINE with -f, as a shell nested in one that did)

Stop it by writing "stop" to <ledger>/<token>.stop, or with SIGTERM or SIGINT: the
whole job is stopped (SIGTERM to the group and every descendant, SIGKILL after the grace
period). SIGHUP is ignored by the supervisor itself. If the group cannot be led or the
ledger cannot be written, LINE runs exactly as written, unsupervised (or, with
--no-fallback, not at all).

Started through launcher.py (from bytecode). It imports only the standard library and
corral's floor (corral.lowlevel: the record format, display redaction, /proc, locations).
"""

from __future__ import annotations

import os
import sys

from corral.lowlevel.locations import supervisor_argv
from corral.lowlevel.record import session_from
from corral.lowlevel.shells import caller_environment, user_shell
from corral.supervisor import front
from corral.supervisor.job import Supervisor
from corral.supervisor.options import Usage, parse
from corral.supervisor.signals import exit_like, to_catch
from corral.supervisor.system import log, release_stdio

# Start-up is this program's budget: typing, json and re cost milliseconds to import, so
# they are imported for type checking only, or only when a line needs them; `signal` is the
# C module underneath, without the enum wrappers (same functions, plain int signals).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from typing import Any
else:
    import _signal as signal  # the C module: the same functions without the enum wrappers


def _run_unsupervised(  # noqa: PLR0917 - one call site (main)
    line: str,
    why: str,
    ledger: str,
    inherited_hup: Any,
    job_signals: dict[int, Any],
    shell: str | None = None,
) -> int:
    log(ledger, f"running unsupervised: {why}")
    signal.set_wakeup_fd(-1)
    for sig, disposition in job_signals.items():
        signal.signal(sig, disposition)
    signal.signal(signal.SIGHUP, inherited_hup)
    shell, _ = user_shell(shell=shell)
    os.execve(shell, [shell, "-c", line], caller_environment())


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        opts = parse(args)
    except Usage as exc:
        sys.stderr.write(f"corral supervisor: {exc}\n{__doc__}")
        return 2
    if opts["job"] is None:
        # Readers verify a supervisor by the token in its command line: put it there.
        token = os.urandom(16).hex()
        argv = supervisor_argv(None, token=token, options=args)
        os.execve(sys.executable, argv, caller_environment())
    if opts["session"] is None:
        opts["session"] = session_from(os.environ)
    inherited_hup = signal.getsignal(signal.SIGHUP)
    sup = Supervisor(opts, inherited_hup)
    ready_fd: int | None = opts["ready_fd"]
    if ready_fd is not None:
        os.set_inheritable(ready_fd, False)  # the job must not hold the caller's wait open
    caught, forwarded = to_catch(sup.in_place, sup.job_signals, inherited_hup)
    blocked = [*caught, *forwarded, signal.SIGHUP]
    if sup.in_place:  # we are `$!`: fork the keeper, stand for CMD (front.py)
        signal.pthread_sigmask(signal.SIG_BLOCK, blocked)  # none lost across the fork
        reader, writer = os.pipe2(os.O_CLOEXEC)
        keeper = os.fork()
        if keeper:
            os.close(writer)
            handled = tuple(sig for sig in caught if sig != signal.SIGCHLD) + forwarded
            status = front.run(keeper, reader, handled, forwarded)
            return exit_like(os.waitstatus_to_exitcode(status))
        os.close(reader)
        sup.front_fd = writer
        sup.pid = os.getpid()
    # Every signal we handle lands in the wakeup pipe from now on, so none is lost before
    # the event loop starts reading it.
    rfd, wfd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wfd, warn_on_full_buffer=False)
    for sig in caught:
        signal.signal(sig, lambda *_: None)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    for sig in forwarded:  # the front passes these on to CMD; here they change nothing
        if sig != signal.SIGHUP:
            signal.signal(sig, lambda *_: None)
    if sup.in_place:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, blocked)
    try:
        sup.lead_group()
        fifo = sup.open_ledger()
        sup.start_record()
    except OSError as exc:
        sup.undo_group()
        try:  # the stop channel of a job that has no record is litter
            os.unlink(sup.fifo_path)
        except OSError:
            pass
        if not opts["fallback"]:
            log(sup.ledger, f"not started: cannot supervise: {exc}")
            if ready_fd is not None:
                os.write(ready_fd, f"fail {exc}\n".encode("utf-8", "replace"))
                os.close(ready_fd)
            return 1
        if ready_fd is not None:
            os.close(ready_fd)
        return _run_unsupervised(
            opts["line"], str(exc), sup.ledger, inherited_hup, sup.job_signals, opts["shell"]
        )
    sup.become_subreaper()
    watched = opts["mode"] == "task" or sup.front_fd is not None
    parent_fd = sup.watch_parent() if watched else None
    sup.spawn()
    if sup.parent_gone_early:
        if sup.front_fd is not None:
            sup.command_lost_its_front()
        else:
            sup.request_stop(signal.SIGTERM)
    if ready_fd is not None:
        try:
            os.write(ready_fd, f"ok {sup.token}\n".encode())
        finally:
            os.close(ready_fd)
    sup.watch_log()  # after the start: the job and its caller do not wait for it
    release_stdio()
    sup.give_back_memory()
    sup.loop(rfd, fifo, parent_fd)
    return exit_like(sup.finish())


def run_as_program() -> None:
    """Run the supervisor with sys.argv and exit with its status (the program's entry)."""
    try:
        status = main()
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - reported as Python would, with its status
        sys.excepthook(*sys.exc_info())
        status = 1
    sys.stderr.flush()
    os._exit(status)  # nothing is left to clean up: skip the interpreter's teardown
