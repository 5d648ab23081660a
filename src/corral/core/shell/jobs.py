"""The jobs a readable line starts: each long runner with its folder, identity and port."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from corral.core.shell.decision import JobSpec
from corral.core.shell.folders import NoFolder, Placed, place, resolve
from corral.core.shell.identity import identity, line_identity
from corral.core.shell.launch import classify, starts_under_corral
from corral.core.shell.parse import Unreadable, read
from corral.core.shell.ports import env_port, flag_port, requested_port
from corral.lowlevel.named import NamedTuple
from corral.lowlevel.redact import display_command

__all__ = ["Found", "Job", "JobSpec", "find_jobs", "runner_job"]


class Job(NamedTuple):
    spec: JobSpec
    runner: bool  # a known long runner (else the whole background line)
    statement: int
    background: bool
    pipeline: int
    piped: bool

    def runs_with(self, later: Job) -> bool:
        """Whether `later` (further right in the line) starts while this one still runs."""
        if self.pipeline == later.pipeline:
            return self.piped
        return self.statement < later.statement and self.background


class Found(NamedTuple):
    runners: tuple[Job, ...]
    background_amps: tuple[int, ...]  # byte offsets of every `&` that ends a list
    trailing_amp: int | None  # the offset of the only `&`, when it ends the line
    commands: tuple[Placed, ...]
    cwd: str

    def line_job(self, inner: str) -> Job:
        """The job of a background line that starts no known long runner."""
        port = None
        for placed in self.commands:
            if port is None and placed.words:
                port = flag_port(placed.words[0], placed.words[1:], None)
            if port is None:
                port = env_port((*placed.exported, *_assigned(placed)))
        port = port or None  # 0: any free port, no particular one
        cwd = self.commands[-1].cwd if self.commands else self.cwd
        ident = line_identity([p.words for p in self.commands])
        spec = JobSpec(display_command(inner), ident, cwd, port)
        return Job(spec, False, 0, False, -1, False)

    def started_by_corral(self) -> bool:
        """Every command of the line is corral's own `run` (or `restart`), or only changes
        folder or exports: its jobs run under corral's supervisors already, and a second
        supervisor around the line would only supervise corral's CLI."""
        own = False
        for placed in self.commands:
            if starts_under_corral(placed.words):
                own = True
            elif placed.words and placed.words[0] not in _SETUP:
                return False
        return own


# Commands that only set the shell's state for what follows (folders.py reads them).
_SETUP = frozenset({"cd", "pushd", "popd", "builtin", "export"})


def _assigned(placed: Placed) -> tuple[tuple[str, str], ...]:
    return tuple(
        (name, value.value)
        for name, value in placed.command.assignments
        if value is not None and value.literal
    )


def runner_job(
    item: Placed,
    source: bytes,
    home: str,
    extra_runners: Sequence[str],
    package_scripts: Mapping[str, str],
) -> Job | None:
    """The job of one placed command when it starts a long runner; raises NoFolder when
    its folder cannot be known."""
    launch, runner = classify(item.words, extra_runners, package_scripts)
    if runner is None:
        return None
    folder = item.cwd
    for target in (*launch.chdirs, *runner.chdirs):
        folder = resolve(folder, home, target)
    assigned = (*item.exported, *_assigned(item), *launch.env)
    args = runner.args if runner.script else launch.words[1:]
    port = requested_port(launch.words[0], args, runner.tool, assigned)
    text = source[item.command.start : item.command.end].decode("utf-8")
    spec = JobSpec(display_command(text), identity(runner.key), folder, port)
    return Job(spec, True, item.statement, item.background, item.pipeline, item.piped)


def find_jobs(
    line: str,
    cwd: str,
    home: str,
    extra_runners: Sequence[str],
    package_scripts: Mapping[str, str],
) -> Found | Unreadable:
    script = read(line)
    if isinstance(script, Unreadable):
        return script
    placed = place(script, cwd, home)
    if isinstance(placed, Unreadable):
        return placed
    source = line.encode("utf-8")
    runners: list[Job] = []
    try:
        for item in placed:
            job = runner_job(item, source, home, extra_runners, package_scripts)
            if job is not None:
                runners.append(job)
    except NoFolder as exc:
        return Unreadable(str(exc))
    amps = tuple(s.amp for s in script.statements if s.amp is not None)
    last = script.statements[-1] if script.statements else None
    trailing = None
    if len(amps) == 1 and last is not None and last.amp is not None:
        trailing = None if source[last.amp + 1 :].strip() else last.amp
    return Found(tuple(runners), amps, trailing, placed, cwd)
