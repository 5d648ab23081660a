"""The machine's listening sockets, raw: the kernel's sock_diag netlink dump (only listening
sockets, filtered by the kernel), /proc/net as the fallback. Each is a plain tuple
`(inode, port, proto, v6, raw_address)`; sockets.py makes them its `Socket` records and
finds their owners.

Its own module, and small, because the status line loads it on every update to see
whether any listening socket opened or closed (sockets.py, with its records and owner walks,
is loaded only when the band is measured again). Standard library only: `sys`, with
`_socket` when reading (no `_struct`: a shared library of its own).
"""

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    # inode, port, proto ("tcp" or "udp"), IPv6, the address in network order (4 or 16 bytes)
    Raw = tuple[int, int, str, bool, bytes]

_TCP_LISTEN = "0A"
_TABLES = (
    ("tcp", "tcp", False),
    ("tcp6", "tcp", True),
    ("udp", "udp", False),
    ("udp6", "udp", True),
)


def listening() -> "dict[int, Raw]":
    """Listening sockets by inode. The kernel's socket diagnostics answer for listening
    sockets only; /proc/net/tcp, the fallback, walks every bucket of the connection table
    and costs milliseconds even on an idle machine."""
    try:
        return diag()
    except OSError:
        return proc()


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


def diag() -> "dict[int, Raw]":
    """The kernel's socket diagnostics (netlink): one dump per family and protocol, with
    the kernel filtering by state."""
    import _socket

    native = sys.byteorder

    def word(data: bytes, at: int, size: int = 4) -> int:
        return int.from_bytes(data[at : at + size], native)

    found: dict[int, Raw] = {}
    nl = _socket.socket(16, 2, 4)  # AF_NETLINK, SOCK_DGRAM, NETLINK_SOCK_DIAG
    try:
        # A receive timeout kept by the kernel (SO_RCVTIMEO: a struct timeval, two C longs):
        # the socket stays blocking, with no poll() before each send and receive as
        # settimeout() makes; a dump that never answers ends in an OSError (EAGAIN).
        width = 8 if sys.maxsize > 1 << 32 else 4
        nl.setsockopt(1, 20, (2).to_bytes(width, native) + bytes(width))
        for seq, (family, protocol, states, proto, v6) in enumerate(_DIAG_QUERIES, 1):
            # inet_diag_req_v2: family, protocol, ext, pad (bytes), states (u32), id (48)
            request = bytes((family, protocol, 0, 0)) + states.to_bytes(4, native) + bytes(48)
            header = b"".join((
                (16 + len(request)).to_bytes(4, native), _SOCK_DIAG_BY_FAMILY.to_bytes(2, native),
                _NLM_F_REQUEST_DUMP.to_bytes(2, native), seq.to_bytes(4, native), bytes(4),
            ))  # fmt: skip
            nl.send(header + request)
            done = False
            while not done:
                data = nl.recv(65536)
                if not data:
                    raise OSError("sock_diag: the dump ended without its last message")
                at = 0
                while at + 16 <= len(data):
                    length, kind, got_seq = (
                        word(data, at),
                        word(data, at + 4, 2),
                        word(data, at + 8),
                    )
                    if length < 16:
                        raise OSError("sock_diag: malformed answer")
                    if kind == _NLMSG_ERROR:
                        raise OSError("sock_diag: request refused")
                    if kind == _NLMSG_DONE:
                        done = got_seq == seq or done
                    elif kind == _SOCK_DIAG_BY_FAMILY and length >= 16 + 72 and got_seq == seq:
                        body = at + 16
                        sport = int.from_bytes(data[body + 4 : body + 6], "big")
                        dport = int.from_bytes(data[body + 6 : body + 8], "big")
                        inode = word(data, body + 68)
                        raw = data[body + 8 : body + (24 if v6 else 12)]
                        if sport and not dport:  # bound, and (UDP) without a peer
                            found[inode] = (inode, sport, proto, v6, raw)
                    at += (length + 3) & ~3
    finally:
        nl.close()
    return found


def proc() -> "dict[int, Raw]":
    """/proc/net/{tcp,tcp6,udp,udp6}: the fallback."""
    found: dict[int, Raw] = {}
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
            found[inode] = (inode, local, proto, v6, raw)
    return found
