"""The wrapper is on the agent's hot path: it loads nothing heavy."""

from __future__ import annotations

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
