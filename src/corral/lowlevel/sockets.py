"""The one listening-socket reader: which sockets listen (the kernel's sock_diag netlink
dump, /proc/net as the fallback), which processes hold them (a walk over /proc/<pid>/fd), and
the one `Listener` type every part of corral reports (the hook's port lookup, the status line,
the scanner's snapshot). Elsewhere (no /proc) psutil answers `holder`.

What counts as listening: a TCP socket in LISTEN, and a UDP socket bound to a port without
a peer. A TCP socket that is bound but not listening (CLOSE), or a connected UDP socket, is
not a listener.

Standard library only and cheap to import (the status line's budget): `posix` and `sys`,
with `_socket` when reading (the netlink messages are packed with int.to_bytes: `_struct` is
a shared library of its own, ~0.4 ms to load); no `typing` at run time (the record types below
are plain tuple subclasses that mypy sees as the NamedTuples they behave as).
"""

import posix
import sys

# No `from __future__ import annotations`: it imports the `__future__` module at run time
# (the status line's budget); annotations naming more than a builtin are strings.

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
    from typing import NamedTuple

_LINUX = sys.platform.startswith("linux")


def _named(name: str, fields: str, defaults: "tuple[object, ...]" = (), **extra: object) -> type:
    """A tuple subclass with named fields (what collections.namedtuple makes, without
    importing `collections`): positional or keyword construction, equality, hashing and
    ordering as tuples."""
    names = tuple(fields.split())
    required = len(names) - len(defaults)

    def new(cls: type, *args: object, **kwargs: object) -> "tuple[object, ...]":
        values = list(args) + [None] * (len(names) - len(args))
        if len(args) > len(names):
            raise TypeError(f"{name} takes {len(names)} fields")
        for at, field in enumerate(names):
            if field in kwargs:
                values[at] = kwargs.pop(field)
            elif at >= len(args):
                if at < required:
                    raise TypeError(f"{name} needs {field}")
                values[at] = defaults[at - required]
        if kwargs:
            raise TypeError(f"{name} has no field {next(iter(kwargs))}")
        return tuple.__new__(cls, values)

    def shown(self: "tuple[object, ...]") -> str:
        return f"{name}({', '.join(f'{f}={v!r}' for f, v in zip(names, self, strict=True))})"

    namespace: dict[str, object] = {"__slots__": (), "__new__": new, "__repr__": shown}
    for at, field in enumerate(names):
        namespace[field] = property(_item(at))
    namespace["_fields"] = names
    namespace.update(extra)
    return type(name, (tuple,), namespace)


def _item(at: int) -> "Callable[[tuple[object, ...]], object]":
    def get(self: "tuple[object, ...]") -> object:
        return self[at]

    return get


def _socket_family(self: "Socket") -> str:
    return "ipv6" if self.v6 else "ipv4"


def _socket_address(self: "Socket") -> str:
    import _socket

    return str(_socket.inet_ntop(10 if self.v6 else 2, self.raw_address))


if TYPE_CHECKING:

    class Listener(NamedTuple):
        """A listening socket as corral reports it."""

        port: int
        proto: str  # "tcp" or "udp"
        family: str  # "ipv4" or "ipv6"
        address: str
        pid: int | None  # None: the socket's owner is not visible to us
        argv: tuple[str, ...] = ()  # the owner's command line, when asked for (`holder`)

    class Socket(NamedTuple):
        """One listening socket: TCP in LISTEN, or UDP bound without a peer."""

        inode: int
        port: int
        proto: str  # "tcp" or "udp"
        v6: bool
        raw_address: bytes  # in network order, 4 or 16 bytes

        @property
        def family(self) -> str: ...

        def address(self) -> str: ...

    class Unseen(NamedTuple):
        """A listening socket no walk found an owner for. `full_at`: the time.monotonic()
        of the last walk over every process; `until`: the start (seconds since boot) of the
        youngest process walked since then."""

        full_at: float
        until: float

else:
    Listener = _named("Listener", "port proto family address pid argv", ((),))
    Socket = _named(
        "Socket", "inode port proto v6 raw_address",
        family=property(_socket_family), address=_socket_address,
    )  # fmt: skip
    Unseen = _named("Unseen", "full_at until")


def listening(port: int | None = None) -> "dict[int, Socket]":
    """Listening sockets by inode (only those on `port` when given), read by
    `sockdiag.listening`: the kernel's socket diagnostics, /proc/net as the fallback."""
    from corral.lowlevel import sockdiag

    return {
        inode: Socket(*raw)
        for inode, raw in sockdiag.listening().items()
        if port is None or raw[1] == port
    }


def _diag_listening() -> "dict[int, Socket]":
    from corral.lowlevel import sockdiag

    return {inode: Socket(*raw) for inode, raw in sockdiag.diag().items()}


def _proc_listening() -> "dict[int, Socket]":
    from corral.lowlevel import sockdiag

    return {inode: Socket(*raw) for inode, raw in sockdiag.proc().items()}


def pids() -> "list[str]":
    """Every pid folder of /proc, newest pid first: listeners are mostly young processes."""
    return sorted((e for e in posix.listdir("/proc") if e.isdigit()), key=int, reverse=True)


def owners(inodes: "Collection[int]", among: "Iterable[int | str]") -> "dict[int, tuple[int, str]]":
    """inode -> (pid, fd) of a process among `among` holding that socket. The walk over the
    processes' fd folders stops as soon as every inode has an owner."""
    wanted = {f"socket:[{inode}]": inode for inode in inodes}
    found: dict[int, tuple[int, str]] = {}
    for link, pid, fd in _holding(wanted, among):
        found[wanted.pop(link)] = (pid, fd)  # the first met; once all are, the walk ends
    return found


def holders(inodes: "Collection[int]", among: "Iterable[int | str]") -> "dict[int, dict[int, str]]":
    """inode -> {pid: fd} of every process among `among` holding that socket (its first
    descriptor for it), for a walk that must see them all: `owners` picks the first one met
    in its own order, and `holders` lets a walk made elsewhere (another process) pick the
    same one afterwards."""
    wanted = {f"socket:[{inode}]": inode for inode in inodes}
    found: dict[int, dict[int, str]] = {}
    for link, pid, fd in _holding(wanted, among):
        found.setdefault(wanted[link], {}).setdefault(pid, fd)
    return found


def _holding(
    wanted: "dict[str, int]", among: "Iterable[int | str]"
) -> "Iterator[tuple[str, int, str]]":
    """(link, pid, fd) for each descriptor of the processes `among` that is one of `wanted`
    (`socket:[inode]` -> inode), walking their fd folders in turn; the walk ends when
    `wanted` is empty (a caller may take from it meanwhile)."""
    for pid in among:
        if not wanted:
            return
        folder = f"/proc/{pid}/fd"
        try:
            fds = posix.listdir(folder)
        except OSError:
            continue  # gone, or not ours to read
        for fd in fds:
            try:
                link = posix.readlink(f"{folder}/{fd}")
            except PermissionError:
                break  # its descriptors can be listed, not read: none of them will be
            except OSError:
                continue  # closed meanwhile
            if link in wanted:
                yield link, int(pid), fd
                if not wanted:
                    return


# -- remembered owners, kept between processes ----------------------------------------------
# A CLI run is a new process: without what earlier runs learnt it would walk the fd folders
# of every process whenever one listener's owner cannot be seen (another user's, another pid
# namespace's). The file is only a hint: every owner in it is proven again with one readlink
# before use, and a socket in it that nobody could be found for is looked for again among the
# processes started since (see scan.py). A reboot (another boot id) discards it.

OWNERS_FILE = "socket-owners"
_OWNERS_MAGIC = "corral-socket-owners/1"
MAX_OWNERS = 4096  # entries a file may hold; a longer one is not ours and is ignored
_MAX_OWNERS_BYTES = 64 * MAX_OWNERS


Owner = tuple[int, str]  # pid and fd number of a process holding the socket


def read_owners(path: str, boot_id: str) -> "dict[int, Owner | Unseen]":
    """The remembered owners in `path`; nothing when the file is missing, of another boot,
    too long or malformed anywhere (it is rewritten after the next walk)."""
    try:
        fd = posix.open(path, posix.O_RDONLY | posix.O_NOFOLLOW)
    except OSError:
        return {}
    try:
        raw = posix.read(fd, _MAX_OWNERS_BYTES + 1)
    except OSError:
        return {}
    finally:
        posix.close(fd)
    lines = raw.decode("ascii", "replace").split("\n")
    if len(raw) > _MAX_OWNERS_BYTES or lines[0] != f"{_OWNERS_MAGIC} {boot_id}":
        return {}
    found: dict[int, Owner | Unseen] = {}
    try:
        for line in lines[1:]:
            if not line:
                continue
            inode, pid, *rest = line.split(" ")
            if pid == "-":
                full_at, until = rest
                found[int(inode)] = Unseen(float(full_at), float(until))
            elif len(rest) == 1 and pid.isdigit() and rest[0].isdigit():
                found[int(inode)] = (int(pid), rest[0])
            else:
                return {}
    except ValueError:
        return {}
    return found if len(found) <= MAX_OWNERS else {}


def write_owners(path: str, boot_id: str, owners: "Mapping[int, Owner | Unseen]") -> None:
    """Replace `path` (mode 0600, through a temporary file and a rename) with `owners` (the
    first MAX_OWNERS of them). Best effort: a file that cannot be written is left as it was."""
    lines = [f"{_OWNERS_MAGIC} {boot_id}"]
    for inode, owner in list(owners.items())[:MAX_OWNERS]:
        if isinstance(owner, Unseen):
            lines.append(f"{inode} - {owner.full_at!r} {owner.until!r}")
        else:
            lines.append(f"{inode} {owner[0]} {owner[1]}")
    # A name of its own per write: two writers (the daemon's refresh and a terminate in
    # another thread, or two processes) sharing one would truncate each other's file before
    # its rename, and the file would be left cut short.
    temp = f"{path}.{posix.getpid()}-{posix.urandom(6).hex()}.tmp"
    try:
        flags = posix.O_WRONLY | posix.O_CREAT | posix.O_EXCL | posix.O_NOFOLLOW
        fd = posix.open(temp, flags, 0o600)
        try:
            posix.fchmod(fd, 0o600)
            posix.write(fd, ("\n".join(lines) + "\n").encode("ascii"))
        finally:
            posix.close(fd)
        posix.rename(temp, path)
    except OSError:
        try:
            posix.unlink(temp)
        except OSError:
            pass


def holds(pid: int, fd: str, inode: int) -> bool:
    """Whether `pid`'s descriptor `fd` is still the socket `inode` (one readlink)."""
    try:
        return posix.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]"
    except OSError:
        return False


def holder(port: int) -> "Listener | None":
    """The process listening on `port` (TCP or UDP, IPv4 or IPv6), if any, with its argv."""
    if not _LINUX:
        return _psutil_holder(port)
    sockets = listening(port)
    if not sockets:
        return None
    found = owners(sockets, pids())
    inode = next(iter(found)) if found else next(iter(sockets))
    pid = found[inode][0] if found else None
    sock = sockets[inode]
    argv: tuple[str, ...] = ()
    if pid is not None:
        from corral.lowlevel import procfs

        argv = tuple(procfs.cmdline(pid) or ())
    return Listener(port, sock.proto, sock.family, sock.address(), pid, argv)


def _psutil_holder(port: int) -> "Listener | None":
    import psutil

    try:
        conns = psutil.net_connections(kind="inet")
    except psutil.AccessDenied:
        return None
    for conn in conns:
        if not conn.laddr or conn.laddr.port != port:
            continue
        tcp = conn.type == 1  # SOCK_STREAM: only a TCP socket in LISTEN listens
        if (tcp and conn.status != psutil.CONN_LISTEN) or (not tcp and conn.raddr):
            continue
        argv: tuple[str, ...] = ()
        if conn.pid:
            try:
                argv = tuple(psutil.Process(conn.pid).cmdline())
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                argv = ()
        family = "ipv6" if conn.family == 10 or ":" in conn.laddr.ip else "ipv4"
        proto = "tcp" if tcp else "udp"
        return Listener(port, proto, family, conn.laddr.ip, conn.pid, argv)
    return None


class LazyHolders:
    """A mapping port -> listener that looks a port up only when asked, once."""

    def __init__(self) -> None:
        self._seen: dict[int, Listener | None] = {}

    def _get(self, port: int) -> "Listener | None":
        if port not in self._seen:
            self._seen[port] = holder(port)
        return self._seen[port]

    def __getitem__(self, port: int) -> "Listener":
        found = self._get(port)
        if found is None:
            raise KeyError(port)
        return found

    def __contains__(self, port: object) -> bool:
        return isinstance(port, int) and self._get(port) is not None

    def __iter__(self) -> "Iterator[int]":
        return iter([p for p, h in self._seen.items() if h is not None])

    def __len__(self) -> int:
        return sum(1 for h in self._seen.values() if h is not None)
