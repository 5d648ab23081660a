"""The shell prefix on a call that sends a server to the background mid-line: only that
command goes under a supervisor (in place), so the call returns as it would without corral
instead of waiting, under a whole-call supervisor, for the server to end."""

from __future__ import annotations

import time
from pathlib import Path

from tests.helpers import alive, corral, free_port, wait_for
from tests.surfaces.claude.test_prefix import Prefix, listening, records


def test_a_mid_line_server_is_rewritten_in_place_and_the_call_returns(
    tmp_path: Path, corral_home: Path
) -> None:
    pre = Prefix(tmp_path)
    port = free_port()
    command = f"python3 -m http.server {port} --bind 127.0.0.1 > /dev/null 2>&1 & echo started"
    began = time.monotonic()
    result = pre.run(pre.string(command))  # a whole-call supervisor would wait 60 s and fail
    assert result.returncode == 0 and result.stdout == "started\n", result
    assert time.monotonic() - began < 30
    assert pre.cwd_file.read_text() == f"{pre.work}\n"
    [job] = wait_for(lambda: records(corral_home), 10, "the record")
    try:
        assert job["mode"] == "detached" and job["command"].startswith("python3 -m http.server")
        wait_for(lambda: listening(port), 30, "the server")
    finally:
        stop = corral("stop", job["id"][:8])
    assert "terminated" in stop.stdout, stop.stdout + stop.stderr
    wait_for(lambda: not alive(job["pid"]), 30, "the supervisor's end")
