"""Every required dependency is imported by corral's code (issue 10): an unused one costs
every user its install size (textual and mcp were 95 MB of venv that nothing imported)."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _imported_top_names() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
            elif (  # core.shell.parse loads a grammar's compiled module by its package name
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "binding"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                names.add(node.args[0].value)
    return names


def test_every_required_dependency_is_imported() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    required = [re.split(r"[<>=!~ ;\[]", spec, maxsplit=1)[0] for spec in project["dependencies"]]
    imported = _imported_top_names()
    unused = [name for name in required if name.lower().replace("-", "_") not in imported]
    assert not unused, f"required but imported nowhere under src/: {unused}"
