"""Numbers, ages and paths as people read them have one home, corral.core.human: the CLI's
tables and the tui import it there (no re-export under corral.cli)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

CLI = Path(__file__).resolve().parents[2] / "src" / "corral" / "cli"


def test_the_cli_reads_core_human_itself() -> None:
    assert importlib.util.find_spec("corral.cli.human") is None
    users = []
    for path in CLI.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and "human_age" in {a.name for a in node.names}:
                users.append((path.name, node.module))
    assert users and all(module == "corral.core.human" for _, module in users), users
