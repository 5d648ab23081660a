"""A job's identity for duplicate checks: a short digest of what makes two jobs the same.

The same package script is the same job whatever the package manager or extra flags
(`npm run dev` ≡ `yarn dev` ≡ `pnpm dev --host 0.0.0.0`); a tool is the same job when its
name and positional arguments match (ports and hosts aside). Only the digest is kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from corral.lowlevel.redact import command_digest

_VERSION = "corral-identity-1"
LENGTH = 16  # hex digits: 64 bits, plenty to tell one machine's jobs apart


def identity(key: str) -> str:
    return command_digest(f"{_VERSION}\0{key}")[:LENGTH]


def line_identity(words: Sequence[Sequence[str]]) -> str:
    """The identity of a background line that starts no known long runner."""
    return identity("line\0" + "\0;".join("\0".join(command) for command in words))
