"""corral's job supervisor: runs one shell line as the leader of a new process group.

usage: python3 -I -S launcher.py [--job TOKEN] [--task | --detached] [--async]
           [--session ID] [--grace SECONDS] [--ledger DIR] [--identity DIGEST]
           [--port N] [--ready-fd FD] [--log-cap BYTES] [--meta KEY=VALUE ...]
           [--no-fallback] -- LINE

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
                   then $CLAUDE_CODE_SESSION_ID)
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
import select
import sys
import time

from corral.lowlevel import libc
from corral.lowlevel.joblog import times_file as joblog_times
from corral.lowlevel.locations import absolute, ensure_private, ledger_dir, supervisor_argv
from corral.lowlevel.procfs import (
    _decimal,
    ignored_signals,
    process_table,
    self_identity,
    start_ticks,
)
from corral.lowlevel.record import DEFAULT_GRACE, LEDGER_VERSION, write_record
from corral.lowlevel.redact import command_digest, display_command
from corral.lowlevel.shells import caller_environment, user_shell
from corral.supervisor import front

# Start-up is this program's budget: typing, json and re cost milliseconds to import, so
# they are imported for type checking only, or only when a line needs them; `signal` is the
# C module underneath, without the enum wrappers (same functions, plain int signals).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from typing import Any

    from corral.supervisor.logwatch import LogWatch
else:
    import _signal as signal

_PLATFORM_LINUX = sys.platform.startswith("linux")
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_PDEATHSIG = 1
_CLEARED_ENV = (b"SHELLOPTS", b"BASHOPTS", b"BASH_ENV", b"ENV", b"CORRAL_JOB")
# Signals whose default action dumps core: re-raised only once our core limit is 0.
_CORE_SIGNALS = (
    signal.SIGQUIT, signal.SIGILL, signal.SIGTRAP, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE,
    signal.SIGSEGV, signal.SIGSYS, signal.SIGXCPU, signal.SIGXFSZ,
)  # fmt: skip


def _log(ledger: str, message: str) -> None:
    try:
        with open(os.path.join(os.path.dirname(ledger), "corral.log"), "a") as f:
            f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} supervisor[{os.getpid()}] {message}\n")
    except OSError:
        pass


# -- the supervisor -----------------------------------------------------------------------


class _Usage(Exception):
    pass


def _parse(argv: list[str]) -> dict[str, Any]:
    opts: dict[str, Any] = {
        "job": None,
        "mode": "task",
        "session": None,
        "grace": DEFAULT_GRACE,
        "ledger": None,
        "identity": None,
        "port": None,
        "ready_fd": None,
        "log_cap": None,
        "meta": [],
        "async": False,
        "fallback": True,
    }
    valued = {"--job", "--session", "--grace", "--ledger", "--identity", "--port", "--ready-fd",
              "--log-cap"}  # fmt: skip
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            if len(argv) != i + 2:
                raise _Usage("give the line as exactly one argument after --")
            opts["line"] = argv[i + 1]
            break
        if arg in ("--task", "--detached"):
            opts["mode"] = arg[2:]
        elif arg == "--async":
            opts["async"] = True
        elif arg == "--no-fallback":
            opts["fallback"] = False
        elif arg == "--meta" and i + 1 < len(argv) and "=" in argv[i + 1][1:]:
            key, _, value = argv[i + 1].partition("=")
            if not key.replace("_", "a").isalnum() or not key.isascii():
                raise _Usage(f"--meta takes KEY=VALUE with a plain key, not {key!r}")
            opts["meta"].append((key, value))
            i += 1
        elif arg in valued and i + 1 < len(argv):
            opts[arg[2:].replace("-", "_")] = argv[i + 1]
            i += 1
        else:
            raise _Usage(f"unknown or incomplete option {arg!r}")
        i += 1
    if "line" not in opts:
        raise _Usage("missing -- LINE")
    try:
        opts["grace"] = float(opts["grace"])
        for key in ("port", "ready_fd", "log_cap"):
            text = opts[key]
            if text is not None:
                if not (text.isascii() and text.isdigit()):
                    raise ValueError(f"--{key.replace('_', '-')} takes a number, not {text!r}")
                opts[key] = _decimal(text.encode())
        if opts["port"] is not None and opts["port"] > 65535:  # readers refuse such a record
            raise ValueError(f"--port takes a port number, not {opts['port']}")
    except ValueError as exc:
        raise _Usage(str(exc)) from None
    if not 0 <= opts["grace"] <= 3600:
        raise _Usage("--grace takes seconds from 0 to 3600")
    job = opts["job"]
    if job is not None and (len(job) != 32 or not set(job) <= set("0123456789abcdef")):
        raise _Usage("--job takes 32 lowercase hex digits")
    return opts


def job_environment(token: str, session: str | None) -> dict[bytes, bytes]:
    env = {
        k: v
        for k, v in caller_environment().items()
        if k not in _CLEARED_ENV and not k.startswith(b"BASH_FUNC_")
    }
    env[b"CORRAL_JOB"] = token.encode()
    if session:
        env[b"CORRAL_SESSION"] = os.fsencode(session)
    return env


def stdout_log() -> str | None:
    """Where the job's output goes when that is a regular file (a detached job's log, Claude
    Code's task output file), so readers find it without a copy; None for a pipe or terminal."""
    if not _PLATFORM_LINUX:
        return None
    try:
        if os.fstat(1).st_mode & 0o170000 != 0o100000:  # S_IFREG, without importing stat
            return None
        path = os.readlink("/proc/self/fd/1")
    except OSError:
        return None
    return path if path.startswith("/") and not path.endswith(" (deleted)") else None


class Supervisor:
    def __init__(self, opts: dict[str, Any], inherited_hup: Any) -> None:
        self.opts = opts
        self.inherited_hup = inherited_hup
        self.in_place: bool = opts["async"]
        self.leads_group = False
        # What the job starts with: default dispositions (issue 2: even for SIGINT and
        # SIGQUIT when we started ignoring them), or, in place of `CMD &`, what the shell
        # gives an asynchronous command (see async_dispositions).
        self.job_signals: dict[int, Any] = (
            async_dispositions()
            if self.in_place
            else dict.fromkeys(
                (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE,
                 signal.SIGXFSZ),
                signal.SIG_DFL,
            )
        )  # fmt: skip
        self.token: str = opts["job"]
        self.ledger: str = absolute(opts["ledger"]) if opts["ledger"] else ledger_dir()
        self.grace: float = opts["grace"]
        self.pid = os.getpid()
        self.child = 0
        self.child_status: int | None = None
        self.stop_signal: int | None = None
        self.kill_at: float | None = None
        self.killed = False
        self.tty_fd: int | None = None
        self.tty_restore_pgrp: int | None = None
        self.original_pgrp = os.getpgrp()
        self.parent_gone_early = False
        # In place of `CMD &`: the shell that ran it, and the pipe to the front (`$!`, our
        # parent, see front.py) that exits as CMD does.
        self.caller_pid = os.getppid()
        self.front_fd: int | None = None
        self.log_watch: LogWatch | None = None
        self.record: dict[str, Any] = {}
        self.fifo_path = os.path.join(self.ledger, self.token + ".stop")

    # set-up ------------------------------------------------------------------------------
    def lead_group(self) -> None:
        original = self.original_pgrp
        if self.in_place:  # `CMD &` of a shell without job control: the shell's own group
            return
        if original != self.pid:
            os.setpgid(0, 0)
        self.leads_group = True
        try:
            if os.isatty(0) and os.tcgetpgrp(0) == original and original != self.pid:
                # We were the terminal's foreground job: our new group takes that place, so
                # Ctrl-C and reads from the terminal reach the job as they would have.
                self.tty_fd = os.dup(0)
                self._set_foreground(self.pid)
                self.tty_restore_pgrp = original
        except OSError:
            self.tty_fd = None

    def _set_foreground(self, pgrp: int) -> None:
        if self.tty_fd is None:
            return
        old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        try:
            os.tcsetpgrp(self.tty_fd, pgrp)
        except OSError:
            pass
        finally:
            signal.signal(signal.SIGTTOU, old)

    def become_subreaper(self) -> None:
        if not _PLATFORM_LINUX:
            return
        try:
            result, err = libc.call("prctl", _PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (ImportError, OSError, AttributeError) as exc:
            _log(self.ledger, f"prctl(PR_SET_CHILD_SUBREAPER) unavailable: {exc}")
            return
        if result != 0:
            _log(self.ledger, f"prctl(PR_SET_CHILD_SUBREAPER) failed: errno {err}")

    def give_back_memory(self) -> None:
        """Return the freed start-up memory (the script's syntax tree) to the system."""
        if _PLATFORM_LINUX:
            try:
                libc.call("malloc_trim", 0)
            except (ImportError, OSError, AttributeError):
                pass  # not glibc: the memory stays ours, nothing else changes

    def open_ledger(self) -> int:
        ensure_private(self.ledger)
        os.mkfifo(self.fifo_path, 0o600)
        # O_RDWR: we hold a writer ourselves, so the FIFO never reports hang-up between stops.
        return os.open(self.fifo_path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)

    def watch_parent(self) -> int | None:
        parent = os.getppid()
        if parent <= 1:
            return None
        fd: int | None = None
        if hasattr(os, "pidfd_open"):
            fd = os.pidfd_open(parent)
        elif hasattr(select, "kqueue"):  # macOS: a kqueue fd is pollable
            sel: Any = select
            kq = sel.kqueue()
            kq.control([sel.kevent(parent, sel.KQ_FILTER_PROC, sel.KQ_EV_ADD, sel.KQ_NOTE_EXIT)], 0)
            self._kq = kq  # keep it open
            fd = kq.fileno()
        self.parent_gone_early = os.getppid() != parent  # it went away before we watched it
        return fd

    def start_record(self) -> None:
        line: str = self.opts["line"]
        shell, _ = user_shell()
        self.record = {
            "version": LEDGER_VERSION,
            "id": self.token,
            "pid": self.pid,
            "started_at": self_identity(),
            "pgid": os.getpgrp(),
            "mode": self.opts["mode"],
            "backend": "group",
            "session": self.opts["session"],
            "cwd": os.getcwd(),
            "command": display_command(line),
            "digest": command_digest(line),
            "identity": self.opts["identity"],
            "port": self.opts["port"],
            "shell": shell,
            "log": stdout_log(),
            "parent_pid": self.caller_pid,
            "grace": self.grace,
            "created_at": time.time(),
            "state": "running",
            "exit_code": None,
            "signal": None,
            "stop_requested_at": None,
            "ended_at": None,
        }
        for key, value in self.opts["meta"]:  # extra fields; of the known ones, only backend
            if key == "command":  # LINE wraps the agent's command (a shell prefix's string)
                self.record["command"] = display_command(value)
                self.record["digest"] = command_digest(value)
            elif key == "backend" or key not in self.record:
                self.record[key] = value
        if self.front_fd is not None:
            self.record["front_pid"] = os.getppid()
        write_record(self.ledger, self.record)

    def spawn(self) -> None:
        shell, shell_opts = user_shell()
        env = job_environment(self.token, self.opts["session"])
        argv = [shell, *shell_opts, "-c", self.opts["line"]]
        # The job gets self.job_signals, SIGHUP as we were given it, and every signal
        # unblocked. Not posix_spawn: glibc's leaves its two internal signals ignored in the
        # job.
        job_signals = self.job_signals
        inherited_hup = self.inherited_hup
        # In place of `CMD &`, CMD dies with us (`kill -KILL $!` kills the front, and we
        # kill CMD then; this covers our own death): what that signal would have done.
        dies_with_us = self.in_place and _PLATFORM_LINUX
        pid = os.fork()
        if pid == 0:  # the job
            try:
                if dies_with_us:
                    libc.call("prctl", _PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
                    if os.getppid() != self.pid:  # we died before it was set
                        os._exit(128 + signal.SIGKILL)
                for sig, disposition in job_signals.items():
                    signal.signal(sig, disposition)
                signal.signal(signal.SIGHUP, inherited_hup)
                signal.set_wakeup_fd(-1)
                signal.pthread_sigmask(signal.SIG_SETMASK, [])
                os.execve(shell, argv, env)
            except BaseException as exc:  # noqa: BLE001 - the child must never return into our code
                os.write(2, f"corral: cannot run {shell}: {exc}\n".encode())
            finally:
                os._exit(127)
        self.child = pid
        self._tell_front(f"pid {pid} {start_ticks(pid) or 0}\n")

    def _tell_front(self, message: str, last: bool = False) -> None:
        if self.front_fd is None:
            return
        try:
            os.write(self.front_fd, message.encode())
        except OSError:
            pass  # the front is gone (`kill -KILL $!`): nobody waits for CMD there
        if last:
            os.close(self.front_fd)
            self.front_fd = None

    def command_lost_its_front(self) -> None:
        """In place of `CMD &`, the front (`$!`) died before CMD ended: only a signal that
        cannot be caught does that, and without corral it would have killed CMD."""
        if self.child_status is None:
            os.kill(self.child, signal.SIGKILL)  # unreaped: the pid is still CMD's

    def watch_log(self) -> None:
        """Keep the job's log's time index, and its size cap when the log is corral's own
        (logwatch.py); a log that cannot be watched is left as it is."""
        log = self.record.get("log")
        if not (_PLATFORM_LINUX and log):
            return
        logs = os.path.join(os.path.dirname(self.ledger), "logs")
        own = os.path.dirname(log) == logs
        try:
            from corral.supervisor.logwatch import LogWatch

            ensure_private(logs)
            times = joblog_times(logs, self.token)
            self.log_watch = LogWatch(log, times, self.opts["log_cap"] if own else None)
        except (ImportError, AttributeError, OSError) as exc:
            _log(self.ledger, f"cannot watch the job's log: {exc}")

    # the event loop ---------------------------------------------------------------------
    def request_stop(self, sig: int) -> None:
        if self.stop_signal is not None:
            return
        self.stop_signal = sig
        self.kill_at = time.monotonic() + self.grace
        self.record["state"] = "stopping"
        self.record["stop_requested_at"] = time.time()
        try:
            write_record(self.ledger, self.record)
        except OSError as exc:
            _log(self.ledger, f"cannot record stopping: {exc}")
        foreground = self.tty_fd is not None and sig == signal.SIGINT
        if not foreground:  # a terminal's Ctrl-C already reached the whole group
            self._signal_group(sig)
        self._signal_descendants(sig, outside_group_only=self.leads_group)
        if not self.leads_group:
            self._signal_descendants(signal.SIGCONT, outside_group_only=False)
        self._signal_group(signal.SIGCONT)

    def _signal_group(self, sig: int) -> None:
        if not self.leads_group:  # the group is the caller's: never ours to signal
            return
        try:
            os.killpg(self.pid, sig)
        except OSError:
            pass

    def _descendants(self) -> dict[int, tuple[int, int, int]]:
        """Linux: every live descendant of ours and every member of our group."""
        table = process_table() or {}
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in table.items():
            children.setdefault(ppid, []).append(pid)
        found: dict[int, tuple[int, int, int]] = {}
        todo = list(children.get(self.pid, []))
        if self.leads_group:
            todo += [pid for pid, (_, pgid, _) in table.items() if pgid == self.pid]
        while todo:
            pid = todo.pop()
            if pid in found or pid == self.pid:
                continue
            found[pid] = table[pid]
            todo.extend(children.get(pid, []))
        return found

    def _signal_descendants(self, sig: int, outside_group_only: bool) -> int:
        if not _PLATFORM_LINUX:
            if not outside_group_only:
                for pid in self._group_members_fallback():
                    try:
                        os.kill(pid, sig)
                    except OSError:
                        pass
            return 0
        sent = 0
        for pid, (_, pgid, ticks) in self._descendants().items():
            if outside_group_only and pgid == self.pid:
                continue
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue
            try:
                if start_ticks(pid) == ticks:  # still the process we found
                    signal.pidfd_send_signal(fd, sig)
                    sent += 1
            except OSError:
                pass
            finally:
                os.close(fd)
        return sent

    def _group_members_fallback(self) -> list[int]:
        return [self.child] if self.child and self.child_status is None else []

    def kill_everything(self) -> None:
        self.kill_at = None
        if self._signal_descendants(signal.SIGKILL, outside_group_only=False):
            self.killed = True
        if not _PLATFORM_LINUX:
            self.killed = True

    def reap(self) -> bool:
        """Collect exited children; True once none is left (the job is entirely gone)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid == 0:
                return False
            if pid == self.child:
                self.child_status = status
                self._tell_front(f"status {status}\n", last=True)

    def undo_group(self) -> None:
        """Give back the group and the terminal before running the line unsupervised."""
        if self.tty_restore_pgrp is not None:
            self._set_foreground(self.tty_restore_pgrp)
        if self.original_pgrp != self.pid:
            try:
                os.setpgid(0, self.original_pgrp)
            except OSError:
                pass

    def loop(self, rfd: int, fifo: int, parent_fd: int | None) -> None:
        poller = select.poll()
        poller.register(rfd, select.POLLIN)
        poller.register(fifo, select.POLLIN)
        if parent_fd is not None:
            poller.register(parent_fd, select.POLLIN)
        watch = self.log_watch
        if watch is not None:
            poller.register(watch.fd, select.POLLIN)
        if self.reap():
            return
        while True:
            timeout = None
            look_at = watch.look_at if watch is not None else None
            wake_at = [at for at in (self.kill_at, look_at) if at is not None]
            if wake_at:
                timeout = max(0, int((min(wake_at) - time.monotonic()) * 1000) + 1)
            events = poller.poll(timeout)
            if watch is not None and look_at is not None and time.monotonic() >= look_at:
                watch.look()
                if watch.armed:
                    poller.register(watch.fd, select.POLLIN)
            for fd, _ in events:
                if watch is not None and fd == watch.fd:
                    if watch.armed:
                        watch.grew()
                        poller.unregister(watch.fd)
                elif fd == rfd:
                    for byte in os.read(rfd, 512):
                        if byte in (signal.SIGTERM, signal.SIGINT):
                            self.request_stop(byte)
                elif fd == fifo:
                    try:
                        data = os.read(fifo, 512)
                    except BlockingIOError:
                        data = b""
                    if b"stop" in data:
                        self.request_stop(signal.SIGTERM)
                elif fd == parent_fd:
                    poller.unregister(parent_fd)
                    if self.front_fd is not None:
                        self.command_lost_its_front()
                    elif self.opts["mode"] == "task":
                        self.request_stop(signal.SIGTERM)
            if self.kill_at is not None and time.monotonic() >= self.kill_at:
                self.kill_everything()
            if self.reap():
                return
            if self.stop_signal is not None and self.kill_at is None:
                # Past the grace period: anything that shows up now is killed at once.
                self.kill_everything()

    def finish(self) -> int:
        if self.log_watch is not None:
            self.log_watch.close()
        status = self.child_status if self.child_status is not None else 0
        code = os.waitstatus_to_exitcode(status)
        if self.stop_signal is not None:
            state = "killed" if self.killed else "stopped"
        else:
            state = "exited"
        self.record.update(
            state=state,
            exit_code=code if code >= 0 else 128 - code,
            signal=-code if code < 0 else None,
            ended_at=time.time(),
        )
        try:
            write_record(self.ledger, self.record)
        except OSError as exc:
            _log(self.ledger, f"cannot record the end: {exc}")
        # Removing the stop channel needs no space: with it gone, readers know that the
        # supervisor saw the job end (a killed supervisor leaves it), even on a full disk.
        try:
            os.unlink(self.fifo_path)
        except OSError:
            pass
        if self.tty_restore_pgrp is not None:
            self._set_foreground(self.tty_restore_pgrp)
        return code


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


def _run_unsupervised(
    line: str, why: str, ledger: str, inherited_hup: Any, job_signals: dict[int, Any]
) -> int:
    _log(ledger, f"running unsupervised: {why}")
    signal.set_wakeup_fd(-1)
    for sig, disposition in job_signals.items():
        signal.signal(sig, disposition)
    signal.signal(signal.SIGHUP, inherited_hup)
    shell, _ = user_shell()
    os.execve(shell, [shell, "-c", line], caller_environment())


def _exit_like(code: int) -> int:
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


def _signals_to_catch(sup: Supervisor, inherited_hup: Any) -> tuple[tuple[int, ...], ...]:
    """The signals we catch, and (in place of `CMD &`) those that go on to CMD: SIGHUP,
    SIGUSR1, SIGUSR2 and SIGWINCH, unless we were started ignoring them (under nohup)."""
    caught: tuple[int, ...] = ()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD, signal.SIGQUIT):
        kept = sup.in_place and sig in (signal.SIGINT, signal.SIGQUIT)
        if kept and sup.job_signals[sig] == signal.SIG_IGN:
            continue  # in place of `CMD &`: what the shell made CMD ignore, we ignore too
        caught += (sig,)
    forwarded: tuple[int, ...] = ()
    if sup.in_place:
        found = {sig: signal.getsignal(sig) for sig in (signal.SIGUSR1, signal.SIGUSR2)}
        found[signal.SIGWINCH] = signal.getsignal(signal.SIGWINCH)
        found[signal.SIGHUP] = inherited_hup  # under nohup, CMD ignores it as we do
        forwarded = tuple(sig for sig, how in found.items() if how != signal.SIG_IGN)
    return caught, forwarded


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        opts = _parse(args)
    except _Usage as exc:
        sys.stderr.write(f"corral supervisor: {exc}\n{__doc__}")
        return 2
    if opts["job"] is None:
        # Readers verify a supervisor by the token in its command line: put it there.
        token = os.urandom(16).hex()
        argv = supervisor_argv(None, token=token, options=args)
        os.execve(sys.executable, argv, caller_environment())
    if opts["session"] is None:
        opts["session"] = os.environ.get("CORRAL_SESSION") or os.environ.get(
            "CLAUDE_CODE_SESSION_ID"
        )
    inherited_hup = signal.getsignal(signal.SIGHUP)
    sup = Supervisor(opts, inherited_hup)
    ready_fd: int | None = opts["ready_fd"]
    if ready_fd is not None:
        os.set_inheritable(ready_fd, False)  # the job must not hold the caller's wait open
    caught, forwarded = _signals_to_catch(sup, inherited_hup)
    if sup.in_place:  # we are `$!`: fork the keeper, stand for CMD (front.py)
        blocked = [*caught, *forwarded, signal.SIGHUP]
        signal.pthread_sigmask(signal.SIG_BLOCK, blocked)  # none lost across the fork
        reader, writer = os.pipe2(os.O_CLOEXEC)
        keeper = os.fork()
        if keeper:
            os.close(writer)
            handled = tuple(sig for sig in caught if sig != signal.SIGCHLD) + forwarded
            status = front.run(keeper, reader, handled, forwarded)
            return _exit_like(os.waitstatus_to_exitcode(status))
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
            _log(sup.ledger, f"not started: cannot supervise: {exc}")
            if ready_fd is not None:
                os.write(ready_fd, f"fail {exc}\n".encode("utf-8", "replace"))
                os.close(ready_fd)
            return 1
        if ready_fd is not None:
            os.close(ready_fd)
        return _run_unsupervised(opts["line"], str(exc), sup.ledger, inherited_hup, sup.job_signals)
    sup.become_subreaper()
    watched = opts["mode"] == "task" or sup.front_fd is not None
    parent_fd = sup.watch_parent() if watched else None
    sup.watch_log()
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
    front.release_stdio()
    sup.give_back_memory()
    sup.loop(rfd, fifo, parent_fd)
    return _exit_like(sup.finish())


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
