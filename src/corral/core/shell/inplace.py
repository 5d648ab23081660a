"""The in-place rewrite of a foreground line that sends long runners to the background
mid-line: each such command alone goes under a supervisor of its own, every other byte of
the line stays as it is.

    npm run dev & sleep 2; curl -s localhost:5173
    ->  __corral_us=$_; typeset +x __corral_us; typeset -f npm >/dev/null 2>&1 || {
        function npm { case $- in *m*) ;; *) trap '' INT QUIT;; esac; exec <supervisor>
        --job T … --async -- 'npm run dev'; }; __corral_fn=1; typeset +x __corral_fn; };
        npm run dev & function __corral_end { [ -z "${__corral_fn-}" ] || { unset -f npm;
        unset __corral_fn; }; unset -f __corral_end; unset __corral_us; }; __corral_end
        "$__corral_us"; sleep 2; curl -s localhost:5173

The command keeps its text (bash's job notices name it as written): a function of its
command word, defined just before the backgrounded list and removed just after its `&`,
makes the process that runs the command run the supervisor instead (heads.py says which
commands and how). In a list that runs anything else (`cd web && npm run dev &`), bash
finds a program of corral's for the word in its table of hashed commands instead, where
it can (`hash -p`: decision.through_function, supervisor/shim.py), and runs it as it would
the real program, so that even the notices the list's own process prints about the
command name it as written. Where no function can stand for it, the list's bytes become
the supervisor's command line:

    vite && echo done & sleep 1  ->  <supervisor> … --async -- 'vite && echo done' & sleep 1

`wait $!` gives the command's status (the list's, the pipeline's) and the job lives on,
supervised, when the calling shell ends (as `npm run dev &` would, unsupervised).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from itertools import count

from corral.core.shell.decision import (
    Action,
    Decision,
    InPlace,
    Mode,
    can_shim,
    same_dir,
    shell_words,
    through_function,
    through_hash,
)
from corral.core.shell.folders import NoFolder, Placed
from corral.core.shell.heads import Head
from corral.core.shell.jobs import Job, JobSpec, runner_job
from corral.core.shell.midline import Background, Unit, read_background
from corral.core.shell.parse import Unreadable
from corral.lowlevel import locations
from corral.lowlevel.locations import shim_path, supervisor_argv
from corral.lowlevel.named import NamedTuple
from corral.lowlevel.redact import command_digest


class Midline(NamedTuple):
    decision: Decision  # wrap (in place) or untouched
    checked: tuple[Job, ...]  # every long runner of the line, for duplicate and port checks


def decide_in_place(  # noqa: PLR0917 - one call site (plan.decide), every value is needed
    line: str,
    cwd: str,
    home: str,
    extra_runners: Sequence[str],
    package_scripts: Mapping[str, str],
    wrapper: Sequence[str],
    token: str | None,
    kept_text: bool = True,
) -> Midline | None:
    """The decision for a foreground line with an `&` that does not end it; None when the
    line has none (or cannot be read this way), so the whole-line rules apply. `kept_text`
    False: every command moves into the supervisor's command line (`<supervisor> -- 'CMD'
    &`), never through a function of its word, whose `function NAME {` form only bash and
    zsh read (for agents whose shell may be a POSIX sh)."""
    found = read_background(line, cwd, home)
    if isinstance(found, Unreadable) or not _midline(found):
        return None
    source = line.encode("utf-8")
    try:
        found_jobs = [
            (item, job)
            for item in found.placed
            if (job := runner_job(item, source, home, extra_runners, package_scripts))
        ]
    except NoFolder as exc:
        return Midline(Decision(False, str(exc), Action.UNTOUCHED, None, None, None, ()), ())
    jobs = tuple(job for _, job in found_jobs)
    specs = tuple(job.spec for job in jobs)
    moves: list[tuple[Unit, list[int], Head | None, tuple[Head, ...]]] = []
    blocked: list[tuple[int, str]] = []
    for unit in found.units:  # inner ones first: `(vite & wait) &` moves `vite`
        mine = [at for at, (item, _) in enumerate(found_jobs) if item in unit.placed]
        if not mine or any(at in mine for _, taken, _, _ in moves for at in taken):
            continue  # no long runner (it runs as written), or an inner unit moved it
        runners = [found_jobs[at][0] for at in mine]
        head = _head(unit, runners) if kept_text else None
        hashed = _hashed(unit, runners) if kept_text and head is None else ()
        why = unit.blocker
        if head is None and not hashed:  # the old form: the list's bytes into a new shell
            why = unit.group or (unit.listed if kept_text else None) or why
        if why is not None:
            blocked.extend((at, why) for at in mine)
        else:
            moves.append((unit, mine, head, hashed))
    moved = {at for _, mine, _, _ in moves for at in mine}
    notes = [(at, why) for at, why in dict(reversed(blocked)).items() if at not in moved]
    if not moves:
        decision = Decision(
            True, None, Action.UNTOUCHED, None, None, None, specs, None, (), tuple(notes)
        )
        return Midline(decision, jobs)
    first = token or os.urandom(16).hex()
    wraps: list[InPlace] = []
    tokens = (first if n == 0 else command_digest(f"{first}\0{n}")[:32] for n in count())
    for unit, mine, head, hashed in moves:
        if hashed:
            wraps.extend(_through_tables(unit, mine, hashed, jobs, wrapper, tokens, source))
            continue
        own = next(tokens)
        own_specs = [jobs[at].spec for at in mine]
        if head is None:  # the list's bytes become the supervisor's command line
            text = _wrap(wrapper, own, unit, own_specs, source[unit.start : unit.end])
            wraps.append(InPlace(mine[0], own, unit.start, unit.end, text))
            continue
        text = _wrap(wrapper, own, unit, own_specs, head.text.encode("utf-8"))
        shim = shim_path(own, head.name) if head.checks is not None and can_shim() else ""
        before, after = through_function(
            head.name, text, head.earlier, head.form, head.guard, shim, head.checks or ()
        )
        kept = source[unit.start : unit.amp + 1].decode("utf-8")
        wraps.append(
            InPlace(
                mine[0], own, head.start, head.end, text, head=head.name, opens=unit.start,
                amp=unit.amp, before=before, after=after, statement=before + kept + after,
                form=head.form, guard=head.guard, earlier=head.earlier, shim=shim,
                values=head.values if shim else None,
            )
        )  # fmt: skip
    decision = Decision(
        True, None, Action.WRAP, Mode.IN_PLACE, _splice(source, wraps), None, specs, first,
        tuple(wraps), tuple(notes),
    )  # fmt: skip
    return Midline(decision, jobs)


def _hashed(unit: Unit, runners: Sequence[Placed]) -> tuple[Head, ...]:
    """Where no function can stand for the unit's long runners, the command of each that
    the shell can find through its table of hashed commands (heads.hashed_heads), in the
    runners' order; () unless there is one for every runner (then: the old form)."""
    if not can_shim():
        return ()
    found = {head.start: head for head in unit.hashed}
    starts = [runner.command.start for runner in runners]
    return tuple(found[at] for at in starts) if all(at in found for at in starts) else ()


def _through_tables(  # noqa: PLR0917 - the one call site's values
    unit: Unit,
    mine: list[int],
    hashed: tuple[Head, ...],
    jobs: Sequence[Job],
    wrapper: Sequence[str],
    tokens: Iterator[str],
    source: bytes,
) -> list[InPlace]:
    """One rewrite per long runner of `unit` that the shell finds through its table; the
    first carries what goes before the list and after its `&` (decision.through_hash)."""
    wraps = []
    for at, head in zip(mine, hashed, strict=True):
        own = next(tokens)
        text = _wrap(wrapper, own, unit, [jobs[at].spec], head.text.encode("utf-8"))
        wraps.append(
            InPlace(
                at, own, head.start, head.end, text, head=head.name, opens=unit.start,
                amp=unit.amp, form=head.form, guard=head.guard, shim=shim_path(own, head.name),
                values=head.values,
            )
        )  # fmt: skip
    others = [w for head in hashed for w in head.checks or () if w not in {h.name for h in hashed}]
    before, after = through_hash(
        [(w.head or "", w.shim) for w in wraps], list(dict.fromkeys(others))
    )
    kept = source[unit.start : unit.amp + 1].decode("utf-8")
    statement = before + kept + after  # (each job's own, as explain shows it)
    wraps = [w._replace(statement=statement) for w in wraps]
    wraps[0] = wraps[0]._replace(before=before, after=after)
    return wraps


def _head(unit: Unit, runners: Sequence[Placed]) -> Head | None:
    """The command a function of its name leads to the supervisor: the unit's one long
    runner, when a function can stand for it there (heads.py); None: the old form."""
    if len(runners) != 1:
        return None  # a function would lead one of them only
    start = runners[0].command.start
    return next((head for head in unit.heads if head.start == start), None)


def _midline(found: Background) -> bool:
    """An `&` that does not end the line (a single trailing `&` wraps the whole line)."""
    units = found.units
    return bool(units) and not (len(units) == 1 and units[0].trailing)


def _wrap(
    wrapper: Sequence[str], token: str, unit: Unit, specs: Sequence[JobSpec], command: bytes
) -> str:
    """`<supervisor> -- 'CMD'` for one unit (CMD: `command`, the unit's bytes or those of
    the command its function leads to); its first long runner names the job."""
    spec = specs[0]
    moved = not same_dir(spec.cwd, unit.cwd)  # `cd web && vite &`: the job runs in web
    # Never a tmux pane (the tmux backend's wrapper): the command keeps the caller's stdout,
    # stdin and `$!`, which only the supervisor itself can give it.
    launcher = [locations.LAUNCHER if w == locations.TMUX_WRAPPER else w for w in wrapper]
    argv = supervisor_argv(
        command.decode("utf-8"),
        launcher=launcher,
        mode="detached",  # lives on when the calling shell ends, as `CMD &` would
        token=token,
        identity=spec.identity,
        port=next((s.port for s in specs if s.port is not None), None),
        job_cwd=spec.cwd if moved else None,
        options=["--async"],
    )
    return shell_words(argv)


def _splice(source: bytes, wraps: Sequence[InPlace]) -> str:
    out: list[bytes] = []
    at = 0
    for wrap in sorted(wraps, key=lambda w: w.start if w.head is None else w.opens):
        if wrap.head is not None and wrap.opens < at:
            continue  # a list's later runner found through the shell's table: done with it
        if wrap.head is None:  # the command's bytes become the supervisor's command line
            out += [source[at : wrap.start], wrap.text.encode("utf-8")]
            at = wrap.end
        else:  # every byte kept: a function before the command, its removal after `&`
            behind = wrap.amp + 1
            out += [source[at : wrap.opens], wrap.before.encode("utf-8")]
            out += [source[wrap.opens : behind], wrap.after.encode("utf-8")]
            at = behind
    out.append(source[at:])
    return b"".join(out).decode("utf-8")
