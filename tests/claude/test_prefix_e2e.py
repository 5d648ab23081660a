"""corral's shell prefix inside the real Claude Code CLI 2.1.332, in manual (`default`) and
`auto` permission mode: supervision happens at execution, after Claude Code's own permission
check, so it is the same in every mode.

Against a local model server auto mode's safety classifier does not run (Claude Code refuses
what would need it), so these runs cover the lines an allow rule lets run; a command the
classifier approves reaches the prefix exactly like them, which the last test shows: the
string and the environment the prefix receives carry nothing of the mode.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from corral.surfaces.claude import prefix
from tests.claude.fake_api import Text, Turn, block_text
from tests.claude.harness import ClaudeCLI
from tests.claude.test_hooks_e2e import bash, free_port, listening, records
from tests.helpers import corral, job_pids, private_home, zsh_or_skip

pytestmark = pytest.mark.slow

WAIT = """\
#!/bin/sh
# wait.sh PORT...: until every port listens, then what corral lists
for port in "$@"; do
  n=0
  until python3 -c "import socket,sys; sys.exit(socket.socket().connect_ex(('127.0.0.1', $port)))"
  do n=$((n + 1)); [ $n -lt 300 ] || break; sleep 0.1; done
done
exec corral ls --all --json
"""
# Manual mode: every Bash line (2.1.332 asks about a `cmd &` line beyond a prefix rule).
# Auto mode drops so broad a rule and sends a `&` line to its classifier, which a local model
# server does not have: there, the lines named by rules.
ALLOW = {
    "default": ["Bash"],
    "auto": ["Bash(python3 -m http.server:*)", "Bash(./wait.sh:*)", "Bash(corral stop:*)"],
}


def install(claude: ClaudeCLI, permissions: dict[str, Any]) -> None:
    """corral installed as a user would, the project trusted (in `-p`, 2.1.332 ignores a
    project's allow rules until then) and `permissions` added."""
    env = private_home(claude.home)
    done = corral("install", "claude", "--scope", "project", cwd=claude.project, env=env)
    assert done.returncode == 0, done.stderr
    settings = json.loads(claude.settings_path().read_text())
    # the prefix names this machine's corral: a project install puts it in the local file
    local = json.loads(claude.settings_path().with_name("settings.local.json").read_text())
    assert prefix.active(local["env"])
    claude.write_settings({**settings, "permissions": permissions})
    claude.trust_project()
    (claude.project / "web").mkdir()
    wait = claude.project / "wait.sh"
    wait.write_text(WAIT)
    wait.chmod(0o755)


def args(mode: str) -> list[str]:
    return ["--output-format", "json", "--permission-mode", mode]


@pytest.mark.parametrize(
    ("mode", "shell"), [("default", "bash"), ("auto", "bash"), ("default", "zsh")]
)
def test_servers_are_supervised_listed_refused_again_and_stopped(
    claude: ClaudeCLI, corral_home: Path, mode: str, shell: str
) -> None:
    """A zsh user's too: Claude Code runs `zsh -c` around a zsh snapshot, and so does the
    supervisor (the `&` line is rewritten in place for zsh)."""
    shell_env = {"SHELL": zsh_or_skip()} if shell == "zsh" else {}
    install(claude, {"allow": ALLOW[mode]})
    tasked, amped = free_port(), free_port()
    server = f"python3 -m http.server {tasked} --bind 127.0.0.1"
    amp = f"cd web && python3 -m http.server {amped} --bind 127.0.0.1 &"  # another folder
    ports = [tasked, amped] if mode == "default" else [tasked]
    script: list[Turn] = [
        bash(server, background=True),
        *([bash(amp)] if mode == "default" else []),
        bash(f"./wait.sh {' '.join(map(str, ports))}"),
        bash(server, background=True),  # the same server again: refused, nothing starts
        bash(server),  # and in the foreground
        bash("corral stop --all --json"),
        Text("stopped"),
        Text("noted"),  # the background task's notification
    ]
    run = claude.run("start the servers", script, args=args(mode), env=shell_env, timeout=180)
    assert run.returncode == 0, run.explain()
    results = run.tool_results()
    if mode == "default":
        assert not results.pop(1).get("is_error"), run.explain()
    started, listed, again, again_fg, stopped = results[:5]
    assert "running in background" in block_text(started), run.explain()
    jobs = records(corral_home)
    assert sorted(j["port"] for j in jobs) == sorted(ports), (jobs, run.explain())
    by_port = {j["port"]: j for j in jobs}
    assert by_port[tasked]["command"] == server and by_port[tasked]["mode"] == "task"
    assert {os.path.basename(j["shell"]) for j in jobs} == {shell}
    if mode == "default":
        assert by_port[amped]["mode"] == "detached"
        assert by_port[amped]["command"] == amp.removesuffix(" &")
    rows = json.loads(block_text(listed)[block_text(listed).index("{") :])["data"]
    session = run.result["session_id"]
    for job in jobs:
        [row] = [r for r in rows if r["id"] == job["id"]]
        assert job["port"] in row["ports"] and row["session"] == session, row
    for refused in (again, again_fg):
        assert refused["is_error"] is True, run.explain()
        assert by_port[tasked]["id"][:8] in block_text(refused), run.explain()
        assert "corral stop" in block_text(refused)
    assert "terminated" in block_text(stopped), run.explain()
    # the hook read each server's line and left a note; the prefix took each (a note is used
    # once), so it started them without reading the lines again
    notes = corral_home / "prefix-read"
    assert notes.is_dir() and not list(notes.iterdir()), run.explain()
    assert {j["state"] for j in records(corral_home)} <= {"stopped", "killed"}
    assert not listening(tasked) and not listening(amped)
    assert not any(job_pids(j["id"]) for j in jobs)


@pytest.mark.parametrize("kind", ["deny", "ask"])
@pytest.mark.parametrize("mode", ["default", "auto"])
def test_a_deny_or_ask_rule_for_the_original_still_refuses_it(
    claude: ClaudeCLI, corral_home: Path, mode: str, kind: str
) -> None:
    """The rule names the model's command, which is what Claude Code checks: nothing of
    corral's is in it. An ask rule in `-p` is a refusal (nobody to ask)."""
    install(claude, {"allow": ALLOW[mode], kind: ["Bash(python3 -m http.server:*)"]})
    port = free_port()
    script: list[Turn] = [bash(f"python3 -m http.server {port}", background=True), Text("ok")]
    run = claude.run("go", script, args=args(mode), timeout=180)
    [result] = run.tool_results()
    text = block_text(result)
    assert result["is_error"] is True, run.explain()
    assert "Auto mode is unavailable" not in text, run.explain()  # the rule decided
    assert records(corral_home) == [] and not listening(port)


DUMP = """\
#!/bin/sh
# a user's own prefix that dumps what Claude Code hands the prefix (the string, then the
# whole environment, sorted), then runs it
{{ printf '%s\\n' "$1"; env -0 | sort -z | tr '\\0' '\\n'; echo =====; }} >> {log}
exec /bin/bash -c "$1"
"""
# 2.1.332's permission modes (`default` is what the CLI calls manual mode).
MODES = ("default", "auto", "acceptEdits", "bypassPermissions", "dontAsk", "plan")


def test_the_prefix_receives_the_same_string_and_environment_in_every_mode(
    claude: ClaudeCLI, tmp_path: Path, corral_home: Path
) -> None:
    """What Claude Code hands the prefix (through a user's prefix chained behind corral's),
    string and environment, is the same in every permission mode once the names of the run
    (session, pid, ports, tokens) are set aside: nothing in it tells the modes apart, and
    the prefix treats the command the same, a supervised job of the same record in each.
    SessionStart and PreToolUse hooks ran through it too."""
    theirs, log = tmp_path / "their-prefix", tmp_path / "seen.log"
    theirs.write_text(DUMP.format(log=log))
    theirs.chmod(0o755)
    settings: dict[str, Any] = {"env": {prefix.PREFIX: str(theirs)}}
    claude.write_settings(settings)
    install(claude, {"allow": ["Bash(python3 -m http.server:*)"]})
    local = claude.settings_path().with_name("settings.local.json")
    env_block = json.loads(local.read_text())["env"]
    assert env_block[prefix.CHAINED] == str(theirs)
    command = "python3 -m http.server --help"  # a long runner's word: supervised
    seen: dict[str, str] = {}
    jobs: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        log.unlink(missing_ok=True)
        run = claude.run("go", [bash(command), Text("ok")], args=args(mode), timeout=180)
        assert run.returncode == 0, run.explain()
        assert "--bind" in block_text(run.tool_results()[0]), run.explain()
        seen[mode] = _normalise(log.read_text(), claude)
        [job] = [j for j in records(corral_home) if j["id"] not in {j["id"] for j in jobs.values()}]
        jobs[mode] = job
    for mode in MODES[1:]:
        assert seen[mode] == seen["default"], mode
    same = ("command", "mode", "identity", "port", "state", "exit_code", "cwd", "shell")
    assert len({tuple(j[k] for k in same) for j in jobs.values()}) == 1, jobs
    assert jobs["auto"]["mode"] == "task" and jobs["auto"]["exit_code"] == 0
    text = seen["default"]
    assert "corral-hook session-start" in text and "corral-hook pre-tool-use" in text
    assert f"eval '{command}' < /dev/null && pwd -P >| " in text
    assert "permission" not in text.lower()
    assert prefix.CHAINED not in text  # taken out before anything runs


def _normalise(dump: str, claude: ClaudeCLI) -> str:
    """The dump without what differs between any two runs: the session, the CLI's pid, its
    messaging token, the fake API's port, the job's id and temporary names."""
    import re

    for session in set(re.findall(r"CLAUDE_CODE_SESSION_ID=([\w-]+)", dump)):
        dump = dump.replace(session, "<session>")
    for pid in set(re.findall(r"CLAUDE_PID=(\d+)", dump)):
        dump = re.sub(rf"\b{pid}\b", "<pid>", dump)
    dump = dump.replace(str(claude.tmp), "<tmp>")
    dump = re.sub(r"CLAUDE_CODE_MESSAGING_TOKEN=\w+", "CLAUDE_CODE_MESSAGING_TOKEN=<token>", dump)
    dump = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", dump)
    dump = re.sub(r"CORRAL_JOB=[0-9a-f]+", "CORRAL_JOB=<job>", dump)  # the supervised job's
    dump = re.sub(r"snapshot-bash-\d+-\w+\.sh", "snapshot.sh", dump)
    return re.sub(r"claude-[0-9a-f]+-cwd", "cwd", dump)
