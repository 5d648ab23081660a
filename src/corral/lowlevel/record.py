"""The ledger's record format: one flat JSON object per job, written atomically by its
supervisor (and by readers that record the end of a job whose supervisor was killed)."""

from __future__ import annotations

import errno
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

LEDGER_VERSION = 1
DEFAULT_GRACE = 3.0
STATES_FINAL = ("exited", "stopped", "killed")


def _json_value(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if abs(value) < float("inf") else "null"  # NaN compares False
    out = ['"']
    for char in str(value):
        code = ord(char)
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def encode_record(record: dict[str, Any]) -> bytes:
    """JSON for a flat record (the json module costs milliseconds of start-up to import)."""
    body = ", ".join(f"{_json_value(k)}: {_json_value(v)}" for k, v in record.items())
    return ("{" + body + "}").encode("utf-8")


def write_record(ledger: str, record: dict[str, Any]) -> None:
    """Atomically replace <ledger>/<id>.json with `record` (temp file + rename, mode 0600)."""
    final = os.path.join(ledger, record["id"] + ".json")
    temp = os.path.join(ledger, f".{record['id']}.{os.getpid()}.tmp")
    data = encode_record(record)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        try:
            if os.write(fd, data) != len(data):
                raise OSError(errno.ENOSPC, "short write", temp)
        finally:
            os.close(fd)
        os.replace(temp, final)
    except OSError:
        try:  # a full disk must not keep the empty temp file as litter
            os.unlink(temp)
        except OSError:
            pass
        raise
