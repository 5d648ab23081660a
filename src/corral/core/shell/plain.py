"""The grammar-free path: lines that need no decision are told apart by their words alone.

A line with no `&`, not sent to the background, and no word that can start a long runner runs
as written, and corral never loads the shell grammar for it. Whether such a line is readable is
answered here too, for `corral explain`, by a small conservative tokenizer: it says readable
only for plain words, whole quoted strings, `|`, `||`, `;` and redirects.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from corral.core.shell.runners import basename, trigger_words

_SPLIT = re.compile(r"[\s;|&<>()'\"`=]+")
_TOKEN = re.compile(
    r"""(?P<space>[ \t]+)
      | (?P<op>\|\||\||;|[0-9]?>>|[0-9]?>\||[0-9]?>|[0-9]?<)
      | (?P<word>(?:[A-Za-z0-9_\-./:,@%+~^*?]+=?(?:'[^']*'|"[^"\\$`!]*")?
                  |'[^']*'|"[^"\\$`!]*")+)
    """,
    re.VERBOSE,
)
_PIECES = re.compile(r"""'[^']*'|"[^"]*"|[^'"]+""")
_KEYWORDS = frozenset(
    (
        "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case",
        "esac", "in", "function", "select", "time", "!", "[[", "]]", "{", "}", "exec", "eval",
        "source", ".", "coproc", "popd",
    )
)  # fmt: skip
_SETSID = re.compile(r"(?<![\w.-])setsid(?![\w-])")
NOT_PARSED = (
    "not parsed: it starts no long runner and sends nothing to the background, "
    "so it runs as written"
)


def may_start_runner(line: str, extra_runners: Sequence[str] = ()) -> bool:
    """True when some word of the line names a runner, a package manager or a wrapper."""
    triggers = trigger_words(tuple(extra_runners))
    for token in _SPLIT.split(line):
        if token and (basename(token) in triggers or basename(token).startswith("python")):
            return True
    return False


def plain_reason(line: str) -> str | None:
    """None when the line is plainly readable without the grammar, else why not."""
    commands: list[list[str]] = [[]]
    expect_word = False  # after a redirect operator
    at = 0
    while at < len(line):
        match = _TOKEN.match(line, at)
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
    pieces = _PIECES.findall(word)
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
    if first in _KEYWORDS or any(_SETSID.search(w) and w[:1] != "'" for w in words):
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
