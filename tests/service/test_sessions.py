"""A session's processes with real processes: env markers, lineage, orphans, verified
terminate, PID reuse, setsid, audit, and 200 supervised jobs."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from corral.adapters.identity import ProcessIdentity, identity_of
from corral.service import sessions
from corral.store import db
from tests.helpers import alive, corral, corral_json, execed, job_pids, start_job, wait_for

# Stopping a session's processes reaches every process on the machine that carries its
# marker: session ids are unique to this run so that two suites running side by side never
# reach each other's processes.
RUN = uuid.uuid4().hex[:8]


@contextmanager
def spawned(argv: list[str], **env: str) -> Iterator[subprocess.Popen[bytes]]:
    """A process started outside corral (as Claude's shell would), always reaped."""
    proc = subprocess.Popen(argv, env={**os.environ, **env}, start_new_session=False)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def ident(proc: subprocess.Popen[bytes]) -> ProcessIdentity:
    """Its identity, once it runs its program: before its exec it carries no marker yet."""
    found = wait_for(lambda: execed(proc) and identity_of(proc.pid), what="exec")
    assert isinstance(found, ProcessIdentity)
    return found


def test_marked_process_is_listed_as_env_and_stopped_unmarked_twin_untouched() -> None:
    with (
        spawned(["sleep", "300"], CORRAL_SESSION=f"s-env-{RUN}") as marked,
        spawned(["sleep", "300"]) as twin,
    ):
        ident(marked)
        rows = sessions.list_processes(f"s-env-{RUN}").processes
        assert [(r.pid, r.attribution, r.command) for r in rows] == [
            (marked.pid, "env", "sleep 300")
        ]
        result = sessions.terminate(f"s-env-{RUN}", None, surface="test")
        assert [(t.pid, t.result.value) for t in result.targets] == [(marked.pid, "terminated")]
        assert result.ok
        assert marked.wait(30) == -signal.SIGTERM
        assert alive(twin.pid)
        events = db.audit_events()
        assert len(events) == 1 and events[0].event == db.STOP_EVENT
        assert events[0].session == f"s-env-{RUN}" and events[0].surface == "test"
        assert events[0].targets[0]["result"] == "terminated"


def test_claude_session_id_marker_counts_too() -> None:
    with spawned(["sleep", "300"], CLAUDE_CODE_SESSION_ID=f"s-claude-{RUN}") as marked:
        ident(marked)
        assert [r.pid for r in sessions.list_processes(f"s-claude-{RUN}").processes] == [marked.pid]


@pytest.mark.parametrize(
    ("variable", "agent"),
    # Codex gives every command it spawns CODEX_THREAD_ID, its session id, and Qwen Code
    # QWEN_CODE_SESSION_ID (issue 16)
    [("CODEX_THREAD_ID", "codex"), ("QWEN_CODE_SESSION_ID", "qwen")],
)
def test_an_agents_session_marker_counts_and_its_process_is_stopped_once_verified(
    variable: str, agent: str
) -> None:
    session = f"s-{agent}-{RUN}"
    with spawned(["sleep", "300"], **{variable: session}) as marked:
        ident(marked)
        rows = sessions.list_processes(session).processes
        assert [(r.pid, r.attribution) for r in rows] == [(marked.pid, "env")]
        result = sessions.terminate(session, None, surface="test")
        assert [(t.pid, t.result.value) for t in result.targets] == [(marked.pid, "terminated")]


def test_stale_start_time_is_identity_mismatch_and_never_signalled() -> None:
    with spawned(["sleep", "300"], CORRAL_SESSION=f"s-reuse-{RUN}") as marked:
        real = ident(marked)
        boot, ticks = real.started_at.rsplit(":", 1)
        stale = ProcessIdentity(real.pid, f"{boot}:{int(ticks) - 7}")
        result = sessions.terminate(f"s-reuse-{RUN}", [stale], surface="test")
        assert [t.result.value for t in result.targets] == ["identity_mismatch"]
        assert alive(marked.pid)
        out = sessions.terminate(None, [stale], surface="test")
        assert out.targets[0].result.value == "identity_mismatch" and not out.ok
        assert alive(marked.pid)


def test_targets_of_another_session_or_unattributed_are_unproven() -> None:
    with (
        spawned(["sleep", "300"], CORRAL_SESSION=f"s-a-{RUN}") as a,
        spawned(["sleep", "300"]) as plain,
    ):
        targets = [ident(a), ident(plain)]
        result = sessions.terminate(f"s-b-{RUN}", targets, surface="test")
        assert [t.result.value for t in result.targets] == ["unproven", "unproven"]
        assert alive(a.pid) and alive(plain.pid)


def test_setsid_process_is_found_by_its_marker_and_stopped() -> None:
    with spawned(
        ["setsid", "sh", "-c", "sleep 300 & wait"], CORRAL_SESSION=f"s-sid-{RUN}"
    ) as leader:
        wait_for(lambda: len(sessions.list_processes(f"s-sid-{RUN}").processes) == 2, what="both")
        rows = sessions.list_processes(f"s-sid-{RUN}").processes
        assert all(os.getsid(r.pid) != os.getsid(0) for r in rows)
        result = sessions.terminate(f"s-sid-{RUN}", None, surface="test")
        assert {t.result.value for t in result.targets} == {"terminated"}
        leader.wait(30)
        assert not [r.pid for r in rows if alive(r.pid)]


def test_terminate_all_stops_supervised_jobs_and_env_processes_in_one_audit_event() -> None:
    job = start_job("sleep 300", "--session", f"s-mix-{RUN}")
    wait_for(lambda: job_pids(job["id"]), what="job")
    with spawned(["sleep", "300"], CORRAL_SESSION=f"s-mix-{RUN}") as loose:
        ident(loose)
        by = {r.attribution for r in sessions.list_processes(f"s-mix-{RUN}").processes}
        assert by == {"supervised", "env"}
        result = sessions.terminate(f"s-mix-{RUN}", None, surface="test")
        assert result.ok, result.to_json()
        roles = {(t.attribution, t.role) for t in result.targets}
        assert ("supervised", "supervisor") in roles and ("env", "process") in roles
        loose.wait(30)
        wait_for(lambda: not alive(job["pid"]), what="supervisor gone")
        assert not job_pids(job["id"])
        assert len(db.audit_events()) == 1


def test_lineage_and_orphans_after_the_agent_dies(tmp_path: Path) -> None:
    # A stand-in agent whose child carries no marker, and a shell of it that does.
    agent = subprocess.Popen(["sh", "-c", "sleep 300 & wait"], cwd=tmp_path)
    try:
        agent_id = ident(agent)  # noqa: F841 - it must be alive before its shells start
        with spawned(
            ["sleep", "301"], CLAUDE_CODE_SESSION_ID=f"s-lin-{RUN}", CLAUDE_PID=str(agent.pid)
        ) as shell:
            ident(shell)
            rows = wait_for(
                lambda: (
                    len(sessions.list_processes(f"s-lin-{RUN}").processes) == 2
                    and sessions.list_processes(f"s-lin-{RUN}").processes
                ),
                what="lineage",
            )
            assert {r.attribution for r in rows} == {"env", "lineage"}
            assert {r.agent for r in rows} == {"alive"}
            assert not sessions.list_processes(orphaned=True, project=tmp_path).processes
            child = next(r for r in rows if r.attribution == "lineage")
            agent.kill()
            agent.wait()
            orphans = sessions.list_processes(orphaned=True).processes
            mine = {r.pid: r for r in orphans if r.session == f"s-lin-{RUN}"}
            assert set(mine) == {shell.pid, child.pid}
            assert mine[child.pid].recalled and mine[child.pid].agent == "gone"
            in_project = sessions.list_processes(orphaned=True, project=tmp_path).processes
            assert [r.pid for r in in_project] == [child.pid]  # only it works in tmp_path
            result = sessions.terminate(f"s-lin-{RUN}", None, surface="test")
            assert {t.result.value for t in result.targets} == {"terminated"}
            wait_for(lambda: not alive(child.pid), what="lineage child gone")
    finally:
        if agent.poll() is None:
            agent.kill()
        agent.wait()


def test_audit_failure_is_reported_after_every_target_is_attempted(corral_home: Path) -> None:
    with (
        spawned(["sleep", "300"], CORRAL_SESSION=f"s-audit-{RUN}") as one,
        spawned(["sleep", "300"], CORRAL_SESSION=f"s-audit-{RUN}") as two,
    ):
        ident(one), ident(two)
        (corral_home / "corral.sqlite3").mkdir()  # the database cannot be opened
        result = sessions.terminate(f"s-audit-{RUN}", None, surface="test")
        assert [t.result.value for t in result.targets] == ["terminated", "terminated"]
        assert result.errors and "could not be audited" in result.errors[0]
        assert not result.ok
        one.wait(30), two.wait(30)


def test_session_end_keep_touches_nothing_and_terminate_stops_all() -> None:
    with spawned(["sleep", "300"], CORRAL_SESSION=f"s-end-{RUN}") as marked:
        ident(marked)
        kept = corral("session", "end", f"s-end-{RUN}", "--keep")
        assert kept.returncode == 0 and alive(marked.pid)
        assert corral("session", "end", f"s-end-{RUN}", "--keep", "--terminate").returncode == 2
        out = corral_json("session", "end", f"s-end-{RUN}", "--terminate")
        assert out["data"]["ok"] and out["data"]["targets"][0]["pid"] == marked.pid
        marked.wait(30)
        audit = corral_json("audit")["data"]
        assert len(audit) == 1 and audit[0]["surface"] == "cli"
        assert f"s-end-{RUN}" in corral("audit").stdout


def test_ls_orphaned_cli(tmp_path: Path) -> None:
    token = uuid.uuid4().hex  # the listing is machine-wide: no other suite's process has it
    with spawned(["sleep", "300"], CORRAL_JOB=token) as unknown_job:
        ident(unknown_job)
        rows = corral_json("ls", "--orphaned", "--all-projects")["data"]
        assert [r["pid"] for r in rows if r["job"] == token] == [unknown_job.pid]
        assert "environ" not in str(rows)
        here = corral("ls", "--orphaned", "--json", cwd=tmp_path)
        assert here.returncode == 0 and '"data": []' in here.stdout  # not in this project
        assert corral("ls", "--all-projects").returncode == 2


@pytest.mark.slow
def test_two_hundred_jobs_listed_and_stopped_by_one_stop_all() -> None:
    from corral.adapters import ledger
    from corral.service.runner import new_token, supervisor_argv

    tokens = [new_token() for _ in range(200)]
    sups = [
        subprocess.Popen(
            supervisor_argv(f"sleep {300 + i}", token=t, mode="detached"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for i, t in enumerate(tokens)
    ]
    try:
        wait_for(lambda: len(ledger.read_all().records) == 200, timeout=120, what="200 records")
        wait_for(lambda: all(job_pids(t) for t in tokens), timeout=120, what="200 jobs")
        listed = corral_json("ls")["data"]
        assert len(listed) == 200 and {j["state"] for j in listed} == {"running"}
        assert sum(j["processes"] for j in listed) >= 200
        stop = corral("stop", "--all", "--json")
        assert stop.returncode == 0, stop.stderr
        for sup in sups:
            sup.wait(60)
        assert not [t for t in tokens if job_pids(t)]
    finally:
        for sup in sups:
            if sup.poll() is None:
                sup.kill()
            sup.wait()
