"""Commands a line sends to the background mid-line (`api & web & wait`), read exactly.

A shell runs `CMD &` in a child of its own: the supervisor can take that child's place
(run by a function of CMD's command word, or `CMD &` becoming `<supervisor> -- 'CMD'
&`), with every other byte of the line unchanged (inplace.py; heads.py says which way).
That is only exact when a new shell given CMD's text does what the calling shell would
have done with it, so a backgrounded list is movable only when its words are plain text
(no variables, no patterns the two shells may expand differently), it uses none of the
shell's own state (jobs, traps, options), and nothing earlier in the line changed that
state (`set`, `shopt`, `alias`, `trap`, ...). Each unit says why when it is not movable.

Read here, beyond parse.py's subset: ( … ) subshells and { …; } groups as statements, and
`setsid` leading a backgrounded command.
"""

from __future__ import annotations

import re

from corral.core.shell.folders import NoFolder, Placed, _State, _step, expand_tilde
from corral.core.shell.heads import GROUPS, Head, hashed_heads, heads
from corral.core.shell.parse import (
    Command,
    Refused,
    Unreadable,
    _check_redirects,
    and_or,
    hung_on,
    refuse_construct,
    syntax_tree,
)
from corral.lowlevel.named import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node

_GROUP = (
    "it is a ( … ) or { …; } group, and no function can lead its last command alone to a"
    " supervisor (a group's commands are read, not moved)"
)
_LISTED = (
    "it is a list or pipeline, which a new shell would run otherwise (the signal"
    " dispositions its commands get; in zsh, which run in the foreground), and neither a"
    " function nor the shell's table of commands can lead its long runners to a supervisor"
)
# Builtins that change the calling shell's own state, which a new shell would not see.
_SHELL_STATE = frozenset(
    {"set", "shopt", "alias", "unalias", "trap", "unset", "hash", "enable", "shift",
     "getopts", "setopt", "unsetopt", "emulate", "disable", "zmodload", "builtin"}
)  # fmt: skip
# Builtins that read the calling shell's own state: moved to a new shell they would not.
_READS_SHELL = frozenset(
    {"jobs", "wait", "fg", "bg", "disown", "dirs", "history", "fc", "caller", "times",
     "return", "local", "suspend", "logout", "type", "command", "declare", "typeset"}
)  # fmt: skip
# Unquoted text both bash and zsh take literally (anything else may be a pattern, `=cmd`,
# `~` after `=` or a zsh qualifier).
_PLAIN = re.compile(r"~?[A-Za-z0-9_@%+=:,./-]*")


class Unit(NamedTuple):
    start: int  # byte span of the backgrounded list, `&` excluded
    end: int
    amp: int  # byte offset of its `&`
    trailing: bool  # the `&` ends the line
    placed: tuple[Placed, ...]  # its simple commands with their folders
    cwd: str  # the calling shell's folder when it starts
    blocker: str | None  # why it cannot be moved under a supervisor (None: it can)
    heads: tuple[Head, ...] = ()  # the commands a function of their name can lead there
    group: str | None = None  # why its bytes cannot become a supervisor's command line
    hashed: tuple[Head, ...] = ()  # the commands bash and zsh can find through their tables
    listed: str | None = None  # why its bytes cannot run exactly in bash's or zsh's -c


class Background(NamedTuple):
    units: tuple[Unit, ...]
    placed: tuple[Placed, ...]  # every simple command of the line, the units' included


def read_background(line: str, cwd: str, home: str) -> Background | Unreadable:
    """Every list the line sends to the background, with its span and whether it can be
    moved in place; or why the line cannot be read with certainty."""
    found = syntax_tree(line)
    if isinstance(found, Unreadable):
        return found
    root, source = found
    walk = _Walk(source, home)
    try:
        walk.body(root.children, _State(cwd, (), ()), False)
    except (Refused, NoFolder) as exc:
        return Unreadable(str(exc))
    tail = len(source.rstrip())
    units = tuple(u._replace(trailing=u.amp + 1 == tail) for u in walk.units)
    if any(p.words[:1] == ("jobs",) for p in walk.placed):
        why = "the line runs `jobs`, which would list the supervisor's command line instead"
        units = tuple(u._replace(blocker=u.blocker or why) for u in units)
    return Background(units, tuple(walk.placed))


class _Walk:
    def __init__(self, source: bytes, home: str) -> None:
        self.source = source
        self.home = home
        self.units: list[Unit] = []
        self.placed: list[Placed] = []
        self.statement = 0
        self.pipeline = 0
        self.changed: str | None = None  # a shell-state builtin run earlier in the line

    def body(self, nodes: list[Node], state: _State, background: bool) -> _State:
        """The statements of a program, subshell or group; the state after them."""
        items: list[tuple[Node, Node | None]] = []
        pending: Node | None = None
        for child in nodes:
            if child.type == "comment":
                raise refuse_construct(child)
            if child.type in ("(", ")", "{", "}"):
                continue
            if child.is_named:
                if pending is not None:
                    if b"\n" not in self.source[pending.end_byte : child.start_byte]:
                        raise Refused("two commands without a separator")
                    items.append((pending, None))
                pending = child
            elif child.type in (";", "&", "\n"):
                if pending is None:
                    raise Refused(f"the shell would reject it (stray {child.type!r})")
                items.append((pending, child if child.type == "&" else None))
                pending = None
            else:
                raise Refused(f"the shell would reject it ({child.type!r} here)")
        if pending is not None:
            items.append((pending, None))
        for node, amp in items:
            after = self.statement_(node, amp, state, background or amp is not None)
            if amp is None:
                state = after
        return state

    def statement_(self, node: Node, amp: Node | None, state: _State, bg: bool) -> _State:
        inner = _group(node) or node
        if inner is not node:
            _check_redirects(node, self.source)
        first = len(self.placed)
        changed_before = self.changed
        if inner.type in GROUPS:
            after = self.body(inner.children, state, bg)
            if inner.type == "subshell":
                after = state
        else:
            after = self._list(node, state, bg, amp is not None)
        self.statement += 1
        if amp is not None:
            placed = tuple(self.placed[first:])
            blocker = self._blocker(node, placed, changed_before)
            start, end = _span(node)
            group = _GROUP if _group(node) is not None else None
            unit = Unit(start, end, amp.start_byte, False, placed, state.cwd, blocker)
            found, hashed = heads(node, self.source), hashed_heads(node, self.source)
            body = node.child_by_field_name("body") if node.type == "redirected_statement" else node
            listed = None if body is None or body.type == "command" else _LISTED
            self.units.append(unit._replace(heads=found, group=group, hashed=hashed, listed=listed))
        return after

    def _list(self, node: Node, state: _State, bg: bool, unit: bool) -> _State:
        pipelines = and_or(node, self.source, setsid=unit)
        local = state
        for pipeline in pipelines:
            piped = len(pipeline.commands) > 1
            for command in pipeline.commands:
                words = tuple(expand_tilde(w, self.home) for w in command.words)
                self._note_state(command, words)
                after = _step(local, command, words, self.home)
                if after is None:
                    self.placed.append(
                        Placed(command, words, local.cwd, local.exported, self.statement, bg,
                               self.pipeline, piped)
                    )  # fmt: skip
                elif not piped:
                    local = after
            self.pipeline += 1
        return local

    def _note_state(self, command: Command, words: tuple[str, ...]) -> None:
        if self.changed is None and words and words[0] in _SHELL_STATE:
            self.changed = words[0]

    def _blocker(self, node: Node, placed: tuple[Placed, ...], changed: str | None) -> str | None:
        """Why the backgrounded list cannot run in a new shell exactly as here, or None."""
        if changed is not None:
            return f"the line runs `{changed}` before it, which a new shell would not see"
        for item in placed:
            if item.words and item.words[0] in _READS_SHELL | _SHELL_STATE:
                return f"it runs `{item.words[0]}`, which reads this shell's own state"
            if item.words[:1] == ("kill",) and any(w.startswith("%") for w in item.words):
                return "it names a job of this shell (`%N`)"
        return _expansion(node, self.source)


def _span(node: Node) -> tuple[int, int]:
    """The bytes the supervisor is given: the whole list, except that the redirections
    after a simple command stay outside (`vite > log 2>&1 &`): the calling shell applies
    them to the supervisor, as it would have to the command, and the supervisor's shell
    then runs the command alone (bash runs `-c 'CMD > log'` in a child of its own, holding
    the caller's stdout meanwhile, where `CMD > log &` holds nothing)."""
    body = node.child_by_field_name("body") if node.type == "redirected_statement" else None
    if body is not None and body.type == "command":
        redirects = node.children_by_field_name("redirect")
        if all(r.start_byte >= body.end_byte and _one_target(r) for r in redirects):
            return body.start_byte, body.end_byte
    return node.start_byte, node.end_byte


def _one_target(redirect: Node) -> bool:
    """`> log`, not `> log --host x`: the grammar hangs words after a redirection's target
    on the redirection, where the shell gives them to the command."""
    return not hung_on(redirect)


def _group(node: Node) -> Node | None:
    """The ( … ) or { …; } group a statement is, redirected or not."""
    if node.type in GROUPS:
        return node
    if node.type == "redirected_statement":
        body = node.child_by_field_name("body")
        if body is not None and body.type in GROUPS:
            return body
    return None


def _expansion(node: Node, source: bytes) -> str | None:
    """A variable or a pattern in the list's text, which a new shell could expand otherwise."""
    stack = [node]
    while stack:
        part = stack.pop()
        text = source[part.start_byte : part.end_byte].decode("utf-8")
        if part.type in ("simple_expansion", "expansion"):
            return f"it uses a variable (`{text}`) a new shell may not have"
        quoted = part.parent is not None and part.parent.type in ("string", "raw_string")
        if part.type in ("word", "number") and not quoted and not _PLAIN.fullmatch(text):
            return f"`{text}` may expand differently in a new shell (a pattern or `~`)"
        stack.extend(part.children)
    return None
