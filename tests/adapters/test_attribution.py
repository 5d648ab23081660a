"""Attribution over hand-made snapshots: each rule, and that a reused pid inherits nothing."""

from __future__ import annotations

from corral.adapters import attribution as a
from corral.adapters.scan import Proc, Snapshot


def proc(pid: int, ppid: int = 1, start: float = 10.0, **markers: str) -> Proc:
    return Proc(pid, ppid, pid, pid, 0, "x", f"b:{int(start * 100)}", start, start, 0.0, 0,
                markers, True)  # fmt: skip


def snap(*procs: Proc) -> Snapshot:
    return Snapshot(0.0, {p.pid: p for p in procs}, ())


def test_env_markers_and_lineage_of_a_live_agent() -> None:
    s = snap(
        proc(100),  # the agent
        proc(101, 100, 11, CLAUDE_CODE_SESSION_ID="S", CLAUDE_PID="100"),  # its shell
        proc(102, 100, 12),  # an unmarked descendant (env cleared)
        proc(103, 1, 13, CORRAL_SESSION="T"),
        proc(104, 1, 14),  # nobody's
    )
    got = a.attribute(s, [])
    assert got.rows[101].how == a.ENV and got.rows[101].session == "S"
    assert got.rows[102].how == a.LINEAGE and got.rows[102].session == "S"
    assert got.rows[103].session == "T"
    assert 100 not in got.rows and 104 not in got.rows
    assert got.agents == {"S": a.AGENT_ALIVE, "T": a.AGENT_UNKNOWN}
    assert not got.orphaned(got.rows[101])


def test_agent_gone_or_pid_reused_by_a_younger_process_makes_orphans() -> None:
    gone = a.attribute(snap(proc(101, 1, 11, CLAUDE_CODE_SESSION_ID="S", CLAUDE_PID="100")), [])
    assert gone.agents["S"] == a.AGENT_GONE and gone.orphaned(gone.rows[101])
    reused = a.attribute(
        snap(proc(100, 1, 50), proc(101, 1, 11, CLAUDE_CODE_SESSION_ID="S", CLAUDE_PID="100")),
        [],
    )
    assert reused.agents["S"] == a.AGENT_GONE


def test_a_reused_pid_never_inherits_a_remembered_owner() -> None:
    old = a.Attribution(200, "b:500", a.LINEAGE, "S")
    got = a.attribute(snap(proc(200, 1, 99)), [], {(200, "b:500"): old})
    assert 200 not in got.rows
    same = a.attribute(snap(proc(200, 1, 5)), [], {(200, "b:500"): old})
    assert same.rows[200].recalled and same.rows[200].session == "S"


def test_known_dead_agent_makes_its_session_orphaned() -> None:
    got = a.attribute(snap(proc(101, 1, 11, CORRAL_SESSION="S")), [], None, {"S": [(100, "b:1")]})
    assert got.agents["S"] == a.AGENT_GONE
