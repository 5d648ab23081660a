"""The sockets' owners a snapshot has learnt: which process (pid, fd) holds each listening
socket, kept in memory and in a file in corral's home so that the next snapshot, or the next
process (the CLI), proves each with one readlink instead of walking every process's
descriptors. One walk at a time owns this memory (a lock): the daemon lists and stops in two
threads at once.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Collection
from typing import Protocol

from corral import paths
from corral.lowlevel import sockets as _net
from corral.lowlevel.procfs import boot_id

_HZ = os.sysconf("SC_CLK_TCK")
_BOOT_ID: str | None = None


class Started(Protocol):
    """What the walk needs of a process: its pid and its start (seconds since boot)."""

    @property
    def pid(self) -> int: ...

    @property
    def start(self) -> float: ...


def _boot_id() -> str:
    global _BOOT_ID
    if _BOOT_ID is None:
        _BOOT_ID = boot_id()
    return _BOOT_ID


# inode -> the owner (pid, fd) seen before, or when a walk found none (listeners.Unseen). Only
# the sockets of the latest snapshot are kept, in memory and in corral's home (so a new
# process, the CLI, starts where the previous one stopped). A remembered owner costs one
# readlink, which proves it; anything unproven is looked for again.
_OWNERS: dict[int, _net.Owner | _net.Unseen] | None = None  # None: the file is not read yet
_SAVED: dict[int, _net.Owner | _net.Unseen] = {}  # what the file holds, as read or written
# A socket nobody could be found for is looked for among the processes started since the last
# walk (one that existed then did not hold it), and among every process this often: an old
# process gains a socket only when one is passed to it (SCM_RIGHTS) or it becomes readable
# (setuid). Until then such a listener is shown without an owner, which no surface may stop.
_FULL_WALK_EVERY = 600.0
_NEVER = -float("inf")  # an Unseen's full_at when no walk over every process looked for it


_SAVED_AT = -float("inf")  # when the file was last written (time.monotonic)
# The daemon lists (its refresh) and stops (a terminate takes a snapshot) in two threads at
# once: one walk at a time reads and replaces the memory above and writes the file.
_LOCK = threading.Lock()


def _shape(owners: dict[int, _net.Owner | _net.Unseen]) -> dict[int, object]:
    """`owners` without how far each unseen socket was looked for among new processes."""
    return {i: o.full_at if isinstance(o, _net.Unseen) else o for i, o in owners.items()}


def _owners_file() -> str:
    return os.path.join(paths.home_dir(), _net.OWNERS_FILE)


def forget_owners(*, persisted: bool = False) -> None:
    """Forget the sockets' owners learnt in this process: the next snapshot starts from the
    file, as a new process does (the benchmark's cold snapshot); with `persisted`, from
    nothing, as the first run ever does."""
    global _OWNERS, _SAVED
    with _LOCK:
        _OWNERS, _SAVED = None, {}
        if persisted:
            try:
                os.unlink(_owners_file())
            except OSError:
                pass


def remembered_owners(*, saved: bool = False) -> dict[int, _net.Owner | _net.Unseen]:
    """A copy of the sockets' owners this process knows (`saved`: as it last wrote them)."""
    with _LOCK:
        return dict(_SAVED if saved else (_OWNERS or {}))


def _remembered() -> dict[int, _net.Owner | _net.Unseen]:
    global _OWNERS, _SAVED
    if _OWNERS is None:
        _OWNERS = _net.read_owners(_owners_file(), _boot_id())
        _SAVED = dict(_OWNERS)
    return _OWNERS


class _OwnerWalk:
    """The listening sockets (read once) and their owners. An owner seen before is proven with
    one readlink; the others are looked for in the fd folders of the processes `result` is
    given, youngest first, and the walk stops once every socket has its owner. (A thread for
    the first run ever's walk while the table is read was measured slower, on an idle core
    pair too: every system call of both loops hands the GIL over, ~2000 context switches and
    20-40 ms more CPU per snapshot; branch h-walk-thread.)"""

    def __init__(self, partial: bool = False, sockets: dict[int, _net.Socket] | None = None):
        self.sockets = _net.listening() if sockets is None else sockets
        remembered = _remembered()
        self.now = time.monotonic()
        self.known: dict[int, _net.Owner] = {}
        self.unseen: dict[int, _net.Unseen] = {}  # looked for among new processes only
        self.full: list[int] = []  # looked for among every process
        for inode in self.sockets:
            hit = remembered.get(inode)
            # Not `isinstance(hit, tuple)`: an Unseen is a (named) tuple too.
            if (
                hit is not None
                and not isinstance(hit, _net.Unseen)
                and _net.holds(hit[0], hit[1], inode)
            ):
                self.known[inode] = hit
            elif isinstance(hit, _net.Unseen) and (
                0 <= self.now - hit.full_at < _FULL_WALK_EVERY
                or (partial and hit.full_at == _NEVER)  # looked for among those shown already
            ):
                self.unseen[inode] = hit
            else:
                self.full.append(inode)

    def result(
        self,
        procs: Collection[Started],
        listed_at: float,
        new: Collection[Started] | None,
        within: Collection[int] | None,
        ahead: Ahead | None = None,
    ) -> list[tuple[_net.Socket, int | None]]:
        """Each listening socket with its owner's pid (None: not visible), `procs` being every
        process as listed from /proc at `listed_at` (CLOCK_BOOTTIME, the clock of starts).
        With `within`, a socket not found among the new processes is looked for among those
        pids only, and the file is left alone (see `listening`). With `ahead`, the walk over
        every process another process made meanwhile stands for this one's."""
        global _OWNERS, _SAVED, _SAVED_AT
        found: dict[int, _net.Owner] = {}
        # every process started before this was listed (a start is truncated to a tick)
        hz = _HZ
        newest = (int(listed_at * hz) - 1) / hz
        if self.unseen or self.full:
            # the processes started since the last walk, youngest first: corral's jobs, not
            # the machine's old daemons, are the likely owners of a new socket
            cutoff = min((u.until for u in self.unseen.values()), default=float("inf"))
            held = None
            if ahead is not None and not self.unseen and within is None:
                held = ahead.holders(self.full)
            if held is not None:  # the whole walk is made: the owner it would have met first
                older = sorted(procs, key=lambda p: -p.start)
                found = _first_held(held, _both_ends([p.pid for p in older]))
            else:
                maybe = procs if new is None else new
                young = sorted((p for p in maybe if p.start >= cutoff), key=lambda p: -p.start)
                found = _net.owners([*self.unseen, *self.full], [p.pid for p in young])
                rest = [inode for inode in self.full if inode not in found]
                if rest and within is not None:
                    found |= _net.owners(rest, within)
                elif rest:
                    older = sorted((p for p in procs if p.start < cutoff), key=lambda p: -p.start)
                    found |= _net.owners(rest, _both_ends([p.pid for p in older]))
        cache: dict[int, _net.Owner | _net.Unseen] = {}
        listed: list[tuple[_net.Socket, int | None]] = []
        for inode, sock in self.sockets.items():
            owner = self.known.get(inode) or found.get(inode)
            if owner is None:
                before = self.unseen.get(inode)
                walked = self.now if within is None else _NEVER  # never walked everywhere
                cache[inode] = _net.Unseen(before.full_at if before else walked, newest)
            else:
                cache[inode] = owner
            listed.append((sock, owner[0] if owner else None))
        _OWNERS = cache
        if within is not None:
            return listed  # partial knowledge: the next whole walk writes the file
        if _shape(cache) != _shape(_SAVED) or (cache != _SAVED and self.now - _SAVED_AT > 60):
            # the daemon lists four times a second while a tool call runs: only a changed
            # owner, or a minute's worth of new processes walked, is worth a file
            _net.write_owners(_owners_file(), _boot_id(), cache)
            _SAVED, _SAVED_AT = cache, self.now
        return listed


def _both_ends(pids: list[int]) -> list[int]:
    """`pids` from both ends in turn (first, last, second, second last...). A walk over every
    process looks for sockets of young jobs and of the machine's oldest daemons alike (pid 1
    often holds one): from the young end only, an old daemon's socket costs every process's
    descriptors on the first run ever."""
    turns: list[int] = []
    first, last = 0, len(pids) - 1
    while first < last:
        turns += (pids[first], pids[last])
        first, last = first + 1, last - 1
    if first == last:
        turns.append(pids[first])
    return turns


def _first_held(held: dict[int, dict[int, str]], order: list[int]) -> dict[int, _net.Owner]:
    """For each socket, the holder `order` meets first (the one a walk in that order finds),
    among the processes of `order` only (one started since was not listed)."""
    rank = {pid: at for at, pid in enumerate(order)}
    found: dict[int, _net.Owner] = {}
    for inode, pids in held.items():
        listed = [pid for pid in pids if pid in rank]
        if listed:
            first = min(listed, key=rank.__getitem__)
            found[inode] = (first, pids[first])
    return found


# The first run ever (nothing remembered, on this boot) looks for every socket's owner among
# every process, and a socket whose owner cannot be read (pid 1's, another user's) costs the
# whole walk: about as long as reading the process table itself. A child process makes that
# walk while this one reads the table, on another core where there is one. Only then: a walk
# with owners remembered stops early, young processes first, and costs less than a fork.
_AHEAD_FROM = 200  # processes; fewer, and the walk costs less than the fork


class Ahead:
    """A walk over every process's descriptors for the listening `sockets`, made by the
    child process `child`, which writes each holder to `reader` and then `end`."""

    def __init__(self, sockets: dict[int, _net.Socket], child: int, reader: int) -> None:
        self.sockets = sockets
        self._child, self._reader = child, reader
        self._held: dict[int, dict[int, str]] | None = None
        self._done = False

    def holders(self, inodes: Collection[int]) -> dict[int, dict[int, str]] | None:
        """inode -> {pid: fd} of every holder of each of `inodes` the child found; None when
        it failed or was not given all of `inodes` (look for them here instead)."""
        self.close()
        if self._held is None or not set(inodes) <= self.sockets.keys():
            return None
        return {inode: self._held.get(inode, {}) for inode in inodes}

    def close(self) -> None:
        """Wait for the child (once) and read what it found."""
        if self._done:
            return
        self._done = True
        chunks = []
        try:
            while chunk := os.read(self._reader, 65536):
                chunks.append(chunk)
        except OSError:
            chunks = []
        finally:
            os.close(self._reader)
            try:
                os.waitpid(self._child, 0)
            except ChildProcessError:
                pass  # reaped by someone else's handler: what it wrote is read already
        lines = b"".join(chunks).decode("ascii", "replace").split("\n")
        if lines[-2:] != ["end", ""]:
            return  # it did not finish: this process walks instead
        held: dict[int, dict[int, str]] = {}
        for line in lines[:-2]:
            inode, pid, fd = line.split(" ")
            held.setdefault(int(inode), {})[int(pid)] = fd
        self._held = held


def walk_ahead(entries: Collection[str]) -> Ahead | None:
    """Start the walk over every process for the listening sockets in a child process, when
    this snapshot will need it (nothing remembered, `entries` being /proc's listing) and a
    fork is safe (no thread but this one: a fork copies only the calling thread). None:
    the walk is made afterwards, here, as usual."""
    pids = [entry for entry in entries if entry.isdigit()]
    if len(pids) < _AHEAD_FROM or not hasattr(os, "fork"):
        return None
    threads = sys.modules.get("threading")
    if threads is not None and threads.active_count() > 1:
        return None
    with _LOCK:
        if _remembered():
            return None
    sockets = _net.listening()
    if not sockets:
        return None
    reader, writer = os.pipe()
    try:
        child = os.fork()
    except OSError:
        os.close(reader)
        os.close(writer)
        return None
    if child == 0:  # the child
        code = 1
        try:
            os.close(reader)
            found = _net.holders(sockets, pids)
            lines = [f"{i} {pid} {fd}\n" for i, held in found.items() for pid, fd in held.items()]
            data = "".join([*lines, "end\n"]).encode("ascii")
            while data:
                data = data[os.write(writer, data) :]
            code = 0
        finally:
            os._exit(code)  # nothing of the parent's runs here: no exit handler, no flush
    os.close(writer)
    return Ahead(sockets, child, reader)


def listening(
    procs: Collection[Started],
    listed_at: float,
    new: Collection[Started] | None = None,
    within: Collection[int] | None = None,
    ahead: Ahead | None = None,
) -> list[tuple[_net.Socket, int | None]]:
    """Every listening socket with its owner's pid (None: not visible), `procs` being every
    process as listed from /proc at `listed_at` (CLOCK_BOOTTIME), `new` those among them no
    earlier walk saw (None: maybe any). With `within` (the daemon's refresh: the processes it
    shows), a socket no new process holds is looked for among those pids only, not every
    process's descriptors: on a machine where servers come and go, that walk would run at
    every refresh. Such a socket stays unowned until the next whole walk."""
    sockets = None if ahead is None else ahead.sockets
    with _LOCK:
        walk = _OwnerWalk(partial=within is not None, sockets=sockets)
        return walk.result(procs, listed_at, new, within, ahead)
