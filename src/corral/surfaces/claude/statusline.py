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
that `python -I -S` has not loaded already except `posix` ones, reads JSON with the C
scanner and listening sockets over netlink (/proc/net/tcp costs milliseconds per read on
some kernels). An internal error prints nothing of ours and one line in corral's log; the
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


def _read_all(fd: int) -> bytes:
    import posix

    chunks: list[bytes] = []
    while True:
        chunk = posix.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _read_file(path: str) -> bytes:
    import posix

    fd = posix.open(path, posix.O_RDONLY)
    try:
        return _read_all(fd)
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
    from corral.surfaces.claude.hook import parse

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


def process_table() -> dict[int, tuple[int, str]] | None:
    """pid -> (ppid, start ticks as text) of every live Linux process; None without /proc."""
    import posix

    try:
        entries = posix.listdir("/proc")
    except OSError:
        return None
    table = {}
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            stat = _read_file(f"/proc/{entry}/stat")
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split(maxsplit=20)
        if fields[0] != b"Z":
            table[int(entry)] = (int(fields[1]), fields[19].decode())
    return table


def _boot_id() -> str:
    try:
        return _read_file("/proc/sys/kernel/random/boot_id").decode().strip()
    except OSError:
        return "noboot"


def supervisor_alive(
    record: "dict[str, Any]", table: dict[int, tuple[int, str]] | None, boot: str = ""
) -> bool:
    """The record's supervisor runs: same pid and start time (`boot` id and ticks)."""
    pid = record["pid"]
    if table is None:  # no /proc (macOS): the pid alone, good enough for a display
        import posix

        try:
            posix.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    entry = table.get(pid)
    if entry is None:
        return False
    started = record.get("started_at")
    return not isinstance(started, str) or started == f"{boot or _boot_id()}:{entry[1]}"


def children_of(table: dict[int, tuple[int, str]]) -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    return children


def descendants(root: int, children: dict[int, list[int]]) -> list[int]:
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


# -- listening sockets --------------------------------------------------------------------

_NLMSG_DONE, _NLMSG_ERROR, _SOCK_DIAG_BY_FAMILY = 3, 2, 20
_TCP_LISTEN = 10


def _diag_request(family: int, protocol: int, states: int) -> bytes:
    import _struct

    body = _struct.pack("=BBBBI", family, protocol, 0, 0, states) + bytes(48)
    # nlmsghdr: length, type, flags NLM_F_REQUEST | NLM_F_DUMP, sequence, port id
    return _struct.pack("=IHHII", 16 + len(body), _SOCK_DIAG_BY_FAMILY, 0x301, 1, 0) + body


def listening_by_netlink() -> dict[int, int]:
    """socket inode -> port of every TCP socket in LISTEN and UDP socket without a peer,
    from the kernel's sock_diag netlink interface (what `ss -l` uses)."""
    import _socket
    import _struct

    found: dict[int, int] = {}
    sock = _socket.socket(16, 2, 4)  # AF_NETLINK, SOCK_DGRAM, NETLINK_SOCK_DIAG
    try:
        sock.settimeout(0.5)
        for family in (2, 10):  # AF_INET, AF_INET6
            for protocol, states in ((6, 1 << _TCP_LISTEN), (17, 0xFFFFFFFF)):
                sock.send(_diag_request(family, protocol, states))
                done = False
                while not done:
                    data = sock.recv(1 << 16)
                    at = 0
                    while at + 16 <= len(data):
                        length, kind = _struct.unpack_from("=IH", data, at)
                        if kind == _NLMSG_DONE:
                            done = True
                            break
                        if kind == _NLMSG_ERROR or length < 16:
                            raise OSError("sock_diag refused the request")
                        # inet_diag_msg: family, state, timer, retrans, then the socket id
                        # (sport, dport big-endian, ...); the inode sits at offset 68.
                        sport, dport = _struct.unpack_from(">HH", data, at + 20)
                        inode = _struct.unpack_from("=I", data, at + 16 + 68)[0]
                        if protocol == 6 or dport == 0:
                            found[inode] = sport
                        at += (length + 3) & ~3
                    if not data:
                        done = True
    finally:
        sock.close()
    return found


def listening_by_proc() -> dict[int, int]:
    """The same from /proc/net (slower on some kernels; used when netlink is refused)."""
    found: dict[int, int] = {}
    for table in ("tcp", "tcp6", "udp", "udp6"):
        try:
            lines = _read_file(f"/proc/net/{table}").decode().split("\n")[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) < 10:
                continue
            if table.startswith("tcp") and f[3] != "0A":
                continue
            if table.startswith("udp") and not f[2].endswith(":0000"):
                continue
            found[int(f[9])] = int(f[1].rpartition(":")[2], 16)
    return found


def listening() -> dict[int, int]:
    try:
        return listening_by_netlink()
    except (OSError, ValueError):
        return listening_by_proc()


def ports_of(pids: list[int], sockets: dict[int, int]) -> set[int]:
    """The ports `pids` listen on, from their open file descriptors."""
    import posix

    wanted = {f"socket:[{inode}]": port for inode, port in sockets.items()}
    ports: set[int] = set()
    for pid in pids:
        folder = f"/proc/{pid}/fd"
        try:
            fds = posix.listdir(folder)
        except OSError:
            continue
        for fd in fds:
            try:
                port = wanted.get(posix.readlink(f"{folder}/{fd}"))
            except OSError:
                continue
            if port is not None:
                ports.add(port)
    return ports


# -- the band -----------------------------------------------------------------------------


def band(folder: str, ledger: str, hint: str = "/procs") -> str | None:
    """The status line text for `folder` (None: no job runs there)."""
    from corral.lowlevel.record import STATES_FINAL

    table = process_table()
    boot = _boot_id() if table is not None else ""
    jobs = [
        r
        for r in records(ledger)
        if r["state"] not in STATES_FINAL
        and isinstance(r.get("cwd"), str)
        and inside(r["cwd"], folder)
        and supervisor_alive(r, table, boot)
    ]
    if not jobs:
        return None
    ports = {r["port"] for r in jobs if isinstance(r.get("port"), int) and r["port"] > 0}
    if table is not None:
        sockets = listening()
        if sockets:
            children = children_of(table)
            members = [pid for r in jobs for pid in descendants(r["pid"], children)]
            ports |= ports_of(members, sockets)
    parts = [f"⚙ {len(jobs)} running"]
    if ports:
        parts.append(" ".join(f":{p}" for p in sorted(ports)))
    parts.append(hint)
    return " · ".join(parts)


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
        from corral.surfaces.claude.hook import parse

        folder = session_folder(parse(data.decode("utf-8"))) if data.strip() else None
        text = band(folder, f"{locations.home_dir()}/ledger", hint) if folder else None
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
