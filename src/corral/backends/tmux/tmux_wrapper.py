"""corral's tmux wrapper: runs one shell line under the supervisor inside a tmux window, and
behaves towards its caller exactly as the line would.

usage: python3 -I -S tmux_wrapper.py [SUPERVISOR OPTIONS] -- LINE
       python3 -I -S tmux_wrapper.py --detached LOG [SUPERVISOR OPTIONS] -- LINE

With --detached LOG it starts the job in a window and returns once the job is recorded,
printing `tmux PID ok|unsupervised SESSION:WINDOW`; or, when the job must use the default
backend (tmux unavailable: one warning line on stderr; a line that uses tmux), `group`.

The wrapper makes a private 0700 folder, opens a window named after the job in the
project's tmux session, and the pane runner in that window (tmux_pane.py) starts the real
supervisor (same ledger, markers and stop rules) with:

- stdin: the wrapper's own stdin, handed over as a file descriptor (SCM_RIGHTS on a Unix
  socket in the private folder), so a line that reads stdin reads what the caller gave it
  and meets EOF when it would without tmux. Detached jobs get /dev/null, as without tmux.
- stdout and stderr: two pipes. The pane runner shows what comes out in the pane and
  passes a copy through FIFOs in the private folder to the wrapper, which writes it to its
  own stdout and stderr as it comes (a detached job's copy goes to its log file).
- a session of its own, without a controlling terminal: the pane's terminal stays the
  pane runner's, which turns Ctrl-C typed there into SIGINT for the supervisor and a
  closed window into a stop. A job that opens /dev/tty fails at once, as under an agent,
  instead of waiting, stopped, for a person to type.

When the job ends, the wrapper exits with its exit status (passed back in a file of the
private folder).

Colours. The job's stdout and stderr are pipes, as without tmux, so the caller gets the
very bytes it would get without tmux; programs that colour only on a terminal then print
plain text in the pane too. That is the default (`[tmux] color = "plain"`): the caller's
transparency is what the backend promises. Judged and not taken: a pseudo-terminal for the
job. Colours and progress bars would show, but the job would see a terminal: `ls` prints
columns, `git` starts a pager, tools ask questions and wait, output is line-buffered and
stderr merged into stdout; removing escapes afterwards undoes none of that. The choice
offered instead is `[tmux] color = "force"`: the job keeps its pipes but gets
FORCE_COLOR=1 and CLICOLOR_FORCE=1 (honoured by chalk, picocolors, rich, pytest, Rust's
anstream, BSD ls), the pane shows the colours, and the copy for the caller (and the log)
has exactly the SGR escapes (ESC [ digits ; : m) removed. Its cost: the caller's bytes
differ where a line prints SGR escapes itself, or where a program reads those variables
for more than colour (`env` prints them). Nothing is forced when NO_COLOR, FORCE_COLOR or
CLICOLOR_FORCE is already set.

SIGINT to the wrapper reaches the job as Ctrl-C in the pane would. If the wrapper is
killed, the window and the job live on (listed by `corral ls`, stopped by `corral stop`,
shown by `corral attach`). The private folder is removed when the wrapper exits, SIGTERM
included; after a SIGKILL the next wrapper or `corral clean` removes it. Without tmux, or
when its server cannot be reached, the line runs under the default backend after one
warning line on stderr. A line that uses tmux itself is never put in a window.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import select
    import signal
    from _socket import socket

    from corral.adapters.tmux import TmuxError, Window
else:
    import _signal as signal

HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))  # holds the corral package
if __name__ == "__main__" and _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)  # -I -S: the package this file belongs to
# the pane runner's module: stdlib only, like this one; it owns the private folder's layout
from corral.backends.tmux.tmux_pane import (  # noqa: E402
    ERR,
    OUT,
    READY,
    SOCK,
    STATUS,
    in_folder,
    write_all,
    write_spec,
)
from corral.lowlevel.locations import TMUX_PANE as PANE_RUNNER  # noqa: E402
from corral.lowlevel.locations import supervisor_argv  # noqa: E402

_RERAISE = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL, signal.SIGPIPE)
COLOR_ENV = ("NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE")  # the user decided already


def wrapper_argv(line: str, *, token: str, options: list[str]) -> list[str]:
    """The command that runs `line` with the tmux backend (options go to the supervisor)."""
    return supervisor_argv(line, program=os.path.abspath(__file__), token=token, options=options)


def _split(args: list[str]) -> tuple[list[str], str]:
    if "--" not in args or args.index("--") != len(args) - 2:
        sys.stderr.write(f"corral tmux wrapper: give the line after --\n{__doc__}")
        sys.exit(2)
    return args[:-2], args[-1]


def uses_tmux(line: str) -> bool:
    import re

    return re.search(r"(?:^|[\s;&|(`$'\"/])tmux(?:$|[\s;&|)`'\"])", line) is not None


def _exec_default(options: list[str], line: str) -> int:
    argv = supervisor_argv(line, mode="task", options=options)
    os.execv(argv[0], argv)


def _exit_like(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        return code
    sig = -code
    if sig in _RERAISE:
        sys.stdout.flush()
        if sig != signal.SIGKILL:
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    return 128 + sig


def fallback_warning(exc: TmuxError) -> str:
    return (
        f"corral: tmux backend unavailable ({exc.message or exc}); "
        "running with the default backend\n"
    )


# -- the wrapper ---------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    options, line = _split(args)
    if "--job" not in options:
        options = supervisor_argv(None, launcher=(), token=os.urandom(16).hex(), options=options)
    if args[:1] == ["--detached"] and len(options) > 1:
        return _detached_main(options[1], options[2:], line)
    if uses_tmux(line):
        return _exec_default(options, line)
    import _socket

    from corral.adapters import tmux

    stdin_closed = _hold_closed_stdin()
    rfd, wfd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wfd, warn_on_full_buffer=False)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: None)
    private = _private_dir()
    try:
        fifos = {}
        for name, out in ((OUT, 1), (ERR, 2)):
            path = os.path.join(private, name)
            os.mkfifo(path, 0o600)
            fifos[os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)] = out
        listener = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        in_folder(private, lambda: listener.bind(SOCK))  # only our uid can reach it: 0700
        listener.listen(1)
        listener.setblocking(False)
        sup = supervisor_argv(line, mode="task", options=options)
        try:
            window = open_job_window(private, line, sup, os.getcwd())
        except tmux.TmuxError as exc:
            sys.stderr.write(fallback_warning(exc))
            tmux.remove_tree(private)
            signal.set_wakeup_fd(-1)
            return _exec_default(options, line)
        status, killed_by = _proxy(fifos, rfd, window.pane_pid, private, (listener, stdin_closed))
    finally:
        tmux.remove_tree(private)
    if killed_by is not None:  # SIGTERM/SIGHUP: we go, the window and the job stay
        signal.signal(killed_by, signal.SIG_DFL)
        os.kill(os.getpid(), killed_by)
        return 128 + killed_by
    if status is None:
        sys.stderr.write(
            "corral: the job's tmux window closed before the job reported how it ended; "
            "see `corral ls --all`\n"
        )
        return 1
    return _exit_like(status)


def _private_dir() -> str:
    from corral.adapters import tmux

    root = tmux.temp_root()
    tmux.remove_stale_private_dirs(root)
    private = os.path.join(root, tmux.private_dir_name(os.getpid()))
    os.mkdir(private, 0o700)
    return private


def open_job_window(private: str, line: str, sup: list[str], cwd: str, log: str = "") -> Window:
    """Write the job's spec into `private` and open its window, where the pane runner starts
    the supervisor command `sup` in `cwd` (a copy of the output goes to `log` if given)."""
    from corral import config
    from corral.adapters import tmux

    settings = config.load()
    server = tmux.Server.from_env()
    session = tmux.session_name(cwd)
    lock = _name_lock(sup[: sup.index("--")])  # two jobs starting at once: distinct names
    try:
        taken = tmux.window_names(session, server) or set()
        name = tmux.unique_name(tmux.window_name(line), taken)
        env = dict(os.environ)
        color = config.tmux_color(settings) == "force" and not any(k in env for k in COLOR_ENV)
        if color:
            env.update(FORCE_COLOR="1", CLICOLOR_FORCE="1")
        keep = config.tmux_keep_windows(settings)
        head = ["1" if keep else "0", f"{session}:{name}", cwd, "1" if color else "0", log]
        write_spec(private, head, sup, env)
        runner = [sys.executable, "-I", "-S", PANE_RUNNER, private]
        return tmux.new_window(session, name, cwd, runner, server)
    finally:
        if lock is not None:
            os.close(lock)


def _name_lock(options: list[str]) -> int | None:
    import fcntl

    from corral.lowlevel.locations import ensure_private, ledger_dir

    given = options.index("--ledger") + 1 if "--ledger" in options else 0
    ledger = options[given] if 0 < given < len(options) else ledger_dir()
    try:
        ensure_private(ledger)
        fd = os.open(os.path.join(ledger, ".tmux-names.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return None
    os.set_inheritable(fd, False)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _proxy(
    fifos: dict[int, int], wake: int, runner_pid: int, private: str, stdin: tuple[socket, bool]
) -> tuple[int | None, int | None]:
    """Copy the job's output until the runner closes it, and hand our stdin over to it when
    it asks (`stdin`: the listening socket, and whether our stdin is closed); returns (the
    job's wait status or None, the signal that ends us or None)."""
    import select

    listener, stdin_closed = stdin
    poller = select.poll()
    for fd in (*fifos, wake, listener.fileno()):
        poller.register(fd, select.POLLIN)
    # None: already gone (drained below), or no pidfd (macOS: the FIFOs' hang-up ends it)
    runner_fd = _watch_exit(poller, runner_pid)
    writable = {1: True, 2: True}
    runner_gone = runner_fd is None
    while fifos:
        if runner_gone:  # every writer is gone: what is left in the FIFOs ends with EOF
            for fd, out in list(fifos.items()):
                while True:
                    try:
                        data = os.read(fd, 65536)
                    except BlockingIOError:
                        data = b""
                    if not data:
                        break
                    writable[out] = writable[out] and write_all(out, data)
                os.close(fd)
                del fifos[fd]
            break
        for fd, _ in poller.poll():
            if fd == wake:
                for sig in os.read(wake, 64):
                    if sig == signal.SIGINT:
                        _interrupt(runner_fd, runner_pid)
                    elif sig in (signal.SIGTERM, signal.SIGHUP):
                        return None, sig
            elif fd == runner_fd:
                runner_gone = True
            elif fd == listener.fileno():
                if _hand_over_stdin(listener, stdin_closed):
                    poller.unregister(fd)
                    listener.close()
                    os.unlink(os.path.join(private, SOCK))
            elif fd in fifos:
                try:
                    data = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if data:
                    out = fifos[fd]
                    writable[out] = writable[out] and write_all(out, data)
                else:
                    poller.unregister(fd)
                    os.close(fd)
                    del fifos[fd]
    if runner_fd is not None:
        os.close(runner_fd)
    listener.close()
    try:
        with open(os.path.join(private, STATUS)) as f:
            return int(f.read()), None
    except (OSError, ValueError):
        return None, None


def _watch_exit(poller: select.poll, pid: int) -> int | None:
    """A pidfd for `pid` registered on `poller` (readable once it exits), or None when it
    is gone already or the platform has no pidfd (macOS)."""
    import select

    try:
        fd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        return None
    poller.register(fd, select.POLLIN)
    return fd


def _interrupt(runner_fd: int | None, runner_pid: int) -> None:
    """Ctrl-C for the job: the pane runner passes SIGINT on to the supervisor."""
    try:
        if runner_fd is not None:
            signal.pidfd_send_signal(runner_fd, signal.SIGINT)
        else:
            os.kill(runner_pid, signal.SIGINT)
    except OSError:
        pass  # the runner is gone, and the job with it


def _hold_closed_stdin() -> bool:
    """True if our stdin is closed; /dev/null then holds fd 0 (close-on-exec), so that no
    pipe of ours takes its place and reaches the job as its stdin."""
    try:
        os.fstat(0)
    except OSError:
        os.open(os.devnull, os.O_RDONLY)  # the lowest free fd: 0
        return True
    return False


def _hand_over_stdin(listener: socket, closed: bool) -> bool:
    """Give our stdin to the pane runner that connected; False if nobody was there yet."""
    import _socket

    try:
        fd, _ = listener._accept()  # type: ignore[attr-defined]  # the C socket's accept
    except BlockingIOError:
        return False
    conn = _socket.socket(fileno=fd)
    try:
        conn.setblocking(True)
        rights = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, (0).to_bytes(4, sys.byteorder))]
        if closed:
            conn.sendmsg([b"-"])
        else:
            conn.sendmsg([b"0"], rights)
    except OSError:
        pass  # the runner went away: it gives the job /dev/null
    finally:
        conn.close()
    return True


# -- a detached job in a window ------------------------------------------------------------


def _detached_main(log: str, options: list[str], line: str) -> int:
    from corral.adapters import tmux

    if uses_tmux(line):
        print("group")
        return 0
    sup = supervisor_argv(line, options=[*options, "--detached"])
    try:
        pid, supervised, window = start_detached(sup, line, os.getcwd(), log)
    except tmux.TmuxError as exc:
        sys.stderr.write(fallback_warning(exc))
        print("group")
        return 0
    print(f"tmux {pid} {'ok' if supervised else 'unsupervised'} {window.target}")
    return 0


def start_detached(
    sup: list[str], line: str, cwd: str, log: str, timeout: float = 30.0
) -> tuple[int, bool, Window]:
    """Open a window where the pane runner starts the detached supervisor `sup` (stdin
    /dev/null, output shown in the pane and appended to `log`); return the supervisor's
    pid, whether it supervises the job, and the window, once the job is recorded.
    Raises TmuxError (TmuxUnavailable: use the default backend) if no window opened."""
    from corral.adapters import tmux

    private = _private_dir()
    try:
        path = os.path.join(private, READY)
        os.mkfifo(path, 0o600)
        ready = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            window = open_job_window(private, line, sup, cwd, log)
            answer = _read_ready(ready, window.pane_pid, timeout)
        finally:
            os.close(ready)
    finally:
        tmux.remove_tree(private)
    pid, supervised = 0, False
    for word in answer.decode(errors="replace").splitlines():
        key, _, value = word.partition(" ")
        if key == "pid" and value.isdigit():
            pid = int(value)
        supervised = supervised or key == "ok"
    return pid, supervised, window


def _read_ready(fd: int, runner_pid: int, timeout: float) -> bytes:
    """What the pane runner ("pid N") and the supervisor ("ok TOKEN") write to the ready
    FIFO, until both closed it (or the runner died before it opened it)."""
    import select
    import time

    poller = select.poll()
    poller.register(fd, select.POLLIN)
    runner_fd = _watch_exit(poller, runner_pid)  # None: the timeout is the guard
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while (left := deadline - time.monotonic()) > 0:
            events = dict(poller.poll(int(left * 1000) + 1))
            if fd in events:
                try:
                    data = os.read(fd, 4096)
                except BlockingIOError:
                    continue
                if not data:
                    break  # every writer closed it
                chunks.append(data)
            elif runner_fd is not None and runner_fd in events:
                poller.unregister(runner_fd)
                if not chunks:
                    break  # the runner died before it opened the FIFO
    finally:
        if runner_fd is not None:
            os.close(runner_fd)
    return b"".join(chunks)


# -- the pane runner (inside the tmux window) ----------------------------------------------


if __name__ == "__main__":
    sys.exit(main())
