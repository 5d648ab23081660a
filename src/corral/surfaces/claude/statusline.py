"""corral's Claude Code status line: the jobs running in the session's folder, with ports.

usage: python3 -I -S statusline.py [--hint TEXT] [--then COMMAND]

Reads Claude Code's status line JSON on stdin and prints one line such as
`⚙ 2 running · :3000 :8081 · /procs`: the jobs whose supervisor is alive and whose folder
is the session's project folder (`workspace.project_dir`, else `cwd`) or below it, with the
ports their records name and the ports their processes listen on. Prints nothing when no
such job runs.

  --hint TEXT     the command named at the end (default /procs)
  --then COMMAND  the user's own status line command: it runs after ours with the same
                  stdin, and its output follows ours unchanged

Claude Code runs this on every update, so its start-up is a budget: it imports no module
that `python -I -S` has not loaded already except `posix` ones and corral's floor, reads JSON
with the C scanner, the jobs' processes from the kernel's children lists and listening
sockets over netlink (lowlevel.sockets; /proc/net/tcp costs milliseconds per read on some
kernels). An internal error prints nothing of ours and one line in corral's log; the
user's status line still runs.
"""

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# No `from __future__ import annotations` and no `os` on this path: each costs start-up.
# Annotations naming typing-only names are strings.

_PIPE_SAFE = 16384  # bytes a pipe takes without a reader on every platform we run on


def package_root() -> str:
    """The folder that holds the `corral` package this file belongs to."""
    here = __file__
    for _ in range(4):  # statusline.py, claude/, surfaces/, corral/
        here = here.rpartition("/")[0]
    return here or "/"


def command(hint: str = "/procs", then: str | None = None) -> list[str]:
    """The absolute, isolated command line that settings files run as the status line
    (through run_statusline.py, which loads this module from its bytecode)."""
    import os

    launcher = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_statusline.py")
    argv = [sys.executable, "-I", "-S", launcher]
    if hint != "/procs":
        argv += ["--hint", hint]
    if then is not None:
        argv += ["--then", then]
    return argv


# -- reading ------------------------------------------------------------------------------


def _read_all(fd: int, regular: bool = False) -> bytes:
    """Everything left in `fd`; a `regular` file shorter than a read costs one read (its
    short read is its end; a pipe's is not). Reads of 64 kB: a buffer of 128 kB or more
    is a memory map of its own, mapped and unmapped on every read."""
    import posix

    chunks: list[bytes] = []
    while True:
        chunk = posix.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        if regular and len(chunk) < 1 << 16:
            return b"".join(chunks)


def _read_file(path: str) -> bytes:
    import posix

    fd = posix.open(path, posix.O_RDONLY)
    try:
        return _read_all(fd, regular=True)  # a ledger record or the cache: one read
    finally:
        posix.close(fd)


def session_folder(payload: "Any") -> str | None:
    """The session's project folder from the status line JSON."""
    if not isinstance(payload, dict):
        return None
    workspace = payload.get("workspace")
    if isinstance(workspace, dict):
        for key in ("project_dir", "current_dir"):
            if isinstance(workspace.get(key), str) and workspace[key].startswith("/"):
                return str(workspace[key])
    cwd = payload.get("cwd")
    return cwd if isinstance(cwd, str) and cwd.startswith("/") else None


def inside(path: str, root: str) -> bool:
    root = root.rstrip("/") or "/"
    path = path.rstrip("/") or "/"
    return path == root or path.startswith(root if root == "/" else root + "/")


def records(ledger: str) -> "list[dict[str, Any]]":
    """The ledger's job records that every reader trusts (lowlevel.record.check); the others
    are skipped: another surface reports them."""
    import posix

    from corral.lowlevel.record import check
    from corral.surfaces.claude import parse

    found = []
    try:
        names = posix.listdir(ledger)
    except OSError:
        return []
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        try:
            found.append(check(parse(_read_file(f"{ledger}/{name}").decode("utf-8")), name))
        except (OSError, ValueError, RecursionError):
            continue
    return found


# -- processes ----------------------------------------------------------------------------


def supervisor_alive(record: "dict[str, Any]") -> bool:
    """The record's supervisor runs: same pid and start time (boot id and ticks)."""
    return supervisors_alive([(record["pid"], record.get("started_at"))])


def supervisors_alive(jobs: "list[tuple[int, Any]]") -> bool:
    """Every (pid, started_at) still runs: live (not a zombie), and started then when
    `started_at` is a start identity. The start ticks are compared as the kernel writes them
    (no conversion per process), and procfs is imported once for all of them (an import
    statement in a loop runs importlib's Python on every pass)."""
    from corral.lowlevel import procfs

    if not procfs.LINUX:  # no /proc (macOS): the pid alone, good enough for a display
        import posix

        for pid, _ in jobs:
            try:
                posix.kill(pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                continue
        return True
    for pid, started in jobs:
        fields = procfs.read_stat(pid)
        if fields is None or fields[procfs.STATE] == b"Z":
            return False
        if isinstance(started, str):
            boot, _, ticks = started.rpartition(":")
            if boot != procfs.boot_id() or ticks.encode() != fields[procfs.START]:
                return False
    return True


# -- the band -----------------------------------------------------------------------------


def band(folder: str, ledger: str, hint: str = "/procs") -> str | None:
    """The status line text for `folder` (None: no job runs there)."""
    return _measured(folder, ledger, hint, _listening())[0]


def _listening() -> "dict[int, Any]":
    """The machine's listening sockets by inode, raw (lowlevel.sockdiag: the key of every
    update; Linux, elsewhere none are read)."""
    from corral.lowlevel import procfs

    if not procfs.LINUX:
        return {}
    from corral.lowlevel import sockdiag

    return sockdiag.listening()


def _measured(
    folder: str, ledger: str, hint: str, found: "dict[int, Any]"
) -> "tuple[str | None, list[str]]":
    """The band, and the identity (`pid@started_at`) of each job it counts."""
    from corral.lowlevel import procfs
    from corral.lowlevel.record import STATES_FINAL

    jobs = [
        r
        for r in records(ledger)
        if r["state"] not in STATES_FINAL and inside(r["cwd"], folder) and supervisor_alive(r)
    ]
    counted = [f"{r['pid']}@{r.get('started_at') or ''}" for r in jobs]
    if not jobs:
        return None, counted
    ports = {r["port"] for r in jobs if r.get("port")}
    if found:
        from corral.lowlevel import sockets

        # the jobs' processes, from the kernel's children lists: no walk over /proc
        members = [pid for r in jobs for pid in procfs.descendants(r["pid"])]
        ports |= {sockets.Socket(*found[inode]).port for inode in sockets.owners(found, members)}
    parts = [f"⚙ {len(jobs)} running"]
    if ports:
        parts.append(" ".join(f":{p}" for p in sorted(ports)))
    parts.append(hint)
    return " · ".join(parts), counted


# Claude Code runs the status line on every update, often several times a second while the
# model works. A band is reused only while nothing it shows can have changed: the ledger
# folder (every start, stop and end of a job renames a file there), the machine's listening
# sockets (a port that opens or closes), and the supervisor of every job it counts (one
# killed outright leaves its record saying running). What that leaves out is a listening
# socket handed from one process to another without a new one being opened.


def cached_band(folder: str, home: str, hint: str = "/procs") -> str | None:
    """`band(folder, <home>/ledger, hint)`, from corral's cache while it still holds."""
    import posix

    ledger = f"{home}/ledger"
    try:
        stamp = str(posix.stat(ledger).st_mtime_ns)
    except OSError:
        return None  # no ledger: no job
    found = _listening()
    key = [stamp, hint, folder, ",".join(map(str, sorted(found)))]
    cache = f"{home}/cache/statusline"
    try:
        *kept_key, counted, kept = _read_file(cache).decode("utf-8", "surrogateescape").split("\0")
        kept_jobs = [job.partition("@") for job in counted.split()]
        if kept_key == key and supervisors_alive([(int(p), s or None) for p, _, s in kept_jobs]):
            return kept or None
    except (OSError, ValueError):
        pass
    text, jobs = _measured(folder, ledger, hint, found)
    _write_cache(cache, "\0".join([*key, " ".join(jobs), text or ""]))
    return text


def _write_cache(path: str, content: str) -> None:
    """Replace the cache file (0600, temp file and rename); best effort, never raises."""
    import posix

    folder = path.rpartition("/")[0]
    temp = f"{path}.{posix.getpid()}.tmp"
    try:
        try:
            posix.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        fd = posix.open(temp, posix.O_WRONLY | posix.O_CREAT | posix.O_TRUNC, 0o600)
        try:
            posix.write(fd, content.encode("utf-8", "surrogateescape"))
        finally:
            posix.close(fd)
        posix.rename(temp, path)
    except (OSError, ValueError):  # ValueError: a folder name no file can hold
        try:
            posix.unlink(temp)
        except OSError:
            pass


def _options(argv: list[str]) -> tuple[str, str | None]:
    hint, then = "/procs", None
    at = 0
    while at < len(argv):
        if argv[at] in ("--hint", "--then") and at + 1 < len(argv):
            if argv[at] == "--hint":
                hint = argv[at + 1]
            else:
                then = argv[at + 1]
            at += 2
        else:
            raise ValueError(f"unknown argument {argv[at]!r}")
    return hint, then


def run_theirs(then: str, data: bytes) -> None:
    """Replace this process with the user's status line, its stdin holding `data`."""
    import posix

    if len(data) <= _PIPE_SAFE:
        read_end, write_end = posix.pipe()
        posix.write(write_end, data)
        posix.close(write_end)
    else:  # more than a pipe holds: an unlinked temporary file
        import os
        import tempfile

        read_end, path = tempfile.mkstemp(prefix="corral-statusline-")
        os.unlink(path)
        os.write(read_end, data)
        os.lseek(read_end, 0, os.SEEK_SET)
    posix.dup2(read_end, 0)
    posix.close(read_end)
    posix.execv("/bin/sh", ["/bin/sh", "-c", then])


def log(message: str) -> None:
    """One line in corral's log; never raises."""
    from corral.lowlevel import logline

    logline.line("statusline", message)


def main(argv: list[str]) -> int:
    if sys.path[:1] != [package_root()]:
        sys.path.insert(0, package_root())
    try:
        hint, then = _options(argv)
    except ValueError as exc:
        sys.stderr.write(f"{exc}\n{__doc__}")
        return 2
    data = b""
    try:
        data = _read_all(0)
        from corral.lowlevel import locations
        from corral.surfaces.claude import parse

        folder = session_folder(parse(data.decode("utf-8"))) if data.strip() else None
        text = cached_band(folder, locations.home_dir(), hint) if folder else None
    except BaseException as exc:  # noqa: BLE001 - a status line never fails loudly
        log(f"{type(exc).__name__}: {exc}")
        text = None
    if text:
        sys.stdout.write(text + "\n")
    sys.stdout.flush()
    if then:
        run_theirs(then, data)  # does not return
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
