"""corral procs (what /procs runs) against real supervised jobs of two sessions."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import alive, corral, corral_json, private_home, start_job


def procs(project: Path, *args: str):
    return corral("procs", "--cwd", str(project), *args, cwd=project)


def test_lists_this_sessions_and_earlier_jobs_then_stops_them_apart(tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    mine = start_job("sleep 60", "--session", "sess-mine", cwd=project)
    earlier = start_job("sleep 61", "--session", "sess-old", cwd=project)
    elsewhere = start_job("sleep 62", "--session", "sess-old", cwd=tmp_path)
    try:
        shown = procs(project, "--session", "sess-mine")
        assert shown.returncode == 0, shown.stderr
        head, _, rest = shown.stdout.partition("Jobs of earlier sessions")
        assert "Jobs of session sess-min" in head and mine["id"][:8] in head
        assert earlier["id"][:8] in rest and earlier["id"][:8] not in head
        assert elsewhere["id"][:8] not in shown.stdout  # another folder, another session
        data = corral_json("procs", "--session", "sess-mine", "--cwd", str(project))["data"]
        assert [j["id"] for j in data["session_jobs"]] == [mine["id"]]
        assert [j["id"] for j in data["earlier_jobs"]] == [earlier["id"]]
        assert {"other_listeners", "unsupervised", "project"} <= set(data)

        stopped = procs(project, "--session", "sess-mine", "stop-all")
        assert stopped.returncode == 0, stopped.stderr
        assert "terminated" in stopped.stdout
        assert not alive(mine["pid"]) and alive(earlier["pid"])

        # `/procs earlier` passes its words as one quoted argument
        gone = procs(project, "--session", "sess-mine", "earlier")
        assert gone.returncode == 0 and earlier["id"][:8] in gone.stdout
        assert not alive(earlier["pid"]) and alive(elsewhere["pid"])

        one = procs(project, "stop " + elsewhere["id"][:8])
        assert one.returncode == 0 and not alive(elsewhere["pid"])
        cleaned = procs(project, "clean")
        assert "forgot 3 finished job(s)" in cleaned.stdout
    finally:
        corral("stop", "--all")


def test_session_comes_from_claude_codes_environment(tmp_path: Path) -> None:
    import os

    job = start_job("sleep 60", "--session", "sess-env", cwd=tmp_path)
    try:
        env = private_home(tmp_path / "home", {**os.environ, "CLAUDE_CODE_SESSION_ID": "sess-env"})
        result = corral("procs", "stop-all", cwd=tmp_path, env=env)
        assert result.returncode == 0 and not alive(job["pid"])
    finally:
        corral("stop", "--all")


def test_bad_words_are_a_usage_error_but_exit_zero_for_the_slash_command(tmp_path) -> None:
    bad = procs(tmp_path, "stop")
    assert bad.returncode == 2 and "stop-all, stop ID, clean, earlier" in bad.stderr
    nonsense = procs(tmp_path, "--exit-zero", "nonsense")
    assert nonsense.returncode == 0 and "expected one of" in nonsense.stdout
    unknown = procs(tmp_path, "--exit-zero", "stop ffffffff")
    assert unknown.returncode == 0 and "no job matches" in unknown.stdout
    assert procs(tmp_path, "stop-all", "--session", "nobody").stdout.strip() == (
        "this session has no running jobs"
    )
