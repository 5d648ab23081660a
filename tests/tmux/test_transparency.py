"""The agent's view: stdout and exit status through the tmux backend match the default."""

from __future__ import annotations

import subprocess

import pytest

from tests.helpers import wait_for
from tests.tmux.conftest import TmuxEnv, default_argv, wrapper_argv

LINES = [
    "echo hello",
    "echo",
    "true",
    "false",
    "exit 7",
    "exit 255",
    "echo out; exit 3",
    "printf 'no newline'",
    "printf 'a\\nb\\nc\\n'",
    "printf '%s\\n' 'single quotes' \"double quotes\"",
    "echo 'it''s'",
    'echo "$((6 * 7))"',
    "for i in 1 2 3 4 5; do echo line $i; done",
    "seq 1 20000",
    "head -c 300000 /dev/zero | tr '\\0' 'x'",
    "yes 'a long line of output to fill pipes' | head -n 5000",
    "echo héllo wörld ✓ 日本語 🚀",
    "printf '\\xe2\\x9c\\x93\\n'",
    "printf 'tab\\there\\n'",
    "printf 'cr\\r\\n'",
    "echo one | tr a-z A-Z",
    "echo a b c | wc -w",
    "echo to-stderr >&2; echo to-stdout",
    "echo x > /dev/null; echo y",
    "sh -c 'exit 4'",
    "(echo sub; exit 5)",
    "echo start; sleep 0.2; echo end",
    "python3 -c 'import sys; print(\"py\", flush=True); sys.exit(9)'",
    "python3 -c 'print(\"\\n\".join(str(i) for i in range(3000)))'",
    "set -e; false; echo never",
    "echo $CORRAL_JOB | wc -c",
    'test -n "$CORRAL_JOB" && echo marked',
    "cd / && pwd",
    "echo a; echo b >&2; echo c",
    "kill -TERM $$",
    "kill -INT $$",
    "printf '%s' \"$(printf 'x%.0s' $(seq 1 100))\"",
    "printf 'binary \\001\\002\\377\\n'",
    "printf '\\033[1;31mred\\033[0m plain\\n'",  # SGR escapes: kept (default color=plain)
    "printf '\\033[2K\\r50%%\\r100%%\\n'",  # a progress line
    "cat; echo read-$?",  # stdin: the caller's (here /dev/null)
]


def _run(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, timeout=60)


@pytest.mark.parametrize("line", LINES)
def test_stdout_and_status_match_the_default_backend(tmux_env: TmuxEnv, line: str) -> None:
    expected = _run(default_argv(line))
    got = _run(wrapper_argv(line))
    assert got.stdout == expected.stdout
    assert got.returncode == expected.returncode
    assert got.stderr == expected.stderr  # kept apart: stdout and stderr are separate pipes
    assert tmux_env.leftovers() == []


def test_the_record_names_the_backend_and_the_window(tmux_env: TmuxEnv, corral_home) -> None:
    import json

    result = _run(wrapper_argv("npm run dev -- --port 5174 || true"))
    assert result.returncode == 0
    (path,) = (corral_home / "ledger").glob("*.json")
    record = json.loads(path.read_text())
    assert record["backend"] == "tmux"
    assert record["tmux"] == "my_project_x:dev-5174"
    assert record["tmux_pane"].startswith("%")
    assert record["state"] == "exited"
    # the finished job's window closes (once the tmux server has seen its pane exit)
    wait_for(lambda: tmux_env.windows() == [], what="window closed")
