"""corral's tmux wrapper: runs one shell line under the supervisor inside a tmux window, and
behaves towards its caller exactly as the line would.

usage: python3 -I -S tmux_wrapper.py [SUPERVISOR OPTIONS] -- LINE
       python3 -I -S tmux_wrapper.py --detached LOG [SUPERVISOR OPTIONS] -- LINE
       python3 -I -S tmux_wrapper.py --pane DIR      (what runs inside the window)

With --detached LOG it starts the job in a window and returns once the job is recorded,
printing `tmux PID ok|unsupervised SESSION:WINDOW`; or, when the job must use the default
backend (tmux unavailable: one warning line on stderr; a line that uses tmux), `group`.

The wrapper makes a private 0700 folder, opens a window named after the job in the
project's tmux session, and the pane runner in that window starts the real supervisor
(same ledger, markers and stop rules) with:

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
    import signal
    from _socket import socket
    from collections.abc import Callable

    from corral.adapters.tmux import TmuxError, Window
else:
    import _signal as signal

HERE = os.path.dirname(os.path.abspath(__file__))
SUPERVISOR = os.path.join(HERE, "supervisor.py")
_RERAISE = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL, signal.SIGPIPE)
# the private folder's entries: the job's spec, its output FIFOs, its wait status, the
# socket that hands the wrapper's stdin over, and the FIFO a detached start waits on
_SPEC, _OUT, _ERR, _STATUS, _SOCK, _READY = "spec", "out", "err", "status", "sock", "ready"
COLOR_ENV = ("NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE")  # the user decided already


def wrapper_argv(line: str, *, token: str, options: list[str]) -> list[str]:
    """The command that runs `line` with the tmux backend (options go to the supervisor)."""
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), "--job", token, *options,
            "--", line]  # fmt: skip


def _split(args: list[str]) -> tuple[list[str], str]:
    if "--" not in args or args.index("--") != len(args) - 2:
        sys.stderr.write(f"corral tmux wrapper: give the line after --\n{__doc__}")
        sys.exit(2)
    return args[:-2], args[-1]


def uses_tmux(line: str) -> bool:
    import re

    return re.search(r"(?:^|[\s;&|(`$'\"/])tmux(?:$|[\s;&|)`'\"])", line) is not None


def _exec_default(options: list[str], line: str) -> int:
    argv = [sys.executable, "-I", "-S", SUPERVISOR, "--task", *options, "--", line]
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


def _write_all(fd: int, data: bytes) -> bool:
    """Write everything (waiting when fd is non-blocking and full); False once it is closed."""
    import select

    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            select.select([], [fd], [])
        except OSError:  # EPIPE: the reader went away; keep draining so the job is not held
            return False
    return True


def _in_folder(folder: str, action: Callable[[], object]) -> None:
    """Run `action` with `folder` as the current folder: a socket's path is at most 104
    bytes, so it is bound and reached by its short relative name."""
    here = os.open(".", getattr(os, "O_PATH", os.O_RDONLY) | os.O_CLOEXEC)
    try:
        os.chdir(folder)
        action()
    finally:
        os.fchdir(here)
        os.close(here)


def fallback_warning(exc: TmuxError) -> str:
    return (
        f"corral: tmux backend unavailable ({exc.message or exc}); "
        "running with the default backend\n"
    )


# -- the wrapper ---------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--pane"] and len(args) == 2:
        return pane_main(args[1])
    options, line = _split(args)
    if "--job" not in options:
        options = ["--job", os.urandom(16).hex(), *options]
    if args[:1] == ["--detached"] and len(options) > 1:
        return _detached_main(options[1], options[2:], line)
    if uses_tmux(line):
        return _exec_default(options, line)
    if os.path.dirname(HERE) not in sys.path:  # -I -S: the package next to this file
        sys.path.insert(0, os.path.dirname(HERE))
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
        for name, out in ((_OUT, 1), (_ERR, 2)):
            path = os.path.join(private, name)
            os.mkfifo(path, 0o600)
            fifos[os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)] = out
        listener = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        _in_folder(private, lambda: listener.bind(_SOCK))  # only our uid can reach it: 0700
        listener.listen(1)
        listener.setblocking(False)
        sup = [sys.executable, "-I", "-S", SUPERVISOR, "--task", *options, "--", line]
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
        _write_spec(private, head, sup, env)
        runner = [sys.executable, "-I", "-S", os.path.abspath(__file__), "--pane", private]
        return tmux.new_window(session, name, cwd, runner, server)
    finally:
        if lock is not None:
            os.close(lock)


def _name_lock(options: list[str]) -> int | None:
    import fcntl

    from corral.supervisor import default_ledger_dir

    given = options.index("--ledger") + 1 if "--ledger" in options else 0
    ledger = options[given] if 0 < given < len(options) else default_ledger_dir()
    try:
        os.makedirs(ledger, 0o700, exist_ok=True)
        fd = os.open(os.path.join(ledger, ".tmux-names.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return None
    os.set_inheritable(fd, False)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _write_spec(private: str, head: list[str], argv: list[str], env: dict[str, str]) -> None:
    fields = [*head, str(len(argv)), *argv, *(f"{k}={v}" for k, v in env.items())]
    fd = os.open(os.path.join(private, _SPEC), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        _write_all(fd, "\0".join(fields).encode("utf-8", "surrogateescape"))
    finally:
        os.close(fd)


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
    runner_fd: int | None = None
    try:
        runner_fd = os.pidfd_open(runner_pid)
        poller.register(runner_fd, select.POLLIN)
    except (OSError, AttributeError):
        pass  # already gone (drained below), or no pidfd (macOS: the FIFOs' hang-up ends it)
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
                    writable[out] = writable[out] and _write_all(out, data)
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
                    os.unlink(os.path.join(private, _SOCK))
            elif fd in fifos:
                try:
                    data = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if data:
                    out = fifos[fd]
                    writable[out] = writable[out] and _write_all(out, data)
                else:
                    poller.unregister(fd)
                    os.close(fd)
                    del fifos[fd]
    if runner_fd is not None:
        os.close(runner_fd)
    listener.close()
    try:
        with open(os.path.join(private, _STATUS)) as f:
            return int(f.read()), None
    except (OSError, ValueError):
        return None, None


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
    if os.path.dirname(HERE) not in sys.path:
        sys.path.insert(0, os.path.dirname(HERE))
    from corral.adapters import tmux

    if uses_tmux(line):
        print("group")
        return 0
    sup = [sys.executable, "-I", "-S", SUPERVISOR, *options, "--detached", "--", line]
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
        path = os.path.join(private, _READY)
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
    runner_fd: int | None = None
    try:
        runner_fd = os.pidfd_open(runner_pid)
        poller.register(runner_fd, select.POLLIN)
    except (OSError, AttributeError):
        pass  # gone already, or no pidfd (macOS): the timeout is the guard
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


def pane_main(private: str) -> int:
    spec_path = os.path.join(private, _SPEC)
    try:
        with open(spec_path, "rb") as f:
            fields = f.read().decode("utf-8", "surrogateescape").split("\0")
        os.unlink(spec_path)
    except OSError as exc:
        sys.stderr.write(f"corral: cannot read the job's spec: {exc}\n")
        return 1
    keep, target, cwd, color, log = fields[0] == "1", fields[1], fields[2], fields[3], fields[4]
    count = int(fields[5])
    argv = fields[6 : 6 + count]
    env = dict(e.split("=", 1) for e in fields[6 + count :] if "=" in e)
    meta = {
        "backend": "tmux",
        "tmux": target,
        "tmux_pane": os.environ.get("TMUX_PANE", ""),
        "tmux_socket": os.environ.get("TMUX", "").split(",")[0],
        "tmux_pane_pid": str(os.getpid()),
    }
    extra = [word for k, v in meta.items() for word in ("--meta", f"{k}={v}")]
    ready = _open_writer(os.path.join(private, _READY))  # a detached start waits on it
    if ready is not None:
        extra += ["--ready-fd", str(ready)]
    cut = argv.index("--")
    argv[cut:cut] = extra
    stdin = _job_stdin(private)
    copies = [[_open_writer(os.path.join(private, name))] for name in (_OUT, _ERR)]
    if log:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        copies[0].append(fd)
        copies[1].append(fd)
    pipes = [os.pipe(), os.pipe()]
    pid = os.fork()
    if pid == 0:  # the supervisor, in a session of its own: the pane's terminal is ours
        try:
            os.setsid()
            if stdin is None:
                os.close(0)
            else:
                os.dup2(stdin, 0)
            os.dup2(pipes[0][1], 1)
            os.dup2(pipes[1][1], 2)
            if ready is not None:
                os.set_inheritable(ready, True)
            os.chdir(cwd)
            os.execve(argv[0], argv, env)
        except BaseException as exc:  # noqa: BLE001 - the child must never return into our code
            os.write(2, f"corral: cannot start the supervisor: {exc}\n".encode())
        finally:
            os._exit(127)
    # Ctrl-C typed in the pane interrupts the job; a closed window (SIGHUP) stops it.
    signal.signal(signal.SIGINT, lambda *_: _send(pid, signal.SIGINT))
    signal.signal(signal.SIGHUP, lambda *_: _send(pid, signal.SIGTERM))
    for end in (stdin, pipes[0][1], pipes[1][1]):
        if end is not None:
            os.close(end)
    if ready is not None:
        _write_all(ready, f"pid {pid}\n".encode())
        os.close(ready)
    _tee({pipes[0][0]: copies[0], pipes[1][0]: copies[1]}, color == "1")
    for sig in (signal.SIGINT, signal.SIGHUP):  # before the reap: its pid may be reused after
        signal.signal(sig, signal.SIG_IGN)
    _, status = os.waitpid(pid, 0)
    temp = os.path.join(private, _STATUS + ".tmp")
    try:
        with open(temp, "w") as f:
            f.write(str(status))
        os.replace(temp, os.path.join(private, _STATUS))
    except OSError:
        pass  # no wrapper (detached), or it is gone with its folder: nobody waits for it
    for fd in {fd for sinks in copies for fd in sinks if fd is not None}:
        os.close(fd)
    if keep:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        code = os.waitstatus_to_exitcode(status)
        os.write(1, f"\r\n[corral] job ended ({code}); press Enter to close\r\n".encode())
        try:
            os.read(0, 1)
        except (OSError, KeyboardInterrupt):
            pass
    return 0


def _send(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass  # it has ended


def _job_stdin(private: str) -> int | None:
    """The job's stdin: the wrapper's own (None: it is closed), else /dev/null (detached, or
    the wrapper is gone)."""
    import _socket

    if os.path.exists(os.path.join(private, _SOCK)):
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            _in_folder(private, lambda: sock.connect(_SOCK))
            data, ancillary, _, _ = sock.recvmsg(1, _socket.CMSG_SPACE(4))
            for level, kind, payload in ancillary:
                if (level, kind) == (_socket.SOL_SOCKET, _socket.SCM_RIGHTS):
                    fd = int.from_bytes(payload[:4], sys.byteorder)
                    os.set_inheritable(fd, False)  # only the job's fd 0 is a copy of it
                    return fd
            if data == b"-":
                return None
        except OSError:
            pass  # the wrapper went away before it answered
        finally:
            sock.close()
    return os.open(os.devnull, os.O_RDONLY)


def _open_writer(path: str) -> int | None:
    try:  # non-blocking open: a reader that is gone (wrapper killed) is ENXIO, not a hang
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    os.set_blocking(fd, True)  # then block, as a pipe to the caller would
    return fd


class _SgrStripper:
    """Removes SGR escapes (ESC [ digits ; : m) from a stream, also one split across reads."""

    def __init__(self) -> None:
        import re

        self.sgr = re.compile(rb"\x1b\[[0-9;:]*m")
        self.partial = re.compile(rb"\x1b(?:\[[0-9;:]{0,64})?\Z")
        self.carry = b""

    def feed(self, data: bytes) -> bytes:
        data = self.carry + data
        tail = self.partial.search(data)
        cut = tail.start() if tail else len(data)
        self.carry = data[cut:]
        return self.sgr.sub(b"", data[:cut])

    def flush(self) -> bytes:
        rest, self.carry = self.carry, b""
        return rest


def _tee(readers: dict[int, list[int | None]], color: bool) -> None:
    """Show the job's output in the pane and pass a copy on (to the wrapper, to the log),
    without its SGR escapes when colours are forced."""
    import select

    strippers = {fd: _SgrStripper() for fd in readers} if color else {}
    poller = select.poll()
    for fd in readers:
        poller.register(fd, select.POLLIN)
    while readers:
        for fd, _ in poller.poll():
            data = os.read(fd, 65536)
            if data:
                _write_all(1, data)
                copy = strippers[fd].feed(data) if color else data
            else:
                copy = strippers[fd].flush() if color else b""
            sinks = readers[fd]
            for i, sink in enumerate(sinks):
                if copy and sink is not None and not _write_all(sink, copy):
                    sinks[i] = None
            if not data:
                poller.unregister(fd)
                os.close(fd)
                del readers[fd]


if __name__ == "__main__":
    sys.exit(main())
