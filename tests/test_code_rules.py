"""Rules over the production code itself: no `assert` (python -O strips them, and a failed
one is a traceback, not an answer), one audit writer, one error hierarchy."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "corral"


def _trees() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(), str(p))) for p in sorted(SRC.rglob("*.py"))]


def test_no_assert_in_production_code() -> None:
    found = [
        f"{path.relative_to(SRC)}:{node.lineno}"
        for path, tree in _trees()
        for node in ast.walk(tree)
        if isinstance(node, ast.Assert)
    ]
    assert found == []


def test_one_audit_writer() -> None:
    """Every stop is audited through service.audit: nothing else calls the store's writer."""
    callers = [
        f"{path.relative_to(SRC)}:{node.lineno}"
        for path, tree in _trees()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "audit"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "db"
    ]
    assert callers == ["service/audit.py:" + callers[0].split(":")[1]] if callers else False
    defined = [
        f"{path.relative_to(SRC)}:{node.name}"
        for path, tree in _trees()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name == "_audit"
    ]
    assert defined == []


def test_every_error_class_is_drawn_in_the_hierarchy() -> None:
    from corral import errors

    doc = errors.__doc__ or ""
    classes = [
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, Exception)
    ]
    assert classes and all(name in doc for name in classes), classes


def test_target_selection_is_not_the_cli_s() -> None:
    """CLI commands parse, call one service function and render: none reads the ledger or
    resolves job ids itself (service.stopping selects the targets)."""
    reads = [
        f"{path.relative_to(SRC)}:{node.lineno}"
        for path, tree in _trees()
        if path.parent.name == "cli"
        for node in ast.walk(tree)
        if (isinstance(node, ast.ImportFrom) and node.module == "corral.adapters"
            and any(a.name == "ledger" for a in node.names))
        or (isinstance(node, ast.Attribute) and node.attr in ("read_all", "stop_records"))
    ]  # fmt: skip
    assert reads == []
