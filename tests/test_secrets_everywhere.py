"""No secret of the corpus reaches any store or any output: the ledger, the logs, the SQLite
history and audit, `ls`, `procs`, `stop`, `clean`, `explain` (`jobs[].display`, refusals) and
the Claude Code hook's answers. Real supervised jobs, real CLI, real hook.

The corpus (tests/test_redact.py) is run in batches: several shapes in one job's line, after a
`sleep` and an `exit` so that none of them ever runs. That a shape stays hidden whatever text
surrounds it is a property tested there (test_secret_survives_no_surrounding_text)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest

from corral.surfaces.claude import hook
from tests.helpers import corral, wait_for
from tests.test_redact import CASES

BATCH = 12
BATCHES = [CASES[i : i + BATCH] for i in range(0, len(CASES), BATCH)]
SECRETS = sorted({s for c in CASES for s in c.secrets})


def job_line(batch_no: int) -> str:
    shapes = "\n".join(c.line for c in BATCHES[batch_no])
    return f"sleep {300 + batch_no} && exit 0\n{shapes}"


# Shapes without quotes or escapes, so that the line reader reads the line and a second start
# is refused, naming the first by its display.
READABLE = "\n".join(
    (
        "sleep 400 && exit 0",
        "zip -P zipPw3a secret.zip notes.txt",
        "htpasswd -b .htpasswd alice htPw5a",
        "lftp -u user,lftpPw7a ftp.example.com",
        "smbclient -U user%smbPw8a //host/share",
        "az login -u x@y.io -p azPw9a --tenant t",
        "sqlcmd -S db -U sa -P sqlCmdPw12a",
        "deploy --token tokFlagA1b2 --port 3000",
    )
)


def folder(base: Path, batch_no: int) -> Path:
    """Each batch runs in a folder of its own: the same job in one folder is a duplicate."""
    path = base / f"batch{batch_no}"
    path.mkdir(exist_ok=True)
    return path


def leaks(text: str | bytes) -> list[str]:
    data = text.encode() if isinstance(text, str) else text
    return [s for s in SECRETS if s.encode() in data]


def run_hook(event: str, payload: Mapping[str, object]) -> str:
    done = subprocess.run(
        hook.command(event), input=json.dumps(payload), capture_output=True, text=True,
        timeout=60, env=os.environ.copy(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def files_under(home: Path) -> bytes:
    return b"\n".join(p.read_bytes() for p in home.rglob("*") if p.is_file())


@pytest.mark.slow
def test_no_secret_in_any_store_or_output(corral_home: Path, tmp_path: Path) -> None:
    assert len(CASES) >= 100
    # `sleep` counts as a long runner here, so that a second start is refused as a duplicate
    (corral_home / "config.toml").write_text('long_runners = ["sleep"]\n')
    session = str(uuid.uuid4())
    env = {**os.environ, "CORRAL_SESSION": session, "SHELL": "/bin/bash"}
    outputs: list[str] = []

    def cli(*args: str, cwd: Path = tmp_path) -> str:
        done = corral(*args, env=env, cwd=cwd)
        text = done.stdout + done.stderr
        outputs.append(text)
        return text

    for n in range(len(BATCHES)):
        started = cli("run", "-d", "--json", "-c", job_line(n), cwd=folder(tmp_path, n))
        assert json.loads(started.splitlines()[0])["data"]["supervised"], started
    # a process of the session that corral did not start: listed by procs, from /proc
    loose = subprocess.Popen(
        ["bash", "-c", job_line(0)], env={**env, "CLAUDE_CODE_SESSION_ID": session},
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_for(lambda: len(json.loads(cli("ls", "--json"))["data"]) >= len(BATCHES), what="jobs")
        ledger = files_under(corral_home / "ledger")
        assert b'"command"' in ledger
        cli("ls")
        cli("ls", "--all", "--json")
        cli("ls", "--session", session)
        cli("ls", "--session", session, "--json")
        cli("procs", "--session", session)
        cli("procs", "--session", session, "--json")
        for n in range(len(BATCHES)):
            here = str(folder(tmp_path, n))
            # a line the reader cannot read exactly (many shapes quote or escape) is only
            # explained as untouched; the others show the job they would duplicate
            cli("explain", "--json", "--background", "--cwd", here, "--", job_line(n))
            cli("explain", "--background", "--cwd", here, "--", job_line(n))
        # a refusal names the running job by its display: a line the reader can read
        dup = tmp_path / "dup"
        dup.mkdir()
        cli("run", "-d", "-c", READABLE, cwd=dup)
        assert "corral refused" in cli("run", "-d", "-c", READABLE, cwd=dup)
        assert "corral refused" in cli("explain", "--cwd", str(dup), "--", READABLE)
        assert "corral refused" in cli("explain", "--json", "--cwd", str(dup), "--", READABLE)
        for n, background in ((0, True), (1, False)):
            tool_input: dict[str, object] = {"command": job_line(n), "description": "d"}
            if background:
                tool_input["run_in_background"] = True
            payload: dict[str, object] = {
                "hook_event_name": "PreToolUse",
                "session_id": session,
                "cwd": str(folder(tmp_path, n)),
                "permission_mode": "default",
                "tool_name": "Bash",
                "tool_use_id": "toolu_1",
                "tool_input": tool_input,
            }
            outputs.append(run_hook("pre-tool-use", payload))
        start = {
            "hook_event_name": "SessionStart",
            "session_id": str(uuid.uuid4()),
            "cwd": str(folder(tmp_path, 0)),
            "source": "startup",
        }
        outputs.append(run_hook("session-start", start))
        cli("stop", "--all")
        cli("stop", "--all", "--json")
    finally:
        os.killpg(loose.pid, signal.SIGKILL)  # its group: bash and its sleep, by their pgid
        loose.wait()
    cli("clean")
    cli("clean", "--json")
    cli("audit")
    cli("audit", "--json")
    cli("ls", "--all")
    assert not (leaked := leaks("\n".join(outputs))), leaked
    stores = ledger + files_under(corral_home)  # SQLite (and its WAL), logs, corral.log
    assert (corral_home / "corral.sqlite3").exists()
    assert not (leaked := leaks(stores)), leaked


def test_batches_reach_every_shape() -> None:
    assert sum(len(b) for b in BATCHES) == len(CASES)
    assert all(job_line(n).startswith("sleep ") for n in range(len(BATCHES)))
    assert sys.version_info >= (3, 11)
