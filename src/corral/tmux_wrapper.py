"""corral's tmux wrapper: runs one shell line under the supervisor inside a tmux window, and
behaves towards its caller exactly as the line would.

usage: python3 -I -S tmux_wrapper.py [SUPERVISOR OPTIONS] -- LINE
       python3 -I -S tmux_wrapper.py --pane DIR      (what runs inside the window)

The wrapper makes a private 0700 folder, opens a window named after the job in the
project's tmux session, and runs the real supervisor (same ledger, markers and stop rules)
in it. The job's stdout and stderr are pipes read by the pane runner, which shows them in
the pane and passes them through FIFOs in the private folder to the wrapper, which writes
them to its own stdout and stderr as they come. When the job ends, the wrapper exits with
its exit status (passed back in a file of the private folder).

SIGINT to the wrapper types Ctrl-C into the pane. If the wrapper is killed, the window and
the job live on (listed by `corral ls`, stopped by `corral stop`, shown by `corral attach`).
The private folder is removed when the wrapper exits, SIGTERM included; after a SIGKILL the
next wrapper or `corral clean` removes it. Without tmux, or when its server cannot be
reached, the line runs under the default backend after one warning line on stderr. A line
that uses tmux itself is never put in a window.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
else:
    import _signal as signal

HERE = os.path.dirname(os.path.abspath(__file__))
SUPERVISOR = os.path.join(HERE, "supervisor.py")
_RERAISE = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL, signal.SIGPIPE)
_SPEC, _OUT, _ERR, _STATUS = "spec", "out", "err", "status"


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


# -- the wrapper ---------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--pane"] and len(args) == 2:
        return pane_main(args[1])
    options, line = _split(args)
    if "--job" not in options:
        options = ["--job", os.urandom(16).hex(), *options]
    if uses_tmux(line):
        return _exec_default(options, line)
    if os.path.dirname(HERE) not in sys.path:  # -I -S: the package next to this file
        sys.path.insert(0, os.path.dirname(HERE))
    from corral import config
    from corral.adapters import tmux

    rfd, wfd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wfd, warn_on_full_buffer=False)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: None)
    root = tmux.temp_root()
    tmux.remove_stale_private_dirs(root)
    private = os.path.join(root, tmux.private_dir_name(os.getpid()))
    os.mkdir(private, 0o700)
    try:
        for name in (_OUT, _ERR):
            os.mkfifo(os.path.join(private, name), 0o600)
        fifos = {
            os.open(os.path.join(private, _OUT), os.O_RDONLY | os.O_NONBLOCK): 1,
            os.open(os.path.join(private, _ERR), os.O_RDONLY | os.O_NONBLOCK): 2,
        }
        server = tmux.Server.from_env()
        cwd = os.getcwd()
        session = tmux.session_name(cwd)
        lock = _name_lock(options)  # two jobs starting at once must not pick the same name
        try:
            taken = tmux.window_names(session, server) or set()
            name = tmux.unique_name(tmux.window_name(line), taken)
            sup = [sys.executable, "-I", "-S", SUPERVISOR, "--task", *options, "--", line]
            _write_spec(private, config.tmux_keep_windows(), f"{session}:{name}", cwd, sup)
            runner = [sys.executable, "-I", "-S", os.path.abspath(__file__), "--pane", private]
            window = tmux.new_window(session, name, cwd, runner, server)
        except tmux.TmuxError as exc:
            sys.stderr.write(
                f"corral: tmux backend unavailable ({exc.message or exc}); "
                "running with the default backend\n"
            )
            tmux.remove_tree(private)
            signal.set_wakeup_fd(-1)
            return _exec_default(options, line)
        finally:
            if lock is not None:
                os.close(lock)

        def interrupt() -> None:
            try:
                tmux.send_interrupt(window.pane, server)
            except tmux.TmuxError as exc:
                sys.stderr.write(f"corral: could not interrupt the job: {exc}\n")

        status, killed_by = _proxy(fifos, rfd, window.pane_pid, private, interrupt)
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


def _write_spec(private: str, keep: bool, target: str, cwd: str, argv: list[str]) -> None:
    env = [f"{k}={v}" for k, v in os.environ.items()]
    fields = ["1" if keep else "0", target, cwd, str(len(argv)), *argv, *env]
    fd = os.open(os.path.join(private, _SPEC), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        _write_all(fd, "\0".join(fields).encode("utf-8", "surrogateescape"))
    finally:
        os.close(fd)


def _proxy(
    fifos: dict[int, int], wake: int, runner_pid: int, private: str, interrupt: object
) -> tuple[int | None, int | None]:
    """Copy the job's output until the runner closes it; (wait status or None, our killer)."""
    import select

    poller = select.poll()
    for fd in (*fifos, wake):
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
                        interrupt()  # type: ignore[operator]
                    elif sig in (signal.SIGTERM, signal.SIGHUP):
                        return None, sig
            elif fd == runner_fd:
                runner_gone = True
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
    try:
        with open(os.path.join(private, _STATUS)) as f:
            return int(f.read()), None
    except (OSError, ValueError):
        return None, None


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
    keep, target, cwd, count = fields[0] == "1", fields[1], fields[2], int(fields[3])
    argv = fields[4 : 4 + count]
    env = dict(e.split("=", 1) for e in fields[4 + count :] if "=" in e)
    meta = {
        "backend": "tmux",
        "tmux": target,
        "tmux_pane": os.environ.get("TMUX_PANE", ""),
        "tmux_socket": os.environ.get("TMUX", "").split(",")[0],
        "tmux_pane_pid": str(os.getpid()),
    }
    cut = argv.index("--")
    argv[cut:cut] = [word for k, v in meta.items() for word in ("--meta", f"{k}={v}")]
    fifos = [_open_writer(os.path.join(private, name)) for name in (_OUT, _ERR)]
    pipes = [os.pipe(), os.pipe()]
    pid = os.fork()
    if pid == 0:  # the supervisor: stdin stays the pane's terminal, output goes to our pipes
        try:
            os.dup2(pipes[0][1], 1)
            os.dup2(pipes[1][1], 2)
            os.chdir(cwd)
            os.execve(argv[0], argv, env)
        except BaseException as exc:  # noqa: BLE001 - the child must never return into our code
            os.write(2, f"corral: cannot start the supervisor: {exc}\n".encode())
        finally:
            os._exit(127)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the terminal's Ctrl-C is for the job
    readers = {pipes[0][0]: fifos[0], pipes[1][0]: fifos[1]}
    for _, w in pipes:
        os.close(w)
    _tee(readers)
    _, status = os.waitpid(pid, 0)
    temp = os.path.join(private, _STATUS + ".tmp")
    try:
        with open(temp, "w") as f:
            f.write(str(status))
        os.replace(temp, os.path.join(private, _STATUS))
    except OSError:
        pass  # the wrapper is gone and its folder with it: nobody is waiting for the status
    for fd in fifos:
        if fd is not None:
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


def _open_writer(path: str) -> int | None:
    try:  # non-blocking open: a reader that is gone (wrapper killed) is ENXIO, not a hang
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    os.set_blocking(fd, True)  # then block, as a pipe to the caller would
    return fd


def _tee(readers: dict[int, int | None]) -> None:
    """Show the job's output in the pane and pass it to the wrapper, until it ends."""
    import select

    poller = select.poll()
    for fd in readers:
        poller.register(fd, select.POLLIN)
    while readers:
        for fd, _ in poller.poll():
            data = os.read(fd, 65536)
            if not data:
                poller.unregister(fd)
                os.close(fd)
                del readers[fd]
                continue
            _write_all(1, data)
            fifo = readers[fd]
            if fifo is not None and not _write_all(fifo, data):
                readers[fd] = None


if __name__ == "__main__":
    sys.exit(main())
