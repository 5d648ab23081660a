"""The supervisor drops `NAME=value` assignments from simple lines without loading `re`:
the hand-written scanner gives exactly what the regular expression gives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corral.lowlevel import redact

REDACT = Path(redact.__file__).resolve()


def by_regex(line: str) -> str:
    return redact._assignments_pattern().sub(lambda m: m.group(1), line)


def plain(line: str) -> bool:
    return line.isascii() and not any(c in line for c in ("'", '"', "\\", "env", "sudo"))


TABLE = [
    ("PORT=3000 npm run dev", "npm run dev"),
    ("A=1 B=2 make", "make"),
    ("A=1 B=2", "B=2"),  # the last word sets nothing: it is the command
    ("A= x", "A= x"),  # no value: not an assignment to the regex either
    ("A=1;B=2 x", "A=1;x"),
    ("cd app && NODE_ENV=production npm start", "cd app && npm start"),
    ("(X=1 y) | Z=2 w", "(y) | w"),
    ("x=1\ty=2\n z=3 cmd", "cmd"),
    ("echo A=1 B=2", "echo A=1 B=2"),
    ("A=x(B=1 y", "y"),
    ("1A=2 x", "1A=2 x"),
    ("", ""),
]


@pytest.mark.parametrize(("line", "shown"), TABLE)
def test_table(line: str, shown: str) -> None:
    assert plain(line)
    assert redact._drop_plain_assignments(line) == by_regex(line) == shown


_PIECES = st.sampled_from(
    ["A", "b_1", "=", "==", "1", "x", " ", "  ", "\t", "\n", ";", "&", "|", "(", ")", "-", "/"]
)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(st.lists(_PIECES, max_size=16).map("".join), st.text(alphabet="Ab1= ;&|(\n\t")))
def test_scanner_is_the_regex(line: str) -> None:
    assert redact._drop_plain_assignments(line) == by_regex(line)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="AB1= ;&|(\n\t'\"\\envsudo"))
def test_drop_assignments_is_the_regex_loop(line: str) -> None:
    expected, previous = line, None
    while previous != expected:
        previous, expected = expected, by_regex(expected)
    assert redact._drop_assignments(line) == expected


def test_assignment_line_does_not_load_re() -> None:
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import redact; "
        "assert redact.display_command('PORT=3000 npm run dev') == 'npm run dev'; "
        "assert redact.display_command('cd web && HOST=0 vite --port=5173') "
        "== 'cd web && vite --port=5173'; "
        "print('re' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(REDACT.parent)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["False"]
