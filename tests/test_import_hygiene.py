"""Start-up budgets: the supervisor is stdlib-only and loads nothing heavy (the layers are
tests/test_import_contracts.py's)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import LAUNCHER

SRC = Path(__file__).resolve().parent.parent / "src" / "corral"
HEAVY = ("psutil", "textual", "rich", "click", "starlette", "mcp", "asyncio", "uvicorn",
         "tree_sitter", "json", "typing", "enum", "re")  # fmt: skip


def test_supervisor_imports_only_light_stdlib(corral_home: Path) -> None:
    # What the module loads when imported. What a running supervisor loads by the time its
    # job ends is tests/test_supervisor_footprint.py's (it runs from the exit handlers).
    code = (
        "import sys, runpy; sys.argv = ['s', '--job', 'f'*32, '--', 'true'];\n"
        "try:\n"
        f"    runpy.run_path({str(LAUNCHER)!r}, run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        # flushed now: the supervisor runs from the exit handlers and leaves by os._exit
        "print(' '.join(sorted(sys.modules)), flush=True)"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "corral.supervisor.program" in out, out  # the probe saw the supervisor's imports
    loaded = {m.split(".")[0] for m in out}
    ours = {m for m in out if m.startswith("corral")}
    supervisor = {
        f"corral.supervisor.{m}"
        for m in ("program", "job", "options", "signals", "system", "front", "logwatch")
    }
    floor = {m for m in ours if m.startswith("corral.lowlevel.")}
    assert ours - floor <= {"corral", "corral.supervisor", "corral.lowlevel", *supervisor}
    assert floor <= {f"corral.lowlevel.{m}" for m in FLOOR}
    assert not loaded & {"psutil", "textual", "rich", "starlette", "mcp", "asyncio"}


FLOOR = (
    "locations",
    "logline",
    "procfs",
    "record",
    "redact",
    "sockdiag",
    "sockets",
    "shells",
    "libc",
    "joblog",
)


def test_supervisor_and_floor_import_only_the_floor() -> None:
    for folder, allowed in (
        ("supervisor", ("corral.lowlevel", "corral.supervisor")),
        ("lowlevel", ("corral.lowlevel",)),
    ):
        for path in (SRC / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = [node.module or ""]
                for name in names:
                    if name.startswith("corral"):
                        assert name.startswith(allowed), f"{path.relative_to(SRC)}: {name}"


def test_package_init_files_stay_empty() -> None:
    # One exception: the Claude Code surface's package holds what its hook and its status
    # line share (the strict JSON reader), saving each a module load per start; it imports
    # nothing when loaded.
    shared = SRC / "surfaces" / "claude" / "__init__.py"
    for init in SRC.rglob("__init__.py"):
        assert init == shared or init.read_text().strip() == "", init
    top = ast.parse(shared.read_text()).body
    assert not [n for n in top if isinstance(n, ast.Import | ast.ImportFrom)]


def _imported(path: Path) -> list[str]:
    """The top-level names of the modules `path` imports, anywhere in it."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append((node.module or "").split(".")[0])
    return names


def test_only_the_mcp_surface_imports_the_mcp_sdk() -> None:
    """`mcp` (and the anyio it brings) is for `corral mcp` alone: no other module imports
    it, so no other command pays for it."""
    for path in SRC.rglob("*.py"):
        if path == SRC / "surfaces" / "mcp.py":
            continue
        wrong = {"mcp", "anyio"} & set(_imported(path))
        assert not wrong, f"{path.relative_to(SRC)} imports {wrong}"


def test_run_ls_and_logs_do_not_load_the_mcp_sdk(corral_home: Path) -> None:
    code = (
        "import sys; from corral.cli import main;\n"
        "for argv in (['ls'], ['logs', 'nosuchjob'], ['run', '-d', '-c', 'true']):\n"
        "    main.main(argv)\n"
        # flushed now: the supervisor runs from the exit handlers and leaves by os._exit
        "print(' '.join(sorted(sys.modules)), flush=True)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert not {m.split(".")[0] for m in out} & {"mcp", "anyio"}


def _loaded(argv: list[str], stdin: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules a program imports as it runs (`-X importtime`)."""
    import os

    result = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]], input=stdin, capture_output=True, text=True,
        check=True, env={**os.environ, **(env or {})},
    )  # fmt: skip
    return {
        line.split("|")[2].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    } - {"imported package"}


def test_the_hooks_wrapped_line_imports_no_typing(tmp_path: Path, corral_home: Path) -> None:
    """The wrapped line's start-up budget (bench/bench_hook.py): value classes come from the
    floor's NamedTuple (typing's costs ~0.25 ms a class to define) and tree-sitter's runtime
    binding is loaded without its package, whose __init__ imports typing for one Protocol."""
    import json

    from corral.surfaces.claude import hook

    data = {"session_id": "s", "tool_use_id": "toolu_1", "cwd": str(tmp_path),
            "hook_event_name": "PreToolUse", "permission_mode": "default", "tool_name": "Bash",
            "tool_input": {"command": "npm run dev", "run_in_background": True}}  # fmt: skip
    modules = _loaded(hook.command("pre-tool-use"), json.dumps(data))
    assert {"corral.service.admission", "corral.core.shell.parse"} <= modules
    assert not modules & {"typing", "tree_sitter", "tree_sitter_bash", "dataclasses"}
    assert "corral.core.outcomes" not in modules  # the job states' enums: not on this path


def test_the_status_line_loads_no_struct(tmp_path: Path, corral_home: Path) -> None:
    """The netlink messages are packed with int.to_bytes: `_struct` is a shared library of
    its own (~0.4 ms to load on every status line update)."""
    import json

    from corral.surfaces.claude import statusline
    from tests.helpers import corral, start_job

    start_job("sleep 60", cwd=tmp_path)
    try:
        data = {
            "session_id": "s",
            "cwd": str(tmp_path),
            "workspace": {"project_dir": str(tmp_path)},
        }
        modules = _loaded(statusline.command(), json.dumps(data))
    finally:
        corral("stop", "--all", check=True)
    assert "corral.lowlevel.sockdiag" in modules and "_socket" in modules
    assert not modules & {"_struct", "struct", "typing"}


@pytest.mark.parametrize(
    ("agent", "event", "payload"),
    [
        ("codex", "pre-tool-use", {"tool_name": "Bash", "tool_input": {"command": "ls -la"}}),
        ("gemini", "before-tool",
         {"tool_name": "run_shell_command", "tool_input": {"command": "ls", "dir_path": ""}}),
        ("qwen", "pre-tool-use",
         {"tool_name": "run_shell_command",
          "tool_input": {"command": "ls", "is_background": False}}),
        ("opencode", "tool-before",
         {"tool": "bash", "args": {"command": "git status", "workdir": "src"}, "directory": "/"}),
    ],
)  # fmt: skip
def test_agent_hooks_answer_a_plain_line_as_lightly_as_the_claude_hook(
    agent: str, event: str, payload: dict[str, object], tmp_path: Path
) -> None:
    # Every shell call of the agent pays this start-up: the same budget as the Claude hook's
    # (tests/surfaces/claude/test_hook.py), launched from bytecode the same way.
    from corral.surfaces.agents import run_hook

    data = {**payload, "session_id": "s", "cwd": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *run_hook.command(agent, event)[1:]],
        input=json.dumps(data), capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert result.stdout == ""
    modules = {line.split("|")[2].strip() for line in result.stderr.splitlines()[1:]}
    assert f"corral.surfaces.agents.{agent}" in modules
    heavy = {*HEAVY, "dataclasses", "pathlib", "site", "socket", "corral.core.shell.plan",
             "corral.service.admission", "tomllib", "subprocess"}  # fmt: skip
    assert not heavy & modules


def test_only_the_tui_surface_imports_textual() -> None:
    """`textual` is for `corral tui` alone (surfaces/tui/): no other module imports it."""
    tui = SRC / "surfaces" / "tui"
    for path in SRC.rglob("*.py"):
        if tui not in path.parents:
            assert "textual" not in _imported(path), f"{path.relative_to(SRC)} imports textual"


def test_hook_status_line_prefix_and_plain_corral_do_not_load_textual(corral_home: Path) -> None:
    """The hook's, the status line's and the prefix's modules, and `corral` with no
    arguments off a terminal (it prints its usage), load no textual."""
    code = (
        "import sys, contextlib, io\n"
        "import corral.surfaces.claude.run_hook, corral.surfaces.claude.run_statusline\n"
        "import corral.surfaces.claude.run_prefix, corral.surfaces.claude.hook\n"
        "import corral.surfaces.claude.statusline, corral.surfaces.claude.prefix\n"
        "from corral.cli import main\n"
        "with contextlib.redirect_stderr(io.StringIO()):\n"
        "    try:\n"
        "        main.main([])\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code == 2, exc.code\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        stdin=subprocess.DEVNULL,
    ).stdout.split()  # fmt: skip
    assert "corral.surfaces.claude.hook" in out
    assert not {m.split(".")[0] for m in out} & {"textual"}


@pytest.mark.parametrize("module", sorted(p.stem for p in (SRC / "lowlevel").glob("*.py")))
def test_every_floor_module_imports_in_a_bare_interpreter(module: str) -> None:
    """The floor runs without `from __future__ import annotations` (a module to load on
    every start): an annotation naming a typing-only name must be a string, or the import
    fails with NameError (it once did, for record.session_from, and every `corral run`)."""
    code = f"import sys; sys.path.insert(0, {str(SRC.parent)!r}); import corral.lowlevel.{module}"
    subprocess.run([sys.executable, "-I", "-S", "-c", code], check=True, timeout=60)


def test_the_hooks_post_tool_use_reads_the_pending_folder_without_json_or_typing(
    tmp_path: Path, corral_home: Path
) -> None:
    """After every Bash call the hook looks for servers awaiting their URL: it names their
    folder by started.PENDING_FOLDER (its one spelling) and loads neither json nor typing
    for it."""
    import json

    from corral.surfaces.claude import hook, started

    (corral_home / started.PENDING_FOLDER).mkdir()
    data = {"session_id": "s", "tool_use_id": "toolu_1", "cwd": str(tmp_path),
            "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_input": {"command": "ls"}, "tool_response": {"stdout": ""}}  # fmt: skip
    modules = _loaded(hook.command("post-tool-use"), json.dumps(data))
    assert "corral.surfaces.claude.started" in modules
    assert not modules & {"typing", "json", "dataclasses"}
    spelled = [p.name for p in SRC.rglob("*.py") if '"hook-pending"' in p.read_text()]
    assert spelled == ["started.py"]
