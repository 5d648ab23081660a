"""Who listens on a port, read from /proc with the standard library only.

This is for the hook's path, where psutil is too heavy to import: a port is looked up only
when a line asks for it. Elsewhere (no /proc) psutil answers.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

_LINUX = sys.platform.startswith("linux")
_TCP_LISTEN = "0A"


@dataclass(frozen=True)
class Listener:
    port: int
    pid: int | None  # None: the socket's owner is not visible to us
    argv: tuple[str, ...]


def _listening_inodes(port: int) -> set[int]:
    inodes: set[int] = set()
    for table, udp in (("tcp", False), ("tcp6", False), ("udp", True), ("udp6", True)):
        try:
            with open(f"/proc/net/{table}") as f:
                next(f, None)
                for line in f:
                    fields = line.split()
                    if len(fields) < 10:
                        continue
                    local_port = int(fields[1].rsplit(":", 1)[1], 16)
                    if local_port != port:
                        continue
                    remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                    if (not udp and fields[3] == _TCP_LISTEN) or (udp and remote_port == 0):
                        inodes.add(int(fields[9]))
        except (OSError, ValueError, IndexError):
            continue
    return inodes


def _owner(inodes: set[int]) -> int | None:
    targets = {f"socket:[{inode}]" for inode in inodes}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            for fd in os.listdir(f"/proc/{entry}/fd"):
                try:
                    if os.readlink(f"/proc/{entry}/fd/{fd}") in targets:
                        return int(entry)
                except OSError:
                    continue
        except OSError:
            continue
    return None


def holder(port: int) -> Listener | None:
    """The process listening on `port` (TCP or UDP, IPv4 or IPv6), if any."""
    if not _LINUX:
        return _psutil_holder(port)
    inodes = _listening_inodes(port)
    if not inodes:
        return None
    pid = _owner(inodes)
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
