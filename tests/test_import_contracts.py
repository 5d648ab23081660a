"""Import contracts (issue 10, item 5; STYLE.md 1): the package's layers import downward only,
the supervisor and the tmux backend's programs import only the floor, and no module imports
itself back through others (no cycle), counting the imports made inside functions too.

    lowlevel  <-  core, errors  <-  paths, config, adapters, store  <-  service
              <-  surfaces  <-  cli, __main__
    supervisor -> lowlevel only;  backends -> lowlevel, config, adapters.tmux
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "corral"

FLOOR = {"lowlevel"}
CORE = FLOOR | {"core", "errors"}
BELOW_SERVICE = CORE | {"paths", "config", "adapters", "store"}
ALLOWED: dict[str, set[str]] = {  # a module of each layer may import from these layers only
    "lowlevel": FLOOR,
    "supervisor": FLOOR | {"supervisor"},
    "core": CORE,
    "errors": set(),
    "paths": FLOOR,
    "config": FLOOR | {"paths", "errors"},
    "adapters": CORE | {"paths", "adapters"},
    "store": CORE | {"paths", "store"},
    "backends": FLOOR | {"backends", "config", "adapters.tmux"},
    "service": BELOW_SERVICE | {"service"},
    "surfaces": CORE | {"paths", "config", "service", "surfaces"},
    "cli": BELOW_SERVICE | {"service", "surfaces", "backends", "cli"},
    "__main__": {"cli"},
}
# Known edges that break the rule, each with its reason; the list may only shrink.
EXEMPT = {
    # `corral attach` hands the terminal to tmux itself: a service call would only pass
    # the pane through.
    ("corral.cli.attach", "corral.adapters.tmux"),
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in PACKAGE.rglob("*.py")}


def imports(module: str) -> set[str]:
    """The corral modules `module` imports anywhere in its source (functions included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from corral.x import y`: y is a module when it has a file, else a name in x
            names = [
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES else node.module
                for a in node.names
            ]
        found |= {n for n in names if n.split(".")[0] == "corral" and n != module}
    return found


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _allowed(target: str, allowed: set[str]) -> bool:
    rest = target.split(".", 1)[1] if "." in target else ""
    return any(rest == a or rest.startswith(a + ".") for a in allowed)


def test_layers_import_downward_only() -> None:
    wrong = []
    for module in MODULES:
        if module == "corral":
            continue
        allowed = ALLOWED[_layer(module)]
        for target in imports(module):
            if not _allowed(target, allowed) and (module, target) not in EXEMPT:
                wrong.append(f"{module} imports {target}")
    assert not wrong, "\n".join(sorted(wrong))


def test_floor_and_programs_import_only_what_they_may() -> None:
    for module in MODULES:
        layer = _layer(module)
        if layer in ("lowlevel", "supervisor"):
            assert all(_layer(t) in ("lowlevel", layer) for t in imports(module)), module


# The tui is a surface that asks the service for everything (rows, stops, restarts, logs,
# clean) and the daemon for refreshes: it reads no ledger, process table or database itself.
TUI_MAY_IMPORT = {"core", "errors", "service", "surfaces.tui", "surfaces.daemon"}


def test_the_tui_surface_goes_through_the_service() -> None:
    tui = [m for m in MODULES if m.startswith("corral.surfaces.tui.")]
    assert "corral.surfaces.tui.app" in tui and _layer(tui[0]) == "surfaces"
    wrong = [
        f"{module} imports {target}"
        for module in tui
        for target in imports(module)
        if not _allowed(target, TUI_MAY_IMPORT)
    ]
    assert not wrong, "\n".join(sorted(wrong))


def test_exemptions_are_still_needed() -> None:
    for module, target in EXEMPT:
        assert target in imports(module), f"{module} no longer imports {target}: drop it"


def test_no_import_cycles() -> None:
    graph = {m: {t for t in imports(m) if t in MODULES} for m in MODULES}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    assert not cycles, cycles


def test_the_checker_sees_function_level_imports() -> None:
    assert "corral.lowlevel.locations" in imports("corral.surfaces.claude.pretool")
    assert "corral.lowlevel.redact" in imports("corral.core.shell.jobs")
