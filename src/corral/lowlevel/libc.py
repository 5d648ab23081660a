"""The C library's functions the floor needs (prctl, fallocate, inotify, malloc_trim),
called through the bare `_ctypes` module: not the `ctypes` package, a sixth of its start-up
time and half of its memory (no struct, no types, no Python-level wrappers)."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_TYPES: dict[str, Any] = {}


def _types() -> dict[str, Any]:
    if _TYPES:
        return _TYPES
    import _ctypes

    c: Any = _ctypes  # the stubs type these for the ctypes package's wrappers only

    class CInt(c._SimpleCData):  # type: ignore[misc]
        _type_ = "i"

    class CInt64(c._SimpleCData):  # type: ignore[misc]
        _type_ = "q"

    class Function(c.CFuncPtr):  # type: ignore[misc]
        _flags_ = c.FUNCFLAG_CDECL | c.FUNCFLAG_USE_ERRNO
        _restype_ = CInt

    class Libc:
        _handle = c.dlopen(None, getattr(os, "RTLD_LOCAL", 0))

    _TYPES.update(int64=CInt64, function=Function, libc=Libc, module=_ctypes)
    return _TYPES


def int64(value: int) -> Any:
    """`value` passed as a 64-bit C integer (an off_t), not as an int."""
    return _types()["int64"](value)


def call(name: str, *args: Any) -> tuple[int, int]:
    """Call C library function `name` (ints, bytes as char *, `int64(...)` values): its int
    result and errno after it. Raises ImportError, AttributeError or OSError where there is
    no such library or function."""
    types = _types()
    result = types["function"]((name, types["libc"]))(*args)
    return int(result), int(types["module"].get_errno())
