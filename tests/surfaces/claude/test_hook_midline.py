"""The hook on a foreground line that sends a server to the background mid-line: only that
command is rewritten, every field kept, the model told which job it is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from corral.surfaces.claude import hook
from tests.helpers import free_port
from tests.surfaces.claude.test_hook import answer, payload, run_hook


def test_only_the_backgrounded_server_is_rewritten(tmp_path: Path) -> None:
    port = free_port()
    tail = f" & sleep 1; curl -s localhost:{port}"
    line = f"python3 -m http.server {port}{tail}"
    result = answer(run_hook("pre-tool-use", payload(line, tmp_path, timeout=9000)))
    new = result["updatedInput"]
    assert {k: v for k, v in new.items() if k != "command"} == {"description": "d", "timeout": 9000}
    command: str = new["command"]
    server = f"python3 -m http.server {port}"
    after = (
        ' function __corral_end { [ -z "${__corral_fn-}" ] || { unset -f python3; '
        "unset __corral_fn; }; unset -f __corral_end; unset __corral_us; }; "
        '__corral_end "$__corral_us";'
    )
    flag = "__corral_fn=1; typeset +x __corral_fn"
    assert command.endswith(f" --async -- '{server}'; }}; {flag}; }}; {server} &{after}"
                            f"{tail[2:]}"), command  # fmt: skip
    words = command.split(" ")
    launcher = str(Path(hook.__file__).resolve().parents[2] / "supervisor" / "launcher.py")
    at = words.index("exec") + 1
    assert words[at : at + 4] == [sys.executable, "-I", "-S", launcher]
    assert "--detached" in words and words[words.index("--port") + 1] == str(port)
    token = words[words.index("--job") + 1]
    context = result["additionalContext"]
    assert f"`python3 -m http.server {port}` as job {token[:8]} in {tmp_path}, port {port}" in (
        context
    )
    assert "rewritten in place" in context
    assert "permissionDecision" not in result  # no rule speaks for this line


def test_a_runner_it_cannot_move_exactly_runs_as_written(tmp_path: Path) -> None:
    result = run_hook("pre-tool-use", payload("vite --port $P & sleep 1", tmp_path))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_a_plain_background_command_mid_line_runs_as_written(tmp_path: Path) -> None:
    result = run_hook("pre-tool-use", payload("sleep 5 & wait", tmp_path))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_the_in_place_path_loads_nothing_heavy(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *hook.command("pre-tool-use")[1:]],
        input=json.dumps(payload(f"vite --port {free_port()} & sleep 1", tmp_path)),
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "updatedInput" in result.stdout
    modules = {line.split("|")[2].strip() for line in result.stderr.splitlines()[1:]}
    assert "corral.core.shell.inplace" in modules
    heavy = {"dataclasses", "inspect", "ast", "logging", "pathlib", "urllib.parse", "ipaddress",
             "platformdirs", "tomllib", "psutil", "subprocess", "asyncio"}  # fmt: skip
    assert not heavy & modules


def test_subshell_group_and_setsid_shapes_are_rewritten(tmp_path: Path) -> None:
    """The permission check reads these shapes (their commands match rules as any line's),
    so the hook rewrites the server in them; a deny rule on it still leaves it to Claude."""
    shapes = {  # the line -> what the supervisor is given, and how it follows
        "({} &); sleep 1": ("{}", "; }"),
        "{{ {} & }}; sleep 1": ("{}", "; }"),
        "setsid {} & sleep 1": ("setsid {}", "; }"),
        "( cd web && {} & wait )": ("{}", "; }"),
    }
    for at, (shape, (moved, behind)) in enumerate(shapes.items()):
        server = f"python3 -m http.server {free_port()}"
        line = shape.format(server)
        folder = tmp_path / str(at)  # each in a folder of its own: none is a duplicate
        folder.mkdir()
        result = answer(run_hook("pre-tool-use", payload(line, folder)))
        command = result["updatedInput"]["command"]
        assert f"--async -- '{moved.format(server)}'{behind}" in command, (line, command)
        assert "permissionDecision" not in result
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"deny": ["Bash(python3 -m http.server:*)"]}}))
    server = f"python3 -m http.server {free_port()}"
    denied = run_hook("pre-tool-use", payload(f"({server} &); sleep 1", tmp_path))
    assert (denied.returncode, denied.stdout) == (0, ""), denied.stdout
