"""The decision for one shell line: run it as written, wrap it in the supervisor, or refuse.

    decide("cd web && npm run dev > dev.log 2>&1 &", background=False, cwd=..., home=...)

Two steps: `read_line` (the line reader: what the line starts, how it is wrapped) and
`check.check` (that against the live jobs and held ports). The whole line goes to the
supervisor unchanged, never split; except that a long runner a foreground line sends to
the background mid-line (`npm run dev & sleep 2; curl …`) is rewritten in place, `CMD &`
running `<supervisor> -- 'CMD'` in the child the shell forks for it, every other byte kept
(inplace.py). A line corral cannot read with certainty runs as written and is neither
recorded nor refused. Pure, except that job tokens are drawn from os.urandom when none is
given.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from corral.core.shell import messages
from corral.core.shell.check import check
from corral.core.shell.decision import (
    Action,
    Decision,
    InPlace,
    Mode,
    Reading,
    quote_for_wrapper,
    reservations,
    same_dir,
    shell_words,
)
from corral.core.shell.jobs import Found, Job, JobSpec, find_jobs
from corral.core.shell.messages import LiveJob, PortHolder
from corral.core.shell.plain import may_start_runner, plain_reason
from corral.lowlevel.locations import supervisor_argv

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_same_dir = same_dir

__all__ = [
    "Action",
    "Decision",
    "InPlace",
    "JobSpec",
    "LiveJob",
    "Mode",
    "PortHolder",
    "Reading",
    "check",
    "decide",
    "explain_json",
    "quote_for_wrapper",
    "read_line",
    "reservations",
    "shell_words",
]

_EMPTY: Mapping[Any, Any] = MappingProxyType({})
# Reading a line takes time that grows with it (seconds a megabyte), and Claude Code gives a
# hook 60 s: a longer line runs as written at once (the hook checks the same limit first).
LINE_LIMIT = 64 * 1024  # characters
# An `&` that may send something to the background (not `&&`, `>&`, `<&`, `&>`, `|&`): only
# such a line is read for the in-place rewrite (a quoted one costs a reading, nothing else).
_LONE_AMP = re.compile(r"(?<![&><|])&(?![&>])")


def explain_json(decision: Decision) -> dict[str, Any]:
    """The `data` of `corral explain --json`: exactly these keys (a contract). A job's
    `rewritten` is its own in-place rewrite (the command with its `&` and what surrounds it
    when it keeps its text, else the supervisor's command line that replaces it); `note`
    says why a job runs as written."""
    rewritten = {w.job: w.statement or w.text for w in decision.in_place}
    notes = dict(decision.notes)
    return {
        "readable": decision.readable,
        "reason": decision.reason,
        "action": str(decision.action),
        "mode": None if decision.mode is None else str(decision.mode),
        "rewritten": decision.rewritten,
        "refusal": decision.refusal,
        "jobs": [
            {
                "display": j.display,
                "identity": j.identity,
                "cwd": j.cwd,
                "port": j.port,
                "rewritten": rewritten.get(index),
                "note": notes.get(index),
            }
            for index, j in enumerate(decision.jobs)
        ],
    }


def too_long(line: str) -> str:
    """Why a line over LINE_LIMIT is not read."""
    return f"the line is {len(line)} characters long; corral reads lines of up to {LINE_LIMIT}"


def _untouched(readable: bool, reason: str | None, jobs: tuple[JobSpec, ...] = ()) -> Decision:
    return Decision(readable, reason, Action.UNTOUCHED, None, None, None, jobs)


def decide(
    line: str,
    *,
    background: bool,
    cwd: str,
    home: str,
    live: Sequence[LiveJob] = (),
    held_ports: Mapping[int, PortHolder] = _EMPTY,
    wrapper: Sequence[str] = ("corral-run",),
    extra_runners: Sequence[str] = (),
    package_scripts: Mapping[str, str] = _EMPTY,
    token: str | None = None,
    detach_to: str | None = None,
    kept_text: bool = True,
) -> Decision:
    """What to do with one Bash line (`background`: the call's run_in_background): the line
    read (`read_line`), then checked against the live jobs and held ports (`check.check`)."""
    reading = read_line(
        line,
        background=background,
        cwd=cwd,
        home=home,
        wrapper=wrapper,
        extra_runners=extra_runners,
        package_scripts=package_scripts,
        token=token,
        detach_to=detach_to,
        kept_text=kept_text,
    )
    return check(reading, live, held_ports)


def read_line(
    line: str,
    *,
    background: bool,
    cwd: str,
    home: str,
    wrapper: Sequence[str] = ("corral-run",),
    extra_runners: Sequence[str] = (),
    package_scripts: Mapping[str, str] = _EMPTY,
    token: str | None = None,
    detach_to: str | None = None,
    kept_text: bool = True,
) -> Reading:
    """One Bash line read, before it meets the live jobs: its decision were nothing running.
    `detach_to`, a folder: a line sent to the background whole (`CMD &`) returns only once
    its supervisor has left the shell's process group, and the job's output goes to
    `<detach_to>/<job id>.log`, for agents that kill that group and drop the command's
    output as soon as the shell exits (Codex). `kept_text`: see
    `inplace.decide_in_place` (False for a shell that may be a POSIX sh)."""
    if len(line) > LINE_LIMIT:
        return Reading(_untouched(False, too_long(line)))
    if not background and "&" not in line and not may_start_runner(line, extra_runners):
        reason = plain_reason(line)
        return Reading(_untouched(reason is None, reason))
    if not background and _LONE_AMP.search(line):
        from corral.core.shell import inplace

        midline = inplace.decide_in_place(
            line, cwd, home, extra_runners, package_scripts, wrapper, token, kept_text
        )
        if midline is not None:
            return _read(midline.decision, midline.checked)
    found = find_jobs(line, cwd, home, extra_runners, package_scripts)
    if not isinstance(found, Found):
        return Reading(_untouched(False, found.reason))
    if not found.runners and found.started_by_corral():
        return Reading(_untouched(True, None))  # `corral run -d …`: never a supervisor in one
    if background:
        mode: Mode | None = Mode.TASK
        inner = line
    elif found.trailing_amp is not None:
        mode = Mode.DETACHED
        inner = line.encode("utf-8")[: found.trailing_amp].decode("utf-8")
    elif found.background_amps:
        mode = None  # `a & b`: runs as written, its jobs are still checked
    elif found.runners:
        mode = Mode.TASK
        inner = line
    else:
        return Reading(_untouched(True, None))
    jobs = found.runners
    if mode is not None and not jobs:
        jobs = (found.line_job(inner),)
    specs = tuple(job.spec for job in jobs)
    if mode is None:
        return _read(_untouched(True, None, specs), jobs)
    token = token or os.urandom(16).hex()
    rewritten = _rewrite(wrapper, mode, token, specs, inner, cwd=cwd, detach_to=detach_to)
    return _read(Decision(True, None, Action.WRAP, mode, rewritten, None, specs, token), jobs)


def _read(decision: Decision, jobs: Sequence[Job]) -> Reading:
    """The reading of a line whose `jobs` are `decision.jobs`: refused at once when the line
    itself starts one server twice, or twice on one port."""
    refusal = _twice(jobs)
    if refusal is not None:
        specs = tuple(job.spec for job in jobs)
        decision = Decision(True, None, Action.REFUSE, None, None, refusal, specs)
    return Reading(decision, tuple(job.runner for job in jobs))


def started_by_corral(line: str, cwd: str, home: str) -> bool:
    """The line starts its jobs through corral's own `run` or `restart` only (what `decide`
    leaves as written, whatever the background flag says: `Found.started_by_corral`)."""
    if len(line) > LINE_LIMIT:
        return False
    found = find_jobs(line, cwd, home, (), _EMPTY)
    return isinstance(found, Found) and not found.runners and found.started_by_corral()


def _rewrite(
    wrapper: Sequence[str],
    mode: Mode,
    token: str,
    specs: Sequence[JobSpec],
    inner: str,
    *,
    cwd: str,
    detach_to: str | None = None,
) -> str:
    job_cwd = specs[0].cwd if specs and not same_dir(specs[0].cwd, cwd) else None
    handshake = detach_to is not None and mode is Mode.DETACHED
    argv = supervisor_argv(
        inner,
        launcher=wrapper,  # `cd web && npm run dev`: the job runs in web (job_cwd)
        mode=mode.value,
        token=token,
        identity=specs[0].identity if specs else None,
        port=next((s.port for s in specs if s.port is not None), None),
        job_cwd=job_cwd,
        ready_fd=HANDSHAKE_FD if handshake else None,
    )
    if detach_to is not None and handshake:
        return detach_with_handshake(shell_words(argv), f"{detach_to}/{token}.log")
    return shell_words(argv) + (" &" if mode is Mode.DETACHED else "")


HANDSHAKE_FD = 9


def detach_with_handshake(words: str, log: str) -> str:
    """`words &` (a supervisor started with `--ready-fd 9`) that returns once the supervisor
    wrote to its ready fd, which it does after leading a process group of its own and
    starting the job: the shell exits only then. The job's output is appended to `log`
    (`corral logs` reads it), as the agent's pipe is gone once the shell exits. The wait
    reads until the ready fd closes, and always succeeds, as `CMD &` does."""
    fd = HANDSHAKE_FD
    target = quote_for_wrapper(log)
    return f"{{ {words} {fd}>&1 >>{target} 2>&1 & }} | {{ IFS= read -r _ || :; }}"


def _twice(jobs: Sequence[Job]) -> str | None:
    """The refusal of a line that starts one job twice at once (or two on one port)."""
    for index, job in enumerate(jobs):
        for earlier in jobs[:index]:
            if not earlier.runs_with(job):
                continue
            same = earlier.spec.identity == job.spec.identity
            if job.runner and same and same_dir(earlier.spec.cwd, job.spec.cwd):
                return messages.twice(job.spec.display, job.spec.cwd)
            if job.spec.port is not None and earlier.spec.port == job.spec.port:
                return messages.port_twice(job.spec.port, earlier.spec.display, job.spec.display)
    return None
