"""Differential: readable lines run as written and through the rewrite (with the real
supervisor behind `corral-run`) give identical stdout, stderr and exit status."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from corral.core.shell.plan import decide
from tests.helpers import LAUNCHER as SUPERVISOR
from tests.lines_corpus import LINES
from tests.test_transparency import assert_same, run_both

LAUNCHER_DIR = Path(tempfile.mkdtemp(prefix="corral-launcher-"))
(LAUNCHER_DIR / "corral-run").write_text(
    f'#!/bin/sh\nexec {sys.executable} -I -S {SUPERVISOR} "$@"\n'
)
(LAUNCHER_DIR / "corral-run").chmod(0o755)


def rewrite(line: str) -> list[str] | None:
    decision = decide(
        line,
        background=True,
        cwd="/work",
        home="/root",
        wrapper=(str(LAUNCHER_DIR / "corral-run"),),
    )
    if decision.action != "wrap" or decision.rewritten is None:
        return None
    return ["bash", "-c", decision.rewritten]


def generated_readable() -> list[str]:
    """Plain lines the reader must accept: words, whole quotes, pipes, lists, redirects."""
    words = [
        "alpha",
        "'two words'",
        '"dq $((6*7))"',
        "héllo",
        "'it''s'",
        "x=1",
        "--flag",
        "beta",
        "'gamma  delta'",
        "42",
        '"日本"',
    ]
    shapes = [
        "echo {w} | tr a-z A-Z",
        "printf '%s\\n' {w} {v} | sort",
        "echo {w} >&2; exit {n}",
        "echo {w} && echo {v} || echo never",
        "false || echo {w} ; exit {n}",
        "seq 1 {n}0 | tail -n 2; echo {v}",
        "echo {w} 1>&2 | cat; echo {v}",
    ]
    lines = []
    for i, shape in enumerate(shapes):
        for j, w in enumerate(words):
            v = words[(i + j + 1) % len(words)]
            lines.append(shape.format(w=w, v=v, n=(i * 7 + j) % 5))
    return lines


WRAPPED = [line for line in LINES + generated_readable() if rewrite(line) is not None]


def test_enough_readable_lines_are_wrapped() -> None:
    assert len(WRAPPED) >= 200, len(WRAPPED)


@pytest.mark.parametrize("line", WRAPPED, ids=[f"{i:03d}" for i in range(len(WRAPPED))])
def test_rewrite_is_transparent(line: str, corral_home: Path) -> None:
    def wrap(text: str) -> list[str]:
        argv = rewrite(text)
        assert argv is not None
        return argv

    direct, wrapped = run_both(line, wrap, env={"CORRAL_HOME": os.environ["CORRAL_HOME"]})
    assert_same(line, direct, wrapped)
