"""Reading the model's command out of the string Claude Code hands its shell prefix.

With `CLAUDE_CODE_SHELL_PREFIX` set, Claude Code runs `<prefix> '<string>'` for every Bash
tool call, and the string has this shape (2.1.197 and 2.1.332, checked against the CLI):

    source <snapshot> 2>/dev/null || true && [<env file text>
    : && ]{ …shopt/setopt… } … && eval '<the model's command>' < /dev/null && pwd -P >| <cwd file>

The command is one single-quoted shell word whose `'` characters are written `'"'"'`
(2.1.332) or `'\\''` (older versions). `read(string)` gives the command back exactly, or None
for anything else (a hook, the status line, an MCP server's start-up, a shape it does not
know): the caller then runs the string as it came. Pure: no I/O.
"""

from __future__ import annotations

from functools import cache

from corral.lowlevel.named import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

EVAL = "eval '"
JOIN = " && "
TAIL = "' < /dev/null && pwd -P >| "
# A `'` inside the quoted command, as each Claude Code version writes it (after the quote
# that closes the segment before it).
QUOTES = {"2.1.332": "\"'\"'", "2.1.197": "\\''"}


@cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The snapshot's shell and corral's session export (compiled on first use: the shell
    prefix reads most strings without them, and `re` costs milliseconds to import)."""
    import re

    return (
        re.compile(r"source \S*/snapshot-(bash|zsh)-[^/\s]*\.sh "),
        re.compile(r"(?:^|\n|&& )export CORRAL_SESSION=([A-Za-z0-9_.:-]+)(?:\n|$)"),
    )


class Embedded(NamedTuple):
    command: str  # the model's command, exactly as the Bash tool received it
    head: str  # the string before `eval '`
    cwd_file: str  # where the shell writes its folder when the command succeeds
    style: str  # the quoting's Claude Code version: a key of QUOTES
    shell: str | None  # "bash" or "zsh": the kind of shell Claude Code snapshotted
    session: str | None  # CORRAL_SESSION exported by corral's SessionStart hook, if any


def quote(command: str, style: str = "2.1.332") -> str:
    """`command` as one single-quoted word, the way Claude Code of `style` writes it."""
    return "'" + command.replace("'", "'" + QUOTES[style]) + "'"


def compose(command: str, head: str, cwd_file: str, style: str = "2.1.332") -> str:
    """The string Claude Code would build around `command` (the inverse of `read`)."""
    return f"{head}{EVAL[:-1]}{quote(command, style)}{TAIL[1:]}{cwd_file}"


def _unquote(text: str, start: int) -> tuple[str, int, str] | None:
    """The word that opens with the `'` at `start`: (its value, the index of its last quote,
    the quoting style), or None when it is not one word in a single style."""
    parts: list[str] = []
    style = ""
    at = start + 1
    while True:
        close = text.find("'", at)
        if close < 0:
            return None
        parts.append(text[at:close])
        for name, mark in QUOTES.items():
            if text.startswith(mark, close + 1) and style in ("", name):
                style = name
                at = close + 1 + len(mark)
                parts.append("'")
                break
        else:
            return "".join(parts), close, style or "2.1.332"


def read(string: str) -> Embedded | None:
    """The model's command inside a Bash tool string, or None when `string` is not one."""
    end = string.rfind(TAIL)
    if end < 0:
        return None
    cwd_file = string[end + len(TAIL) :]
    if not cwd_file.startswith("/") or any(c in cwd_file for c in " \t\n'\"\\;&|<>$`"):
        return None
    at = string.find(EVAL)
    while at >= 0:
        if at == 0 or string.endswith(JOIN, 0, at):
            found = _unquote(string, at + len(EVAL) - 1)
            if found is not None and found[1] == end:
                command, _, style = found
                if string[at + len(EVAL) - 1 : end + 1] == quote(command, style):
                    return _embedded(string, at, command, cwd_file, style)
        at = string.find(EVAL, at + 1)
    return None


def _embedded(string: str, at: int, command: str, cwd_file: str, style: str) -> Embedded:
    head = string[:at]
    snapshot_pattern, session_pattern = _patterns()
    snapshot = snapshot_pattern.match(head)
    session = session_pattern.search(head)
    return Embedded(
        command=command,
        head=head,
        cwd_file=cwd_file,
        style=style,
        shell=snapshot.group(1) if snapshot else None,
        session=session.group(1) if session else None,
    )
