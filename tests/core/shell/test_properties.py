"""Hypothesis properties: reading never raises, unreadable lines are never rewritten, the
supervisor receives the original line byte for byte, and quoting round-trips through bash."""

from __future__ import annotations

import shlex
import subprocess

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.core.shell.plan import Decision, decide, quote_for_wrapper

CWD = "/w/proj"
HOME = "/home/u"
WORDS = [
    "npm", "run", "dev", "vite", "yarn", "pnpm", "cd", "web", "&&", "||", "&", ";", "|",
    "--port", "5173", "PORT=3000", ">", "dev.log", "2>&1", "'a b'", '"x y"', "it's", "next",
    "$HOME", "~/x", "(", ")", "{", "}", "#", "\\", "\n", "setsid", "env", "-C", "npx", "go",
    "docker", "compose", "up", "-d", "pushd", "popd", "sleep", "1", "é", "ü", "日本", "'", '"',
]  # fmt: skip
shellish = st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join)
any_text = st.text(max_size=80)
lines = st.one_of(shellish, any_text)


def _decide(line: str, background: bool) -> Decision:
    return decide(line, background=background, cwd=CWD, home=HOME, token="0" * 32)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(lines, st.booleans())
def test_never_raises_and_unreadable_is_never_rewritten(line: str, background: bool) -> None:
    d = _decide(line, background)
    assert d.action in ("wrap", "untouched", "refuse")
    if not d.readable:
        assert d.action == "untouched" and d.rewritten is None and d.jobs == ()
        assert d.reason
    if d.action != "wrap":
        assert d.rewritten is None and d.mode is None


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(shellish, st.booleans())
def test_wrapped_line_reaches_the_supervisor_byte_for_byte(line: str, background: bool) -> None:
    d = _decide(line, background)
    if d.action != "wrap" or d.mode == "in-place":
        return  # in place: test_midline_properties.py
    assert d.rewritten is not None
    text = d.rewritten
    detached = d.mode == "detached"
    if detached:
        assert text.endswith(" &")
        text = text[:-2]
    argv = shlex.split(text)
    assert argv[0] == "corral-run"
    given_line = argv[argv.index("--") + 1]
    assert len(argv) == argv.index("--") + 2
    if detached:
        stripped = line.rstrip()
        assert stripped.endswith("&")
        assert given_line == line[: len(stripped) - 1]
    else:
        assert given_line == line


def _bash_echo(quoted: str) -> str:
    out = subprocess.run(["bash", "-c", f"printf %s {quoted}"], capture_output=True, check=True)
    return out.stdout.decode("utf-8")


no_nul = st.text(alphabet=st.characters(exclude_characters="\x00", exclude_categories=["Cs"]))


@settings(max_examples=60, deadline=None)
@given(no_nul)
def test_quote_round_trips_through_real_bash(line: str) -> None:
    assert _bash_echo(quote_for_wrapper(line)) == line


def test_quote_examples_round_trip() -> None:
    for line in ("it's", "'a b'", "日本 ünï", "a\nb 'c\nd'", "", "'", "$HOME `x` \\n !!"):
        assert _bash_echo(quote_for_wrapper(line)) == line


def test_wrapped_rewrite_runs_the_line_through_real_bash() -> None:
    d = decide(
        "cd web && npm run dev > dev.log 2>&1 &",
        background=False,
        cwd=CWD,
        home=HOME,
        wrapper=["printf", "%s|"],
        token="0" * 32,
    )
    assert d.rewritten is not None
    out = subprocess.run(["bash", "-c", d.rewritten + " wait"], capture_output=True, check=True)
    assert out.stdout.decode().endswith("--|cd web && npm run dev > dev.log 2>&1 |")
