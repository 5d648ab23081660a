"""The grammar-free path: lines that need no decision are told apart by their words alone.

A line with no `&`, not sent to the background, and no word that can start a long runner runs
as written, and corral never loads the shell grammar for it. Whether such a line is readable is
answered here too, for `corral explain`, by a small conservative tokenizer: it says readable
only for plain words, whole quoted strings, `|`, `||`, `;` and redirects.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

from corral.core.shell.runners import basename, trigger_words

_KEYWORDS = frozenset(
    (
        "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case",
        "esac", "in", "function", "select", "time", "!", "[[", "]]", "{", "}", "exec", "eval",
        "source", ".", "coproc", "popd",
    )
)  # fmt: skip
NOT_PARSED = (
    "not parsed: it starts no long runner and sends nothing to the background, "
    "so it runs as written"
)


# The patterns are compiled on first use: a line the hook wraps needs none of them, and the
# tokenizer alone costs 1.5 ms to compile.
@cache
def _split() -> re.Pattern[str]:
    return re.compile(r"[\s;|&<>()'\"`=]+")


@cache
def _token() -> re.Pattern[str]:
    return re.compile(
        r"""(?P<space>[ \t]+)
          | (?P<op>\|\||\||;|[0-9]?>>|[0-9]?>\||[0-9]?>|[0-9]?<)
          | (?P<word>(?:[A-Za-z0-9_\-./:,@%+~^*?]+=?(?:'[^']*'|"[^"\\$`!]*")?
                      |'[^']*'|"[^"\\$`!]*")+)
        """,
        re.VERBOSE,
    )


@cache
def _pieces() -> re.Pattern[str]:
    return re.compile(r"""'[^']*'|"[^"]*"|[^'"]+""")


@cache
def _setsid() -> re.Pattern[str]:
    return re.compile(r"(?<![\w.-])setsid(?![\w-])")


def may_start_runner(line: str, extra_runners: Sequence[str] = ()) -> bool:
    """True when some word of the line names a runner, a package manager or a wrapper."""
    triggers = trigger_words(tuple(extra_runners))
    for token in _split().split(line):
        if token and (basename(token) in triggers or basename(token).startswith("python")):
            return True
    return False


def plain_reason(line: str) -> str | None:
    """None when the line is plainly readable without the grammar, else why not."""
    commands: list[list[str]] = [[]]
    expect_word = False  # after a redirect operator
    at = 0
    while at < len(line):
        match = _token().match(line, at)
        if match is None:
            return NOT_PARSED
        at = match.end()
        if match.lastgroup == "space":
            continue
        text = match.group()
        if match.lastgroup == "op":
            if expect_word or (text in ("|", "||", ";") and not commands[-1]):
                return NOT_PARSED
            if text in ("|", "||", ";"):
                commands.append([])
            else:
                expect_word = True
            continue
        if _glued(text):
            return NOT_PARSED
        if not expect_word:
            commands[-1].append(text)
        expect_word = False
    if expect_word or (not commands[-1] and len(commands) > 1 and line.rstrip()[-1:] != ";"):
        return NOT_PARSED
    return None if all(_plain_command(words) for words in commands) else NOT_PARSED


def _glued(word: str) -> bool:
    """Quotes glued to other text, except one quoted value right after `=`."""
    pieces = _pieces().findall(word)
    if len(pieces) < 2:
        return False
    bare, quoted = pieces[0], pieces[1]
    return not (
        len(pieces) == 2 and bare[:1] not in "'\"" and bare.endswith("=") and quoted[:1] in "'\""
    )


def _plain_command(words: list[str]) -> bool:
    if not words:
        return True
    first = words[0]
    if first in _KEYWORDS or any(_setsid().search(w) and w[:1] != "'" for w in words):
        return False
    if first in ("cd", "pushd"):
        args = words[1:]
        if first == "pushd" and len(args) != 1:
            return False
        return len(args) <= 1 and all(
            a[:1] not in ("-", "+", "'", '"') and (a[:1] != "~" or a == "~" or a[:2] == "~/")
            for a in args
        )
    return not any(w in ("command", "builtin") for w in words[:1])
