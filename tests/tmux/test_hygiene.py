"""The wrapper is on the agent's hot path: it loads nothing heavy."""

from __future__ import annotations

import ast
import subprocess
import sys

from tests.tmux.conftest import WRAPPER, TmuxEnv

HEAVY = {"psutil", "rich", "textual", "asyncio", "subprocess", "json", "tempfile", "platformdirs"}


def test_wrapper_imports_nothing_heavy(tmux_env: TmuxEnv) -> None:
    code = (
        "import sys, runpy; sys.argv = ['w', '--', 'echo hi']\n"
        "try:\n"
        f"    runpy.run_path({str(WRAPPER)!r}, run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=30
    )
    assert result.stdout == "hi\n"
    loaded = {m.split(".")[0] for m in result.stderr.split()}
    assert not loaded & HEAVY


PANE_RUNNER = WRAPPER.parent / "tmux_pane.py"


def test_the_pane_runner_is_a_stdlib_program_of_its_own() -> None:
    for node in ast.walk(ast.parse(PANE_RUNNER.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        assert not [n for n in names if n.split(".")[0] in {"corral", *HEAVY}], names
    code = (
        "import sys, runpy; sys.argv = ['p']\n"
        f"try:\n    runpy.run_path({str(PANE_RUNNER)!r}, run_name='__main__')\n"
        "except SystemExit as exit:\n    print(exit.code)\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=30
    )
    assert result.stdout == "2\n"  # no folder given: the usage text, exit 2
    assert "usage: python3 -I -S tmux_pane.py DIR" in result.stderr
    loaded = {m.split(".")[0] for m in result.stderr.split("\n")[-2].split()}
    assert not loaded & HEAVY and "corral" not in loaded
