"""corral's Claude Code surface: the hook, the status line, the shell prefix, the installer.

What the hook and the status line share lives here, in the package both load anyway (one
module fewer on each of their start-ups): `parse`, the strict reader of the JSON Claude Code
sends on their stdin.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class _Context:
    """What the C JSON scanner asks of `json.JSONDecoder`."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo: dict[str, str] = {}  # noqa: RUF012 - read by the C scanner

    def parse_constant(self, name: str) -> float:
        raise ValueError(f"{name} is not JSON")


def parse(text: str) -> "Any":
    """One JSON value, strictly: `_json`'s scanner without importing `json` (and `re`)."""
    import _json

    scan = _json.make_scanner(_Context())  # type: ignore[arg-type]  # duck-typed context
    start = len(text) - len(text.lstrip(" \t\n\r"))
    try:
        value, end = scan(text, start)
    except StopIteration:
        raise ValueError("not JSON") from None
    if text[end:].strip(" \t\n\r"):
        raise ValueError("extra data after the JSON value")
    return value
