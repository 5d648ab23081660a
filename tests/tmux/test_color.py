"""Colours in the pane: `[tmux] color = "force"` asks the job's tools for colours, shows them
in the pane and strips exactly the SGR escapes from the caller's copy. The default, plain,
keeps the caller's bytes exactly those of the default backend (see test_transparency)."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corral import config
from corral.backends.tmux.tmux_pane import _SgrStripper
from tests.helpers import wait_for
from tests.tmux.conftest import TmuxEnv, default_argv, wrapper_argv

# rich colours on a terminal, or when FORCE_COLOR is set
RICH = f"{sys.executable} -c \"import rich; rich.get_console().print('[red]red[/red] ok')\""
SGR_LINE = "printf '\\033[1mbold\\033[0m\\n'"


def _run(argv: list[str], **kw: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, timeout=60, **kw)  # type: ignore[call-overload, no-any-return]


def _pane(tmux_env: TmuxEnv, window: str) -> str:
    """The kept window's screen, with its colours as escapes, once it shows the job's end
    (the tmux server draws what the pane's terminal got on its own schedule)."""

    def screen() -> str:
        return tmux_env.tmux("capture-pane", "-e", "-p", "-t", f"my_project_x:{window}").stdout

    shown: str = wait_for(lambda: "job ended" in screen() and screen(), what="the job's end")
    return shown


def _force(home: Path) -> None:
    (home / "config.toml").write_text('[tmux]\ncolor = "force"\nkeep_windows = true\n')


def test_forced_colours_show_in_the_pane_and_not_in_the_callers_copy(
    tmux_env: TmuxEnv, corral_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The job gets the caller's TERM, and rich prints no colour at all for TERM=dumb (or
    # unknown), FORCE_COLOR or not: the caller here is an agent run from a colour terminal.
    monkeypatch.setenv("TERM", "xterm-256color")
    expected = _run(default_argv(RICH))
    assert expected.stdout == b"red ok\n"  # on a pipe, rich prints no colour
    _force(corral_home)
    got = _run(wrapper_argv(RICH))
    assert (got.stdout, got.stderr, got.returncode) == (expected.stdout, b"", 0)
    pane = _pane(tmux_env, "python")
    assert "\x1b[31mred" in pane  # the pane shows it in red


def test_plain_mode_shows_plain_text_in_the_pane(tmux_env: TmuxEnv, corral_home: Path) -> None:
    (corral_home / "config.toml").write_text("[tmux]\nkeep_windows = true\n")
    got = _run(wrapper_argv(RICH))
    assert got.stdout == b"red ok\n"
    assert "\x1b[31m" not in _pane(tmux_env, "python")


def test_forced_colours_change_lines_that_print_sgr_themselves(
    tmux_env: TmuxEnv, corral_home: Path
) -> None:
    # the documented cost of color = "force": the caller loses SGR escapes the line
    # printed on purpose; the default (plain) keeps them (LINES in test_transparency)
    expected = _run(default_argv(SGR_LINE))
    assert expected.stdout == b"\x1b[1mbold\x1b[0m\n"
    _force(corral_home)
    got = _run(wrapper_argv(SGR_LINE))
    assert got.stdout == b"bold\n"


def test_nothing_is_forced_when_the_user_chose_colours(
    tmux_env: TmuxEnv, corral_home: Path
) -> None:
    _force(corral_home)
    line = 'echo "${FORCE_COLOR-unset} ${CLICOLOR_FORCE-unset}"; ' + SGR_LINE
    got = _run(wrapper_argv(line))
    assert got.stdout == b"1 1\nbold\n"
    for preset in ({"NO_COLOR": "1"}, {"FORCE_COLOR": "0"}, {"CLICOLOR_FORCE": "1"}):
        env = {**os.environ, **preset}
        expected = _run(default_argv(line), env=env)
        got = _run(wrapper_argv(line), env=env)
        assert got.stdout == expected.stdout  # no variable set, no escape stripped


def test_color_setting(corral_home: Path) -> None:
    assert config.tmux_color() == "plain"
    (corral_home / "config.toml").write_text('[tmux]\ncolor = "force"\n')
    assert config.tmux_color() == "force"
    (corral_home / "config.toml").write_text('[tmux]\ncolor = "rainbow"\n')
    assert config.tmux_color() == "plain"


SGR = st.sampled_from(
    [b"\x1b[0m", b"\x1b[31m", b"\x1b[1;38;5;208m", b"\x1b[38:2::1:2:3m", b"\x1b[m"]
)
OTHER = st.sampled_from(
    [b"a", b"\n", b"\x1b", b"[", b"m", b"1;", b"\x1b[2K", b"\x1b]8;;x\x1b\\", b"\xe2\x9c\x93"]
)


@given(st.lists(st.one_of(SGR, OTHER), max_size=40), st.lists(st.integers(0, 200), max_size=8))
def test_sgr_stripping_does_not_depend_on_how_the_stream_is_split(
    pieces: list[bytes], cuts: list[int]
) -> None:
    stream = b"".join(pieces)
    whole = re.sub(rb"\x1b\[[0-9;:]*m", b"", stream)
    stripper = _SgrStripper()
    bounds = sorted({min(c, len(stream)) for c in cuts} | {0, len(stream)})
    out = b"".join(stripper.feed(stream[a:b]) for a, b in itertools.pairwise(bounds))
    assert out + stripper.flush() == whole
