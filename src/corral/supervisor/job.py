"""The supervisor of one job: leads its process group, records it in the ledger (every state
checked against the floor's transition table), runs the line, stops the whole job on request
and records how it ended."""

from __future__ import annotations

import os
import select
import time

from corral.lowlevel.joblog import times_file
from corral.lowlevel.locations import absolute, ensure_private, ledger_dir
from corral.lowlevel.procfs import process_table, self_identity, start_ticks
from corral.lowlevel.record import (
    EXITED,
    KILLED,
    LEDGER_VERSION,
    RUNNING,
    STOPPED,
    STOPPING,
    transition,
    write_record,
)
from corral.lowlevel.redact import command_digest, display_command
from corral.lowlevel.shells import user_shell
from corral.supervisor.signals import async_dispositions
from corral.supervisor.system import PLATFORM_LINUX, job_environment, log, stdout_log

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from typing import Any

    from corral.supervisor.logwatch import LogWatch
else:
    import _signal as signal  # the C module: the same functions without the enum wrappers

_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_PDEATHSIG = 1


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
        if not PLATFORM_LINUX:
            return
        try:
            from corral.lowlevel import libc

            result, err = libc.call("prctl", _PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (ImportError, OSError, AttributeError) as exc:
            log(self.ledger, f"prctl(PR_SET_CHILD_SUBREAPER) unavailable: {exc}")
            return
        if result != 0:
            log(self.ledger, f"prctl(PR_SET_CHILD_SUBREAPER) failed: errno {err}")

    def give_back_memory(self) -> None:
        """Return the freed start-up memory (the script's syntax tree) to the system."""
        if PLATFORM_LINUX:
            try:
                from corral.lowlevel import libc

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
        shell, _ = user_shell(shell=self.opts["shell"])
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
            "state": RUNNING,
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
        shell, shell_opts = user_shell(self.opts["startup"], self.opts["shell"])
        env = job_environment(self.token, self.opts["session"])
        argv = [shell, *shell_opts, "-c", self.opts["line"]]
        # The job gets self.job_signals, SIGHUP as we were given it, and every signal
        # unblocked. Not posix_spawn: glibc's leaves its two internal signals ignored in the
        # job.
        job_signals = self.job_signals
        inherited_hup = self.inherited_hup
        # In place of `CMD &`, CMD dies with us (`kill -KILL $!` kills the front, and we
        # kill CMD then; this covers our own death): what that signal would have done.
        dies_with_us = self.in_place and PLATFORM_LINUX
        # A signal the front passes on may come before the job has its own dispositions
        # (ours ignore SIGHUP): held blocked until then, so it is not lost.
        held = [signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH]
        if self.in_place:
            signal.pthread_sigmask(signal.SIG_BLOCK, held)
        pid = os.fork()
        if pid == 0:  # the job
            try:
                if dies_with_us:
                    from corral.lowlevel import libc

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
        if self.in_place:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, held)
        if self.front_fd is not None:
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
        log_file = self.record.get("log")
        if not (PLATFORM_LINUX and log_file):
            return
        logs = os.path.join(os.path.dirname(self.ledger), "logs")
        own = os.path.dirname(log_file) == logs
        try:
            from corral.supervisor.logwatch import LogWatch

            ensure_private(logs)
            times = times_file(logs, self.token)
            self.log_watch = LogWatch(log_file, times, self.opts["log_cap"] if own else None)
        except (ImportError, AttributeError, OSError) as exc:
            log(self.ledger, f"cannot watch the job's log: {exc}")

    def move(self, state: str) -> None:
        """Set the record's state, checked against the floor's transition table (raises
        IllegalTransition and changes nothing when the table forbids the move)."""
        self.record["state"] = transition(self.token, self.record["state"], state)

    # the event loop ---------------------------------------------------------------------
    def request_stop(self, sig: int) -> None:
        if self.stop_signal is not None:
            return
        self.stop_signal = sig
        self.kill_at = time.monotonic() + self.grace
        self.move(STOPPING)
        self.record["stop_requested_at"] = time.time()
        try:
            write_record(self.ledger, self.record)
        except OSError as exc:
            log(self.ledger, f"cannot record stopping: {exc}")
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
        if not PLATFORM_LINUX:
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
        if not PLATFORM_LINUX:
            self.killed = True

    def reap(self) -> bool:
        """Collect exited children; True once none is left (the job is entirely gone)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid == 0:
                if self.child_status is not None:  # CMD ended, what it left runs on
                    self._tell_front(f"status {self.child_status}\n", last=True)
                return False
            if pid == self.child:
                self.child_status = status

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
            self.move(KILLED if self.killed else STOPPED)
        else:
            self.move(EXITED)
        self.record.update(
            exit_code=code if code >= 0 else 128 - code,
            signal=-code if code < 0 else None,
            ended_at=time.time(),
        )
        try:
            write_record(self.ledger, self.record)
        except OSError as exc:
            log(self.ledger, f"cannot record the end: {exc}")
        # Removing the stop channel needs no space: with it gone, readers know that the
        # supervisor saw the job end (a killed supervisor leaves it), even on a full disk.
        try:
            os.unlink(self.fifo_path)
        except OSError:
            pass
        if self.child_status is not None:  # nothing of the job is left: we end with CMD
            self._tell_front(f"done {self.child_status}\n", last=True)
        if self.tty_restore_pgrp is not None:
            self._set_foreground(self.tty_restore_pgrp)
        return code
