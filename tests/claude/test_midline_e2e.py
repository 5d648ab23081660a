"""A server the model sends to the background mid-line of a foreground call, inside the real
Claude Code CLI: the call returns what it returns without corral, and the server is then
supervised: listed under the session with its port, and stopped by `corral stop`."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.claude.fake_api import Text, Turn, block_text
from tests.claude.harness import ClaudeCLI
from tests.claude.test_hooks_e2e import bash, install, jobs, listening, records
from tests.helpers import alive, corral, free_port, job_pids, wait_for

pytestmark = pytest.mark.slow


def test_mid_line_server_returns_the_page_and_is_then_listed_and_stopped(
    claude: ClaudeCLI, corral_home: Path
) -> None:
    install(claude)
    (claude.project / "index.html").write_text("<p>corral mid-line page</p>\n")
    port = free_port()
    # `sleep 1` as agents write it; curl retries a refused connection for a loaded machine
    curl = f"curl -s --retry 30 --retry-connrefused --retry-delay 1 localhost:{port}"
    line = f"python3 -m http.server {port} --bind 127.0.0.1 & sleep 1; {curl}"
    script: list[Turn] = [bash(line), Text("served")]
    run = claude.run("start the server and fetch the page", script, timeout=180)
    assert run.returncode == 0, run.explain()
    [result] = run.tool_results()
    page = block_text(result)
    assert result.get("is_error") is not True, run.explain()

    [job] = records(corral_home)  # the server, and only it, ran under a supervisor
    try:
        assert job["mode"] == "detached" and job["command"].startswith("python3 -m http.server")
        # As without corral: the same line run by bash alone prints the same page. (The
        # original server is stopped at once; the supervised one still holds the port.)
        other = free_port()
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "index.html").write_text("<p>corral mid-line page</p>\n")
            plain = f"python3 -m http.server {other} --bind 127.0.0.1 & p=$!; sleep 1; "
            plain += f"{curl.replace(str(port), str(other))}; kill $p"
            direct = subprocess.run(
                ["bash", "-c", plain], cwd=folder, capture_output=True, text=True, timeout=90,
                check=False,
            )  # fmt: skip
        # the server's own log lines (with times) go to the same output: the page is compared
        served = "<p>corral mid-line page</p>"
        assert served in page and served in direct.stdout, (page, direct.stdout)
        assert "corral" not in page.replace(served, "")  # nothing of corral's in the output

        listed = wait_for(
            lambda: [j for j in jobs("--session", run.result["session_id"]) if port in j["ports"]],
            what="the mid-line server listed under its session with its port",
        )
        assert [row["id"] for row in listed] == [job["id"]]
        assert listed[0]["state"] == "running" and listening(port)
    finally:
        stop = corral("stop", job["id"][:8])
    assert stop.returncode == 0 and "terminated" in stop.stdout, stop.stdout + stop.stderr
    wait_for(lambda: not alive(job["pid"]) and not listening(port), 30, "the server to stop")
    assert not job_pids(job["id"])


def test_a_server_last_in_a_list_is_found_through_bashs_table_and_supervised(
    claude: ClaudeCLI, corral_home: Path
) -> None:
    """`cd site && SERVER & …`: the hook writes corral's program for the server's command
    word, and the real CLI's bash finds it in its table of commands (the supervisor's
    environment says so: corral's program gives it `_` as bash would have given the
    server, python3 on PATH, where corral's function leaves the supervisor's own
    interpreter, as bash names the program it runs)."""
    install(claude)
    (claude.project / "site").mkdir()
    (claude.project / "site" / "index.html").write_text("<p>corral list page</p>\n")
    port = free_port()
    curl = f"curl -s --retry 30 --retry-connrefused --retry-delay 1 localhost:{port}"
    line = f"cd site && python3 -m http.server {port} --bind 127.0.0.1 & sleep 1; {curl}"
    run = claude.run("serve the site", [bash(line), Text("served")], timeout=180)
    assert run.returncode == 0, run.explain()
    [result] = run.tool_results()
    assert "<p>corral list page</p>" in block_text(result), run.explain()
    [job] = records(corral_home)
    try:
        shim = corral_home / "shims" / job["id"] / "python3"
        assert shim.is_file()
        raw = Path(f"/proc/{job['pid']}/environ").read_bytes().split(b"\0")
        environ = dict(entry.split(b"=", 1) for entry in raw if b"=" in entry)
        server = shutil.which("python3", path=environ[b"PATH"].decode())
        interpreter = Path(f"/proc/{job['pid']}/cmdline").read_bytes().split(b"\0")[0]
        assert server is not None and environ[b"_"] == server.encode() != interpreter
        listed = wait_for(
            lambda: [j for j in jobs("--session", run.result["session_id"]) if port in j["ports"]],
            what="the server listed under its session with its port",
        )
        assert [row["id"] for row in listed] == [job["id"]]
        assert listed[0]["cwd"] == str(claude.project / "site")
    finally:
        stop = corral("stop", job["id"][:8])
    assert stop.returncode == 0 and "terminated" in stop.stdout, stop.stdout + stop.stderr
    wait_for(lambda: not alive(job["pid"]) and not listening(port), 30, "the server to stop")
