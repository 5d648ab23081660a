"""Text from outside corral (commands, folders, process names, details) as a terminal may
show it: commands are data, never instructions to the terminal.

Every human output passes such text through `printable` (and, where rich renders it, as a
`rich.text.Text`, never as markup): a control character (ESC starts colour, cursor and
OSC 8 hyperlink sequences; a carriage return overwrites what was shown) becomes a visible
escape such as `\\x1b`, and bidirectional overrides, which reorder what a reader sees,
become `\\u202e`. JSON output keeps the text as it is: the JSON encoder escapes it.
"""

from __future__ import annotations

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Unicode format characters that change how the rest of a line is displayed: bidi embeddings,
# overrides and isolates (the "trojan source" characters), and the line/paragraph separators.
_INVISIBLE = frozenset("\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _escape(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def unsafe(char: str) -> bool:
    """A character that must not reach a terminal as it is."""
    code = ord(char)
    return code < 0x20 or 0x7F <= code <= 0x9F or char in _INVISIBLE


def printable(text: str) -> str:
    """`text` with every control character (C0, DEL, C1) and bidi or line-separator
    character replaced by a visible escape (`\\x1b`, `\\n`, `\\u202e`); other text as is."""
    if text.isprintable() and not any(c in _INVISIBLE for c in text):
        return text  # the common case, in C: isprintable() is False for every Cc character
    return "".join(_escape(c) if unsafe(c) else c for c in text)
