"""Invariants over the long-runner table and the start-up budget."""

from __future__ import annotations

import subprocess
import sys

import pytest

from corral.core.shell.launch import classify
from corral.core.shell.plain import may_start_runner
from corral.core.shell.runners import SCRIPT_NAMES, TOOLS, Tool, is_script_name, match_tool


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
def test_every_tool_matches_its_own_words(tool: Tool) -> None:
    words = [alias.split("|")[0] for alias in tool.words] + list(tool.needs[:1])
    found = match_tool(words)
    assert (found is not None and found.name == tool.name) or found in TOOLS[: TOOLS.index(tool)]


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
def test_every_tool_is_a_prefilter_trigger(tool: Tool) -> None:
    line = " ".join(alias.split("|")[0] for alias in tool.words)
    assert may_start_runner(line)


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
def test_table_values_are_sane(tool: Tool) -> None:
    assert tool.words and all(tool.words)
    assert tool.port is None or 0 < tool.port < 65536
    assert all(flag.startswith("-") for flag in (*tool.port_flags, *tool.needs))
    assert not set(tool.needs) & set(tool.never)


def test_tool_names_are_unique() -> None:
    names = [(t.name, t.needs) for t in TOOLS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_script_names(name: str) -> None:
    assert is_script_name(name) and is_script_name(name + ":web")
    assert not is_script_name(name + ":") and not is_script_name(name + "-db")
    for pm in (["npm", "run"], ["yarn"], ["pnpm"], ["bun", "run"]):
        assert classify([*pm, name])[1] is not None


def test_classify_is_total_on_odd_words() -> None:
    for words in (
        [],
        [""],
        ["-"],
        ["npm"],
        ["npm", "--prefix"],
        ["env", "-C"],
        ["python", "-m"],
        ["npx", "--"],
        ["yarn", "workspace"],
        ["pnpm", "exec"],
        ["command", "-v"],
    ):
        classify(words)


def test_plain_lines_do_not_load_the_grammar() -> None:
    code = (
        "import sys\n"
        "from corral.core.shell.plan import decide\n"
        "d = decide('ls -la', background=False, cwd='/w', home='/h')\n"
        "assert d.action == 'untouched' and d.readable, d\n"
        "assert 'tree_sitter' not in sys.modules\n"
        "assert 'tree_sitter_bash' not in sys.modules\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


def test_grammar_loaded_from_the_binding_is_the_packages_own() -> None:
    import subprocess
    import sys

    import tree_sitter
    import tree_sitter_bash

    from corral.core.shell.parse import bash_language

    ours = tree_sitter.Language(bash_language())
    theirs = tree_sitter.Language(tree_sitter_bash.language())
    assert ours.node_kind_count == theirs.node_kind_count
    assert ours.field_count == theirs.field_count
    code = (
        "import sys; from corral.core.shell.parse import read; read('npm run dev & x')\n"
        "print('importlib.resources' in sys.modules, 'tempfile' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize(
    "line",
    ["x{\U000a0f4c6", "echo {1..\U000e8b40}", "echo {12\U000f0000", "ls a?\U00100000", "{日本}"],
)
def test_wide_characters_the_grammar_cannot_scan_are_never_parsed(
    line: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tree-sitter-bash passes them to C's isdigit()/isalpha(): a read outside libc's table
    # that crashed the suite now and then (SIGSEGV in the parser on Hypothesis's text)
    from corral.core.shell import parse

    def no_parser() -> None:
        raise AssertionError("the grammar was asked to parse it")

    monkeypatch.setattr(parse, "_parser", no_parser)
    assert isinstance(parse.read(line), parse.Unreadable)


def test_wide_characters_elsewhere_are_left_to_the_grammar() -> None:
    from corral.core.shell import parse

    assert parse.lexical_reason("x{\U000a0f4c") is not None
    for line in ("echo 日本 {a,b}", "echo é?x {1..3}", "echo 🚀", "echo {é} ?é", "ls 日本?"):
        assert parse.lexical_reason(line) is None, line
    assert not isinstance(parse.read("echo 🚀 日本"), parse.Unreadable)
