"""The control room's board (service.board) with real processes: every job with its project,
the processes an agent session started without corral (never a job's own twice), the other
listeners (tests/service/test_board_snapshot.py: its jobs from the same snapshot)."""

from __future__ import annotations

import os
import socket
import subprocess
import uuid
from pathlib import Path

from corral.service import board, stopping
from tests.helpers import execed, start_job, wait_for

RUN = uuid.uuid4().hex[:8]


def test_jobs_with_their_project_the_unsupervised_and_the_listeners(tmp_path: Path) -> None:
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    (project / "web").mkdir()
    job = start_job("sleep 300", "--session", f"b-{RUN}", cwd=project / "web")
    marked = subprocess.Popen(["sleep", "300"], env={**os.environ, "CORRAL_SESSION": f"b-{RUN}"})
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        try:
            wait_for(lambda: execed(marked), what="marked")  # its marker shows once it exec'd
            got = board.board(project / "web").to_json()
        finally:
            marked.kill()
            marked.wait()
    assert got["project"] == str(project)
    assert [(j["id"], j["project"], j["state"]) for j in got["jobs"]] == [
        (job["id"], str(project), "running")
    ]
    loose = [p for p in got["unsupervised"] if p["session"] == f"b-{RUN}"]
    assert [(p["pid"], p["attribution"]) for p in loose] == [(marked.pid, "env")]
    assert all(p["attribution"] != "supervised" for p in got["unsupervised"])
    assert any(lst["port"] == port for lst in got["other_listeners"])
    assert stopping.stop([job["id"]]).ok


def test_a_boards_tag_leaves_out_only_the_ages_of_what_runs() -> None:
    running = {"id": "a", "state": "running", "age_seconds": 10.0, "ended_at": None}
    ended = {"id": "b", "state": "exited", "age_seconds": 3.0, "ended_at": 1.0}
    process = {"pid": 7, "age_seconds": 5.0, "cpu_percent": 0.0}
    data = {"project": "/p", "jobs": [running, ended], "unsupervised": [process],
            "other_listeners": [], "cpu_measured": True, "complete": True}  # fmt: skip
    later = board.aged(data, 2.5)
    assert [j["age_seconds"] for j in later["jobs"]] == [12.5, 3.0]
    assert later["unsupervised"][0]["age_seconds"] == 7.5
    assert board.tag(later, []) == board.tag(data, [])
    busier = {**data, "unsupervised": [{**process, "cpu_percent": 3.0}]}
    assert board.tag(busier, []) != board.tag(data, [])
    assert board.tag(data, ["a warning"]) != board.tag(data, [])
    assert board.tag({**data, "jobs": [running, {**ended, "age_seconds": 4.0}]}, []) != (
        board.tag(data, [])
    )
