"""Listening sockets and the processes that hold them, read from /proc with the standard library
only. The one port-owner lookup: the hook's path asks about one port (`holder`, `LazyHolders`)
without importing psutil, and the scanner's snapshot asks about every listening socket
(`listening`, `owners`). Elsewhere (no /proc) psutil answers.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import NamedTuple

_LINUX = sys.platform.startswith("linux")
_TCP_LISTEN = "0A"
_TABLES = (
    ("tcp", "tcp", False),
    ("tcp6", "tcp", True),
    ("udp", "udp", False),
    ("udp6", "udp", True),
)


class Listener(NamedTuple):
    port: int
    pid: int | None  # None: the socket's owner is not visible to us
    argv: tuple[str, ...]


class Socket(NamedTuple):
    """One listening socket: TCP in LISTEN, or UDP bound without a peer."""

    inode: int
    port: int
    proto: str  # "tcp" or "udp"
    v6: bool
    raw_address: bytes  # in network order, 4 or 16 bytes

    @property
    def family(self) -> str:
        return "ipv6" if self.v6 else "ipv4"

    def address(self) -> str:
        import socket

        family = socket.AF_INET6 if self.v6 else socket.AF_INET
        return socket.inet_ntop(family, self.raw_address)


def listening(port: int | None = None) -> dict[int, Socket]:
    """Listening sockets by inode (only those on `port` when given). The kernel's socket
    diagnostics answer for listening sockets only; /proc/net/tcp, the fallback, walks every
    bucket of the connection table and costs milliseconds even on an idle machine."""
    try:
        found = _diag_listening()
    except OSError:
        found = _proc_listening()
    return found if port is None else {i: s for i, s in found.items() if s.port == port}


# NETLINK_SOCK_DIAG: one dump request per (family, protocol) with a state filter. Layouts from
# <linux/inet_diag.h>: nlmsghdr (16 bytes), inet_diag_req_v2 (56), inet_diag_msg (72).
_SOCK_DIAG_BY_FAMILY, _NLMSG_ERROR, _NLMSG_DONE = 20, 2, 3
_NLM_F_REQUEST_DUMP = 0x1 | 0x300
_TCP_LISTEN_BIT, _UDP_UNCONNECTED_BIT = 1 << 10, 1 << 7  # TCP_LISTEN, TCP_CLOSE
_DIAG_QUERIES = (
    (2, 6, _TCP_LISTEN_BIT, "tcp", False),
    (10, 6, _TCP_LISTEN_BIT, "tcp", True),
    (2, 17, _UDP_UNCONNECTED_BIT, "udp", False),
    (10, 17, _UDP_UNCONNECTED_BIT, "udp", True),
)


def _diag_listening() -> dict[int, Socket]:
    import socket
    import struct

    found: dict[int, Socket] = {}
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 4) as nl:  # NETLINK_SOCK_DIAG
        nl.settimeout(2.0)
        for seq, (family, protocol, states, proto, v6) in enumerate(_DIAG_QUERIES, 1):
            request = struct.pack("=BBBBI48x", family, protocol, 0, 0, states)
            header = struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY,
                                 _NLM_F_REQUEST_DUMP, seq, 0)  # fmt: skip
            nl.send(header + request)
            done = False
            while not done:
                data = nl.recv(65536)
                at = 0
                while at + 16 <= len(data):
                    length, kind, _, got_seq, _ = struct.unpack_from("=IHHII", data, at)
                    if length < 16:
                        raise OSError("sock_diag: malformed answer")
                    if kind == _NLMSG_ERROR:
                        raise OSError("sock_diag: request refused")
                    if kind == _NLMSG_DONE:
                        done = got_seq == seq or done
                    elif kind == _SOCK_DIAG_BY_FAMILY and length >= 16 + 72 and got_seq == seq:
                        body = at + 16
                        sport, dport = struct.unpack_from(">HH", data, body + 4)
                        inode = struct.unpack_from("=I", data, body + 68)[0]
                        raw = data[body + 8 : body + (24 if v6 else 12)]
                        if sport and not dport:  # bound, and (UDP) without a peer
                            found[inode] = Socket(inode, sport, proto, v6, raw)
                    at += (length + 3) & ~3
    return found


def _proc_listening() -> dict[int, Socket]:
    found: dict[int, Socket] = {}
    for table, proto, v6 in _TABLES:
        try:
            with open(f"/proc/net/{table}", "rb") as f:
                lines = f.read().decode("ascii", "replace").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10:
                continue
            if proto == "tcp" and fields[3] != _TCP_LISTEN:
                continue
            if proto == "udp" and not fields[2].endswith(":0000"):  # a connected UDP socket
                continue
            address, _, hex_port = fields[1].rpartition(":")
            try:
                local, inode, raw = int(hex_port, 16), int(fields[9]), bytes.fromhex(address)
            except ValueError:
                continue
            # /proc/net writes each 32-bit word of the address in host (little-endian) order
            raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            found[inode] = Socket(inode, local, proto, v6, raw)
    return found


def pids() -> list[str]:
    """Every pid folder of /proc, newest pid first: listeners are mostly young processes."""
    return sorted((e for e in os.listdir("/proc") if e.isdigit()), key=int, reverse=True)


def owners(inodes: Collection[int], among: Iterable[int | str]) -> dict[int, tuple[int, str]]:
    """inode -> (pid, fd) of a process among `among` holding that socket. The walk over the
    processes' fd folders stops as soon as every inode has an owner."""
    wanted = {f"socket:[{inode}]": inode for inode in inodes}
    found: dict[int, tuple[int, str]] = {}
    for pid in among:
        if not wanted:
            break
        folder = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(folder)
        except OSError:
            continue  # gone, or not ours to read
        for fd in fds:
            try:
                inode = wanted.pop(os.readlink(f"{folder}/{fd}"), None)
            except OSError:
                continue
            if inode is not None:
                found[inode] = (int(pid), fd)
    return found


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


class Unseen(NamedTuple):
    """A listening socket no walk found an owner for. `full_at`: the time.monotonic() of the
    last walk over every process; `until`: the start (seconds since boot) of the youngest
    process walked since then."""

    full_at: float
    until: float


Owner = tuple[int, str]  # pid and fd number of a process holding the socket


def read_owners(path: str, boot_id: str) -> dict[int, Owner | Unseen]:
    """The remembered owners in `path`; nothing when the file is missing, of another boot,
    too long or malformed anywhere (it is rewritten after the next walk)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return {}
    try:
        raw = os.read(fd, _MAX_OWNERS_BYTES + 1)
    except OSError:
        return {}
    finally:
        os.close(fd)
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


def write_owners(path: str, boot_id: str, owners: Mapping[int, Owner | Unseen]) -> None:
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
    temp = f"{path}.{os.getpid()}-{os.urandom(6).hex()}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, ("\n".join(lines) + "\n").encode("ascii"))
        finally:
            os.close(fd)
        os.replace(temp, path)
    except OSError:
        try:
            os.unlink(temp)
        except OSError:
            pass


def holds(pid: int, fd: str, inode: int) -> bool:
    """Whether `pid`'s descriptor `fd` is still the socket `inode` (one readlink)."""
    try:
        return os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]"
    except OSError:
        return False


def holder(port: int) -> Listener | None:
    """The process listening on `port` (TCP or UDP, IPv4 or IPv6), if any."""
    if not _LINUX:
        return _psutil_holder(port)
    sockets = listening(port)
    if not sockets:
        return None
    found = owners(sockets, pids())
    pid = next(iter(found.values()))[0] if found else None
    argv: tuple[str, ...] = ()
    if pid is not None:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = tuple(p.decode("utf-8", "replace") for p in f.read().split(b"\0") if p)
        except OSError:
            argv = ()
    return Listener(port, pid, argv)


def _psutil_holder(port: int) -> Listener | None:
    import psutil

    try:
        conns = psutil.net_connections(kind="inet")
    except psutil.AccessDenied:
        return None
    for conn in conns:
        if (
            conn.laddr
            and conn.laddr.port == port
            and (conn.status == psutil.CONN_LISTEN or not conn.raddr)
        ):
            argv: tuple[str, ...] = ()
            if conn.pid:
                try:
                    argv = tuple(psutil.Process(conn.pid).cmdline())
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    argv = ()
            return Listener(port, conn.pid, argv)
    return None


class LazyHolders(Mapping[int, Listener]):
    """A mapping port -> listener that looks a port up only when asked, once."""

    def __init__(self) -> None:
        self._seen: dict[int, Listener | None] = {}

    def _get(self, port: int) -> Listener | None:
        if port not in self._seen:
            self._seen[port] = holder(port)
        return self._seen[port]

    def __getitem__(self, port: int) -> Listener:
        found = self._get(port)
        if found is None:
            raise KeyError(port)
        return found

    def __contains__(self, port: object) -> bool:
        return isinstance(port, int) and self._get(port) is not None

    def __iter__(self) -> Iterator[int]:
        return iter([p for p, h in self._seen.items() if h is not None])

    def __len__(self) -> int:
        return sum(1 for h in self._seen.values() if h is not None)
