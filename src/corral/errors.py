"""corral's errors. Each message says what to do next; exit codes are a contract."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURE = 1  # an expected failure: refused, not found, a stop that did not succeed
EXIT_USAGE = 2
EXIT_INTERRUPT = 130


class CorralError(Exception):
    """An expected failure, reported to the user as its message; exit 1."""

    exit_code = EXIT_FAILURE


class UsageError(CorralError):
    """The command's words are off; exit 2."""

    exit_code = EXIT_USAGE


class StorageError(CorralError, OSError):
    """corral's database or ledger folder cannot be used: what failed, where, what to do.

    Also an OSError, so that a caller which carries on without the store (a stop whose audit
    cannot be written) keeps doing so."""


class JobNotFound(CorralError):
    def __init__(self, ref: str) -> None:
        super().__init__(f"no job matches {ref!r}: run `corral ls --all` to see job ids")
        self.ref = ref


class AmbiguousJob(UsageError):
    def __init__(self, ref: str, matches: list[str]) -> None:
        shown = ", ".join(sorted(matches)[:5])
        super().__init__(f"{ref!r} matches several jobs ({shown}): give more characters of the id")
        self.ref = ref
