"""corral's tmux pane runner: what runs inside a job's tmux window. Standard library only,
started with `python3 -I -S` by absolute path, like the supervisor.

usage: python3 -I -S tmux_pane.py DIR

DIR is the private 0700 folder the tmux wrapper (tmux_wrapper.py) made for the job. The
runner reads the job's spec from it (written by `write_spec`, then removed), and starts the
real supervisor in a session of its own, without a controlling terminal, with:

- stdin: the wrapper's own, received over the folder's Unix socket (SCM_RIGHTS); /dev/null
  for a detached job or when the wrapper is gone;
- stdout and stderr: two pipes, whose output it shows in the pane and copies to the
  folder's FIFOs (to the wrapper) and to the job's log if there is one, without SGR escapes
  when colours are forced.

The pane's terminal stays the runner's: Ctrl-C typed there becomes SIGINT for the
supervisor, and a closed window (SIGHUP) a stop. A detached start waits on the folder's
ready FIFO, where the runner writes `pid N` and the supervisor `ok TOKEN`. When the job
ends, its wait status goes to the folder's status file for the wrapper; with the user's
`keep windows` setting the window stays open until Enter is pressed.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable
else:
    import _signal as signal

# the private folder's entries: the job's spec, its output FIFOs, its wait status, the
# socket that hands the wrapper's stdin over, and the FIFO a detached start waits on
SPEC, OUT, ERR, STATUS, SOCK, READY = "spec", "out", "err", "status", "sock", "ready"


def write_all(fd: int, data: bytes) -> bool:
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


def in_folder(folder: str, action: Callable[[], object]) -> None:
    """Run `action` with `folder` as the current folder: a socket's path is at most 104
    bytes, so it is bound and reached by its short relative name."""
    here = os.open(".", getattr(os, "O_PATH", os.O_RDONLY) | os.O_CLOEXEC)
    try:
        os.chdir(folder)
        action()
    finally:
        os.fchdir(here)
        os.close(here)


def write_spec(private: str, head: list[str], argv: list[str], env: dict[str, str]) -> None:
    fields = [*head, str(len(argv)), *argv, *(f"{k}={v}" for k, v in env.items())]
    fd = os.open(os.path.join(private, SPEC), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        write_all(fd, "\0".join(fields).encode("utf-8", "surrogateescape"))
    finally:
        os.close(fd)


# -- the pane runner ----------------------------------------------------------------------


def main(args: list[str] | None = None) -> int:
    args = sys.argv[1:] if args is None else args
    if len(args) != 1:
        sys.stderr.write(f"corral tmux pane runner: give the job's folder\n{__doc__}")
        return 2
    return run(args[0])


def run(private: str) -> int:
    """Start the job described in `private` and show its output until it ends."""
    spec_path = os.path.join(private, SPEC)
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
    ready = _open_writer(os.path.join(private, READY))  # a detached start waits on it
    if ready is not None:
        extra += ["--ready-fd", str(ready)]
    cut = argv.index("--")
    argv[cut:cut] = extra
    stdin = _job_stdin(private)
    copies = [[_open_writer(os.path.join(private, name))] for name in (OUT, ERR)]
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
        write_all(ready, f"pid {pid}\n".encode())
        os.close(ready)
    _tee({pipes[0][0]: copies[0], pipes[1][0]: copies[1]}, color == "1")
    for sig in (signal.SIGINT, signal.SIGHUP):  # before the reap: its pid may be reused after
        signal.signal(sig, signal.SIG_IGN)
    _, status = os.waitpid(pid, 0)
    temp = os.path.join(private, STATUS + ".tmp")
    try:
        with open(temp, "w") as f:
            f.write(str(status))
        os.replace(temp, os.path.join(private, STATUS))
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

    if os.path.exists(os.path.join(private, SOCK)):
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            in_folder(private, lambda: sock.connect(SOCK))
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
                write_all(1, data)
                copy = strippers[fd].feed(data) if color else data
            else:
                copy = strippers[fd].flush() if color else b""
            sinks = readers[fd]
            for i, sink in enumerate(sinks):
                if copy and sink is not None and not write_all(sink, copy):
                    sinks[i] = None
            if not data:
                poller.unregister(fd)
                os.close(fd)
                del readers[fd]


if __name__ == "__main__":
    sys.exit(main())
