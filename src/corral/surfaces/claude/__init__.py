"""corral's Claude Code surface: the hook, the status line, the shell prefix, the installer.

What the hook and the status line share lives here, in the package both load anyway (one
module fewer on each of their start-ups): `parse`, the strict reader of the JSON Claude Code
sends on their stdin, and `exit_now`, how they and the other agents' hooks end.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn


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


def exit_now(code: int) -> "NoReturn":
    """End a short-lived program (a hook, the status line) with `code` as soon as its output
    is written: stdout and stderr are flushed, then the process ends without the
    interpreter's teardown (freeing every module and object one by one, about 2 ms of the
    ~10 ms a bare `python3 -I -S` takes; the agent waits for the exit on every call).

    The teardown runs (a normal exit) when something in the process needs it: an `atexit`
    callback (logging, tempfile's finalizers and the like register one) or a thread besides
    this one. corral's own files are written with posix calls or closed by `with` blocks, so
    no buffer of ours is left behind. A flush that fails (the reader went away) ends the
    process at once with `code` once the other stream is flushed: what is left cannot be
    delivered, and the teardown would only print the same error again."""
    import posix
    import sys

    failed = False
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # the process started with that descriptor closed
            continue
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe, or a stream closed already
            failed = True
    if failed:
        posix._exit(code)
    if _teardown_needed():
        sys.exit(code)
    posix._exit(code)


def _teardown_needed() -> bool:
    import atexit
    import sys

    pending = getattr(atexit, "_ncallbacks", None)
    if pending is None or pending():
        return True
    threading = sys.modules.get("threading")
    return threading is not None and threading.active_count() > 1
