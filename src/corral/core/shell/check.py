"""A read line against the live jobs: the second half of `plan.decide`, apart from the reader.

    check(reading, live=jobs, held_ports=holders)

A long runner whose identity a running job shares in the same folder, or a port a running job
or another process holds, refuses the line; otherwise it keeps the decision it was read with.
Pure and light (the line reader is not loaded): corral's shell prefix checks a line the
PreToolUse hook already read, at the moment it runs it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from corral.core.shell import messages
from corral.core.shell.decision import Action, Decision, JobSpec, Reading, same_dir
from corral.core.shell.messages import LiveJob, PortHolder


def check(
    reading: Reading, live: Sequence[LiveJob], held_ports: Mapping[int, PortHolder]
) -> Decision:
    """The decision for a read line given what runs now."""
    decision = reading.decision
    if decision.action == Action.REFUSE:
        return decision
    refusal = against_live(zip(decision.jobs, reading.runners, strict=True), live, held_ports)
    if refusal is None:
        return decision
    return Decision(True, None, Action.REFUSE, None, None, refusal, decision.jobs)


def against_live(
    jobs: Iterable[tuple[JobSpec, bool]],
    live: Sequence[LiveJob],
    held: Mapping[int, PortHolder],
) -> str | None:
    """The refusal of the first job (spec, is a known long runner) a running job or a held
    port stands in the way of, or None."""
    for spec, runner in jobs:
        for running in live:
            if runner and running.identity == spec.identity and same_dir(running.cwd, spec.cwd):
                return messages.duplicate(spec.display, running)
        if spec.port is None:
            continue
        for running in live:
            if spec.port in running.ports:
                return messages.port_held_by_job(spec.display, spec.port, running)
        holder = held.get(spec.port)
        if holder is not None:
            if holder.job_id is None:
                return messages.port_held_by_other(spec.display, spec.port, holder)
            return messages.port_held_by_corral(spec.display, spec.port, holder)
    return None
