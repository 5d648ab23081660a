"""The supervisor checks every state it records against the one transition table, which
lives in the floor (lowlevel.record) so that the supervisor, which imports only the floor,
and the service, which enforces it for the states it records, use the same table."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from corral.core.outcomes import TRANSITIONS, JobState
from corral.lowlevel import record

SUPERVISOR_SRC = Path(__file__).resolve().parent.parent / "src" / "corral" / "supervisor"


def test_the_service_enforces_the_floors_table() -> None:
    assert {
        JobState(state): frozenset(JobState(m) for m in moves)
        for state, moves in record.TRANSITIONS.items()
    } == TRANSITIONS
    assert set(record.TRANSITIONS) == {*record.STATES, record.UNSUPERVISED}


def test_an_illegal_move_raises_naming_the_job_its_state_and_the_allowed_moves() -> None:
    assert record.transition("j1", record.RUNNING, record.STOPPING) == record.STOPPING
    assert record.transition("j1", record.RUNNING, record.RUNNING) == record.RUNNING
    with pytest.raises(record.IllegalTransition) as caught:
        record.transition("job-7", record.EXITED, record.STOPPING)
    assert str(caught.value) == (
        "job job-7: cannot go from exited to stopping; allowed from exited: none (final)"
    )
    with pytest.raises(ValueError, match="allowed from stopping: exited, killed, stopped"):
        record.transition("job-7", record.STOPPING, record.RUNNING)


def test_the_supervisor_moves_its_record_only_through_the_table() -> None:
    """No `record["state"] = …` or `record.update(state=…)` of its own: every state it
    writes goes through `Supervisor.move`, which checks it (and the first, `running`, is
    where every job starts)."""
    writes = []
    for path in SUPERVISOR_SRC.rglob("*.py"):
        for function in ast.walk(ast.parse(path.read_text())):
            if not isinstance(function, ast.FunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                    key = node.slice
                    if isinstance(key, ast.Constant) and key.value == "state":
                        writes.append(f"{path.name}:{function.name}")
                if isinstance(node, ast.Call) and any(k.arg == "state" for k in node.keywords):
                    writes.append(f"{path.name}:{function.name}")
    assert writes == ["job.py:move"], writes


def test_the_supervisor_refuses_an_illegal_move_of_its_own_record(tmp_path: Path) -> None:
    from corral.supervisor.job import Supervisor
    from corral.supervisor.options import parse

    sup = Supervisor(parse(["--job", "a" * 32, "--ledger", str(tmp_path), "--", "true"]), None)
    sup.record = {"id": "a" * 32, "state": record.EXITED}
    with pytest.raises(record.IllegalTransition, match="cannot go from exited to stopping"):
        sup.move(record.STOPPING)
    assert sup.record["state"] == record.EXITED
