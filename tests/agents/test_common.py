"""The agent-neutral decision (surfaces/agents/common.py), run as an adapter runs it: in a
`python -I -S` process of its own (it pins corral's home and log for the process)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from corral.surfaces.agents import common
from tests.helpers import alive, corral, corral_json, free_port, record

ROOT = Path(common.__file__).resolve().parents[3]  # src/


def decide(line: str, cwd: Path, **options: Any) -> dict[str, Any]:
    """common.decide in a fresh isolated interpreter, as an adapter calls it."""
    args = {"cwd": str(cwd), "session": "s-1", "agent": "codex", "background": False, **options}
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from corral.lowlevel import locations\n"
        "from corral.surfaces.agents import common\n"
        "args = json.loads(sys.argv[1])\n"
        "v = common.decide(sys.argv[2], home=locations.home_dir(), **args)\n"
        "print(json.dumps({k: getattr(v, k) for k in v.__slots__}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, json.dumps(args), line],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def words_after(command: str, flag: str) -> str:
    words = command.split()
    return words[words.index(flag) + 1]


def test_plain_and_unreadable_lines_pass(tmp_path: Path) -> None:
    for line in ("ls -la | grep x", "npm run dev 'unterminated", "echo $((", ""):
        assert decide(line, tmp_path)["action"] == common.PASS, line
    assert decide("npm run dev", tmp_path / "gone")["action"] == common.PASS


def test_rewrite_carries_the_session_and_the_agent(tmp_path: Path) -> None:
    line = f"python3 -m http.server {free_port()}"
    verdict = decide(line, tmp_path, background=True, session="thread-7", agent="gemini")
    assert verdict["action"] == common.REWRITE
    command = verdict["command"]
    assert words_after(command, "--session") == "thread-7"
    assert words_after(command, "--meta") == "agent=gemini"
    assert "--task" in command.split() and command.endswith(f"-- '{line}'")
    token = words_after(command, "--job")
    assert f"job {token[:8]}" in verdict["context"]
    again = decide(command, tmp_path, background=True)  # never wrapped twice
    assert again["action"] == common.PASS


def test_left_group_job_survives_the_kill_of_the_shells_group(
    tmp_path: Path, corral_home: Path
) -> None:
    # Codex SIGKILLs the command's whole process group ~30 ms after its shell exits: the
    # rewritten `CMD &` returns only once the supervisor leads a group of its own.
    session = str(uuid.uuid4())
    verdict = decide("sleep 300 &", tmp_path, session=session, leave_group=True)
    command = verdict["command"]
    assert "--detached" in command.split() and "--ready-fd 9" in command
    token = words_after(command, "--job")
    shell = subprocess.Popen(
        ["sh", "-c", command], cwd=tmp_path, start_new_session=True, stdout=subprocess.PIPE
    )
    try:
        assert shell.wait(timeout=30) == 0
        try:
            os.killpg(shell.pid, signal.SIGKILL)  # at once, as Codex does
        except ProcessLookupError:
            pass  # nothing is left in the shell's group
        job = record(corral_home, token)
        assert job["session"] == session and job["agent"] == "codex"
        assert alive(job["pid"]) and os.getpgid(job["pid"]) != shell.pid
        [listed] = [j for j in corral_json("ls")["data"] if j["id"] == token]
        assert listed["session"] == session and listed["state"] == "running"
    finally:
        corral("stop", "--all", check=True)
        assert shell.stdout is not None
        shell.stdout.close()


def test_second_copy_is_denied_naming_the_job_and_its_port(
    tmp_path: Path, corral_home: Path
) -> None:
    port = free_port()
    line = f"python3 -m http.server {port} --bind 127.0.0.1 &"
    first = decide(line, tmp_path, leave_group=True)
    token = words_after(first["command"], "--job")
    subprocess.run(["sh", "-c", first["command"]], cwd=tmp_path, timeout=30, check=True)
    try:
        assert record(corral_home, token)["port"] == port  # recorded before the shell returned
        again = decide(line, tmp_path, leave_group=True)
        assert again["action"] == common.DENY and again["command"] is None
        assert token[:8] in again["reason"] and "corral stop" in again["reason"]
        assert len(list((corral_home / "ledger").glob("*.json"))) == 1  # nothing started
    finally:
        corral("stop", "--all", check=True)


def test_rewrite_names_the_supervised_commands_as_written(tmp_path: Path) -> None:
    # An agent that cannot rewrite (Qwen Code) tells the model what to run under corral.
    line = f"python3 -m http.server {free_port()}"
    verdict = decide(line, tmp_path, background=True)
    assert (verdict["lines"], verdict["mode"]) == ([line], "task")
    quoted = f"cd web && FOO='a b' python3 -m http.server {free_port()} > 'the log' 2>&1"
    (tmp_path / "web").mkdir()
    assert decide(f"{quoted} &", tmp_path)["lines"] == [quoted]
    midline = "npm run dev & tsc -w & sleep 2; curl localhost:3000"
    verdict = decide(midline, tmp_path)
    assert (verdict["lines"], verdict["mode"]) == (["npm run dev", "tsc -w"], "in-place")
    assert decide("sleep 300 &", tmp_path, leave_group=True)["lines"] == ["sleep 300"]
    assert decide("ls", tmp_path)["lines"] == []


def test_without_reserve_a_denying_hook_leaves_the_start_free(tmp_path: Path) -> None:
    # The hook that denies and redirects reserves nothing: the redirected start is admitted.
    line = f"python3 -m http.server {free_port()} &"
    assert decide(line, tmp_path, reserve=False)["action"] == common.REWRITE
    assert decide(line, tmp_path)["action"] == common.REWRITE
    again = decide(line, tmp_path)
    assert again["action"] == common.DENY and "being started" in again["reason"], again
