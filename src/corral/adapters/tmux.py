"""tmux, the one way in: every tmux command corral runs goes through `run()` (or `attach()`
for the interactive case), and tmux's failures become corral errors here and nowhere else.

The server is chosen by socket: `-S PATH` when a job recorded its server's socket, else
`-L NAME` from `$CORRAL_TMUX_SOCKET`, else tmux's default server. This module is on the
tmux wrapper's start-up path: it uses `os.posix_spawnp` rather than `subprocess`, whose
import alone costs more than the whole call.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import dataclass

from corral.errors import CorralError

SOCKET_ENV = "CORRAL_TMUX_SOCKET"
PRIVATE_PREFIX = "corral-tmux."  # + uid.pid.start.random: the wrapper's private folders
_LINUX = sys.platform.startswith("linux")
# tmux 3.3 exits 0 after "error creating <socket>": these mean failure whatever the status.
_UNREACHABLE = ("error connecting to", "error creating", "no server running", "server exited",
                "lost server")  # fmt: skip


class TmuxError(CorralError):
    """tmux ran and refused (a target that is gone, a name that is taken...)."""

    def __init__(self, args: list[str], message: str) -> None:
        super().__init__(f"tmux {shlex.join(args)}: {message or 'failed'}")
        self.message = message


class TmuxUnavailable(TmuxError):
    """tmux is not installed or its server cannot be reached."""


@dataclass(frozen=True)
class Server:
    """Which tmux server to talk to: a socket path (-S), a socket name (-L), or the default."""

    path: str | None = None
    name: str | None = None

    @classmethod
    def from_env(cls) -> Server:
        return cls(name=os.environ.get(SOCKET_ENV) or None)

    def argv(self, args: list[str]) -> list[str]:
        if self.path:
            return ["tmux", "-S", self.path, *args]
        if self.name:
            return ["tmux", "-L", self.name, *args]
        return ["tmux", *args]


def run(args: list[str], server: Server | None = None) -> str:
    """Run one tmux command and return its stdout; raise TmuxError / TmuxUnavailable."""
    argv = (server or Server.from_env()).argv(args)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, out_w, 1),
        (os.POSIX_SPAWN_DUP2, err_w, 2),
        (os.POSIX_SPAWN_CLOSE, out_r),
        (os.POSIX_SPAWN_CLOSE, err_r),
    ]
    try:
        pid = os.posix_spawnp(argv[0], argv, dict(os.environ), file_actions=actions)
    except OSError as exc:
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        raise TmuxUnavailable(args, f"cannot run tmux: {exc.strerror}") from None
    os.close(out_w)
    os.close(err_w)
    out, err = _read_both(out_r, err_r)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    message = err.decode(errors="replace").strip()
    if code == 127 or any(s in message for s in _UNREACHABLE):
        raise TmuxUnavailable(args, message)
    if code != 0:
        raise TmuxError(args, message)
    return out.decode(errors="replace")


def _read_both(out_fd: int, err_fd: int) -> tuple[bytes, bytes]:
    import select

    chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    poller = select.poll()
    for fd in chunks:
        poller.register(fd, select.POLLIN)
    open_fds = set(chunks)
    while open_fds:
        for fd, _ in poller.poll():
            data = os.read(fd, 65536)
            if data:
                chunks[fd].append(data)
            else:
                poller.unregister(fd)
                open_fds.discard(fd)
                os.close(fd)
    return b"".join(chunks[out_fd]), b"".join(chunks[err_fd])


def attach(pane: str, server: Server) -> int:
    """Show a job's window to the person at this terminal; returns tmux's exit status."""
    inside = os.environ.get("TMUX", "").split(",")[0]
    same_server = bool(inside) and server.path is not None and inside == server.path
    verb = "switch-client" if same_server else "attach-session"
    argv = server.argv(["select-window", "-t", pane, ";", verb, "-t", pane])
    env = dict(os.environ)
    if not same_server:
        env.pop("TMUX", None)  # attaching from inside another server is what the person asked
    try:
        pid = os.posix_spawnp(argv[0], argv, env)
    except OSError as exc:
        raise TmuxUnavailable(argv[1:], f"cannot run tmux: {exc.strerror}") from None
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


# -- names ---------------------------------------------------------------------------------


def project_root(cwd: str) -> str:
    """The git top-level folder holding `cwd` (a `.git` entry), else `cwd` itself."""
    path = os.path.abspath(cwd)
    probe = path
    while True:
        if os.path.exists(os.path.join(probe, ".git")):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            return path
        probe = parent


def clean_name(text: str, fallback: str) -> str:
    """A name tmux takes literally: no `.` or `:` (target separators), no `;` (a word
    ending in one separates tmux commands), no blanks."""
    name = re.sub(r"[.:;\s]+", "_", text).strip("_")
    name = "".join(c for c in name if c.isprintable())
    return name[:60] or fallback


def session_name(cwd: str) -> str:
    return clean_name(os.path.basename(project_root(cwd)), "corral")


_WRAPPERS = {"npx", "bunx", "pnpx", "exec", "env", "nohup", "time", "sudo", "uv", "poetry"}
_RUNNERS = {"npm", "pnpm", "yarn", "bun", "deno", "make", "just", "cargo", "go", "task"}
_PORT = re.compile(r"(?:--port[= ]|-p\s*|\bPORT=)(\d{2,5})\b")


def window_name(line: str) -> str:
    """The job's short name: `vite`, `dev-5174`, `tsc-watch` (not unique yet)."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        words = line.split()
    words = [w for w in words if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)]
    while words and (os.path.basename(words[0]) in _WRAPPERS or words[0] in ("run", "--")):
        words = words[1:]
        while words and words[0].startswith("-"):
            words = words[1:]
    if not words:
        return "job"
    program = os.path.basename(words[0])
    rest = words[1:]
    if program.startswith("python") and rest[:1] == ["-m"] and len(rest) > 1:
        program, rest = rest[1], rest[2:]
    name = program
    if program in _RUNNERS:
        subcommands = [w for w in rest if not w.startswith("-")][:2]
        if subcommands[:1] == ["run"] and len(subcommands) > 1:
            name = subcommands[1]
        elif subcommands:
            name = subcommands[0]
    if any(w in ("-w", "--watch", "watch") for w in rest) and not name.endswith("watch"):
        name += "-watch"
    port = _PORT.search(line)
    if port:
        name += "-" + port.group(1)
    return clean_name(name, "job")


def unique_name(wanted: str, taken: set[str]) -> str:
    if wanted not in taken:
        return wanted
    n = 2
    while f"{wanted}-{n}" in taken:
        n += 1
    return f"{wanted}-{n}"


# -- windows -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    session: str
    name: str
    pane: str  # `%N`: unique for the server's lifetime
    pane_pid: int

    @property
    def target(self) -> str:
        return f"{self.session}:{self.name}"


_FORMAT = "#{pane_id} #{pane_pid}"
# The session (or the whole server) does not exist yet: the first job creates it.
_NO_SESSION = ("can't find session", "no server running", "No such file", "Connection refused")


def window_names(session: str, server: Server) -> set[str] | None:
    """Names of the session's windows; None when there is no such session."""
    try:
        out = run(["list-windows", "-t", f"={session}", "-F", "#{window_name}"], server)
    except TmuxError as exc:
        if any(s in exc.message for s in _NO_SESSION):
            return None  # the first job creates the session (and the server)
        raise
    return set(out.split("\n")) - {""}


def new_window(session: str, name: str, cwd: str, argv: list[str], server: Server) -> Window:
    """Open a detached window running `argv` (executed directly, no shell) in the project's
    session, creating the session (and the server) when it is the first job."""
    common = ["-n", name, "-c", cwd, "-P", "-F", _FORMAT]
    try:
        out = run(["new-window", "-d", "-t", f"={session}:", *common, "--", *argv], server)
    except TmuxError as exc:
        if not any(s in exc.message for s in _NO_SESSION):
            raise
        try:
            out = run(["new-session", "-d", "-s", session, *common, "--", *argv], server)
        except TmuxError as again:
            if "duplicate session" not in again.message:
                raise
            # another job created the session meanwhile: join it
            out = run(["new-window", "-d", "-t", f"={session}:", *common, "--", *argv], server)
    fields = out.split()
    if len(fields) != 2 or not fields[1].isdigit():
        raise TmuxError(["new-window"], f"unexpected answer {out.strip()!r}")
    return Window(session, name, fields[0], int(fields[1]))


def close_job_pane(pane: str, pane_pid: int, server: Server, wait: float = 1.0) -> bool:
    """Close the pane that ran a job, once its runner is gone (or after `wait` seconds),
    only if tmux still shows it running the recorded runner pid. True if it was closed."""
    try:
        shown = run(["display-message", "-p", "-t", pane, "#{pane_pid}"], server).strip()
    except TmuxError:
        return False  # the pane (or the server) is gone already
    if shown != str(pane_pid):
        return False
    _wait_exit(pane_pid, wait)
    try:
        run(["kill-pane", "-t", pane], server)
    except TmuxError:
        return False
    return True


def _wait_exit(pid: int, timeout: float) -> None:
    import select

    try:
        fd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        return
    try:
        select.select([fd], [], [], timeout)
    finally:
        os.close(fd)


# -- the wrapper's private folders ---------------------------------------------------------


def _start_ticks(pid: int) -> str:
    from corral.lowlevel import procfs

    info = procfs.proc_stat(pid)
    return "0" if info is None else str(info[2])  # a zombie is gone too


def private_dir_name(pid: int) -> str:
    """`corral-tmux.<uid>.<pid>.<start ticks>.<random>`: stale once that process is gone."""
    return f"{PRIVATE_PREFIX}{os.getuid()}.{pid}.{_start_ticks(pid)}.{os.urandom(6).hex()}"


def remove_stale_private_dirs(tmp: str | None = None) -> list[str]:
    """Remove private folders of wrappers that are gone (killed with SIGKILL)."""
    folder = tmp or temp_root()
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    mine = f"{PRIVATE_PREFIX}{os.getuid()}."
    for name in names:
        if not name.startswith(mine):
            continue
        parts = name[len(mine) :].split(".")
        if len(parts) != 3 or not parts[0].isdigit():
            continue
        if not _gone(int(parts[0]), parts[1]):
            continue
        path = os.path.join(folder, name)
        remove_tree(path)
        removed.append(path)
    return removed


def _gone(pid: int, ticks: str) -> bool:
    if _LINUX:
        return _start_ticks(pid) != ticks
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def remove_tree(path: str) -> None:
    """Remove a private folder (flat: fifos and small files only)."""
    try:
        entries = os.listdir(path)
    except OSError:
        return
    for entry in entries:
        try:
            os.unlink(os.path.join(path, entry))
        except OSError:
            pass
    try:
        os.rmdir(path)
    except OSError:
        pass


def temp_root() -> str:
    # /tmp is safe here: private folders are made with mkdir (fails if the name exists),
    # mode 0700, under a random name (tempfile itself costs 9 ms of start-up to import).
    tmp = os.environ.get("TMPDIR") or "/tmp"  # noqa: S108
    return tmp if os.path.isdir(tmp) else "/tmp"  # noqa: S108
