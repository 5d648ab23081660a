"""Reading the model's command out of Claude Code's shell-prefix string: the strings the
real CLI 2.1.332 built (captured with a prefix that dumped its argv, pinned in
tests/claude/samples/shell-prefix-strings.json), the older quoting, and properties."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from corral.core.claude.shell_string import QUOTES, compose, quote, read

_PINNED = json.loads(
    (Path(__file__).parents[2] / "claude" / "samples" / "shell-prefix-strings.json").read_text()
)
SAMPLES = _PINNED["strings"]
ZSH_SAMPLES = _PINNED["zsh_strings"]  # the same CLI with SHELL=/usr/bin/zsh
HEAD_332 = SAMPLES[1].partition("eval '")[0]
HEAD_NO_SESSION = HEAD_332.replace("export CORRAL_SESSION=sess-1\n: && ", "")
HEAD_197 = (
    "source /home/u/.claude/shell-snapshots/snapshot-zsh-1752-abc.sh && "
    "{ shopt -u extglob || setopt NO_EXTENDED_GLOB; } 2>/dev/null || true && "
)
CWD = "/tmp/claude-tmp/claude-8f32-cwd"


def test_the_real_strings_give_the_models_commands() -> None:
    commands = [read(s) for s in SAMPLES]
    assert [c.command if c else None for c in commands] == [
        "echo \"it's\" a 'q' $HOME; cat /proc/$$/cmdline | tr '\\0' ' '; echo; "
        "ps -o pid,pgid,sid,comm -p $$",
        "sleep 0.2; echo bg",
        "cd /tmp && echo multi\nline",
    ]
    first = commands[0]
    assert first is not None
    assert first.style == "2.1.332" and first.shell == "bash" and first.session == "sess-1"
    assert first.cwd_file == "/tmp/claude-tmp/claude-af37-cwd"


def test_the_real_zsh_strings_give_the_models_commands() -> None:
    """With SHELL set to zsh, 2.1.332 builds the same shape around a zsh snapshot."""
    commands = [read(s) for s in ZSH_SAMPLES]
    assert [c.command if c else None for c in commands] == [
        "echo \"it's\" a 'q' $ZSH_VERSION; print -r -- done",
        "sleep 0.2; echo bg",
        "cd /tmp && echo multi\nline",
    ]
    for found, string in zip(commands, ZSH_SAMPLES, strict=True):
        assert found is not None
        assert (found.style, found.shell, found.session) == ("2.1.332", "zsh", "sess-1")
        assert compose(found.command, found.head, found.cwd_file, found.style) == string
    bash_head = SAMPLES[1].partition("eval")[0]
    as_zsh = bash_head.replace(
        "snapshot-bash-1796281731385-zel46c", "snapshot-zsh-1796291240050-6u7ljv"
    )
    assert as_zsh == ZSH_SAMPLES[1].partition("eval")[0]  # only the snapshot's name differs


@pytest.mark.parametrize(
    ("string", "command", "style", "shell", "session"),
    [
        (HEAD_NO_SESSION + "eval 'npm run dev' < /dev/null && pwd -P >| " + CWD,
         "npm run dev", "2.1.332", "bash", None),
        (HEAD_197 + "eval 'echo '\\''hi'\\''' < /dev/null && pwd -P >| " + CWD,
         "echo 'hi'", "2.1.197", "zsh", None),
        ("eval '' < /dev/null && pwd -P >| " + CWD, "", "2.1.332", None, None),
        (HEAD_332 + "eval ''\"'\"'' < /dev/null && pwd -P >| " + CWD, "'", "2.1.332", "bash",
         "sess-1"),
        # the command holds the tail and `eval '` itself: only the real ones count
        (HEAD_332 + "eval 'x'\"'\"' < /dev/null && pwd -P >| /a && eval '\"'\"'y' < /dev/null"
         " && pwd -P >| " + CWD, "x' < /dev/null && pwd -P >| /a && eval 'y", "2.1.332",
         "bash", "sess-1"),
    ],
)  # fmt: skip
def test_table(string: str, command: str, style: str, shell: str, session: str | None) -> None:
    found = read(string)
    assert found is not None
    assert (found.command, found.style, found.shell, found.session) == (
        command,
        style,
        shell,
        session,
    )
    assert compose(found.command, found.head, found.cwd_file, found.style) == string


@pytest.mark.parametrize(
    "string",
    [
        "echo hookran >> /tmp/log",  # a hook command
        "corral statusline",  # the status line
        "npx -y @modelcontextprotocol/server-filesystem /tmp",  # an MCP server
        "",
        HEAD_332 + "eval 'npm run dev' < /dev/null && pwd -P >| relative-cwd",
        HEAD_332 + "eval 'npm run dev' < /dev/null && pwd -P >| /tmp/a b",
        HEAD_332 + "eval 'npm run dev < /dev/null && pwd -P >| " + CWD,  # unclosed quote
        HEAD_332 + "eval 'a'b' < /dev/null && pwd -P >| " + CWD,  # not one word
        HEAD_332 + "eval 'a'\"'\"'b'\\''c' < /dev/null && pwd -P >| " + CWD,  # mixed styles
        HEAD_332 + "noeval 'x' < /dev/null && pwd -P >| " + CWD,
        HEAD_332 + "eval 'x' < /dev/null && pwd -P >| " + CWD + "; rm -rf /",
    ],
)
def test_other_strings_are_not_bash_calls(string: str) -> None:
    assert read(string) is None


commands = st.text(st.characters(exclude_characters="\0"), max_size=60) | st.sampled_from(
    ["'", "''", "'\"'\"'", "'\\''", "eval '", "' < /dev/null && pwd -P >| /x", "a & b"]
)


@given(command=commands, style=st.sampled_from(sorted(QUOTES)), head=st.sampled_from(
    [HEAD_332, HEAD_NO_SESSION, HEAD_197, ""]))  # fmt: skip
@example(command="' < /dev/null && pwd -P >| /x", style="2.1.197", head="")
def test_round_trip(command: str, style: str, head: str) -> None:
    """A command quoted the way Claude Code quotes it reads back exactly."""
    string = compose(command, head, CWD, style)
    found = read(string)
    assert found is not None
    assert found.command == command and found.cwd_file == CWD and found.head == head
    if "'" in command:
        assert found.style == style


@given(st.text(st.characters(exclude_characters="\0"), max_size=200))
def test_any_string_either_reads_back_exactly_or_is_not_a_bash_call(string: str) -> None:
    found = read(string)
    if found is not None:
        assert compose(found.command, found.head, found.cwd_file, found.style) == string


@given(commands, st.text(max_size=40))
def test_a_broken_tail_is_never_read(command: str, junk: str) -> None:
    string = compose(command, HEAD_332, CWD) + (junk if junk.strip() else "; x")
    found = read(string)
    if found is not None:  # the junk made another valid tail: still exact
        assert compose(found.command, found.head, found.cwd_file, found.style) == string


def test_quote_is_one_shell_word() -> None:
    import subprocess

    for style in QUOTES:
        text = "it's \"q\" $HOME `x` \\ ''"
        out = subprocess.run(
            ["bash", "-c", f"printf %s {quote(text, style)}"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert out.stdout == text
