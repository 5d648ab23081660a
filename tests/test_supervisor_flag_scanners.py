"""The scanners that hide secret-looking flag and NAME=value values on plain lines give
exactly what the regular expressions of those rules give (and so never show more)."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from corral.lowlevel import redact

_PIECES = st.sampled_from(
    [
        "-", "--", "---", "=", "==", " ", "  ", "\t", "\n", ";", "&", "|", "(", ":", "/", "*",
        "x", "X1", "_", "abc", "token", "TOKEN", "tokens", "tokenizer", "author", "authority",
        "auth", "key", "Key", "keyword", "monkey", "pass", "passes", "passwd", "bypass", "pwd",
        "session", "-id", "_id", "id", "api", "secret", "dsn", "cookie", "credential",
    ]
)  # fmt: skip
_PLAIN_LINES = st.lists(_PIECES, max_size=14).map("".join)


def regex_rule(index: int, text: str) -> str:
    pattern, replacement = redact._rules()[index]
    return re.compile(pattern).sub(replacement, text)


@settings(max_examples=2000, deadline=None)
@given(_PLAIN_LINES)
@example("--token abc --password def")
@example("x -api-key=1 --author me --tokens 3 --my-tokens-x y")
@example("--token\n--x y")
@example("TOKEN=1=2 MY_KEY=x;AUTHOR=y session-id=z")
def test_scanners_are_the_regexes(line: str) -> None:
    assert redact._hide_flag_values(line, glued=True) == regex_rule(redact._FLAG_GLUED, line)
    assert redact._hide_flag_values(line, glued=False) == regex_rule(redact._FLAG_SPACED, line)
    assert redact._hide_named_values(line) == regex_rule(redact._NAME_VALUE, line)


@settings(max_examples=1500, deadline=None)
@given(_PLAIN_LINES)
def test_display_with_scanners_is_display_with_every_rule(line: str) -> None:
    assert redact.display_command(line) == redact._display_all_rules(line)


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("npm run dev --token abc123", "npm run dev --token ***"),
        ("deploy --api-key=k1 --port 3000", "deploy --api-key=*** --port 3000"),
        ("make TOKEN=t1 all", "make TOKEN=*** all"),
        ("git log --author=me --max-tokens 256", "git log --author=me --max-tokens 256"),
        ("cmd --password -x", "cmd --password -x"),  # the next word is an option, not a value
    ],
)
def test_table(line: str, shown: str) -> None:
    assert redact.display_command(line) == shown == redact._display_all_rules(line)


def test_the_scanned_rules_are_the_ones_named() -> None:
    sources = redact._rules()
    assert "=)" in sources[redact._FLAG_GLUED][0]
    assert r"\s+)(?!-)" in sources[redact._FLAG_SPACED][0]
    assert sources[redact._NAME_VALUE][0].startswith(r"(?i)(\b")


def test_trigger_tables_line_up_with_the_rules() -> None:
    assert len(redact._TRIGGER_GROUPS) == len(redact._rules())
    assert all(all(group) for groups in redact._TRIGGER_GROUPS for group in groups)
    assert len(redact._SHAPE_WORDS) == len(redact._KEY_SHAPES)
