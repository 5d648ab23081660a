"""corral's errors. Each message says what to do next; exit codes are a contract.

    Exception
    └── CorralError            an expected failure, shown as its message; exit 1
        ├── UsageError         the command's words are off; exit 2
        │   └── AmbiguousJob   an id prefix matches several jobs
        ├── JobNotFound        no job has that id or name
        ├── StorageError       (also an OSError) the database or ledger folder is unusable:
        │                      what failed, where, what to do
        ├── NameTaken          (service.names) a running job of the project has that name
        ├── NoLog              (service.logs) the job's output went to a pipe or terminal
        ├── CannotRestart      (service.restart) the exact line is not known any more
        ├── InstallError       (surfaces.claude.install) settings cannot be changed
        └── TmuxError          (adapters.tmux) tmux failed; TmuxUnavailable: none usable
    PermissionError
    └── UnsafeFolder           (lowlevel.locations) an existing CORRAL_HOME is not private
    ValueError
    └── IllegalTransition      (lowlevel.record) a job state moved where the table forbids:
                               a bug in whoever reported it, never shown as a refusal

Surfaces turn a CorralError into their answer (the CLI: `corral CMD: message` and its exit
code; HTTP: an error envelope). The Claude Code hook fails open instead: any error of its own
means exit 0, no output, one log line. OS errors become these (or a listing's warnings) at
the one chokepoint of each facility.
"""

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
