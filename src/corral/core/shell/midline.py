"""Commands a line sends to the background mid-line (`api & web & wait`), read exactly.

A shell runs `CMD &` in a child of its own: the supervisor can take that child's place
(`exec`ed by a function of CMD's command word, or `CMD &` becoming `<supervisor> -- 'CMD'
&`), with every other byte of the line unchanged (inplace.py; `_head` says which way).
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
from corral.core.shell.parse import (
    Command,
    Refused,
    Unreadable,
    _check_redirects,
    and_or,
    refuse_construct,
    syntax_tree,
)
from corral.lowlevel.named import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node

_GROUPS = frozenset({"subshell", "compound_statement"})
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
# A command word a function can stand for in bash (POSIX mode too) and zsh alike.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Words no function can stand for: reserved words and precommand modifiers of bash or zsh,
# and POSIX special builtins (found before functions in bash's POSIX mode).
_NOT_A_FUNCTION = frozenset(
    {"if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until",
     "do", "done", "in", "function", "time", "coproc", "repeat", "foreach", "end",
     "nocorrect", "noglob", "command", "builtin", "exec", "declare", "export", "float",
     "integer", "local", "readonly", "typeset", "break", "continue", "eval", "exit",
     "return", "set", "shift", "times", "trap", "unset"}
)  # fmt: skip


class Unit(NamedTuple):
    start: int  # byte span of the backgrounded list, `&` excluded
    end: int
    amp: int  # byte offset of its `&`
    trailing: bool  # the `&` ends the line
    placed: tuple[Placed, ...]  # its simple commands with their folders
    cwd: str  # the calling shell's folder when it starts
    blocker: str | None  # why it cannot be moved under a supervisor (None: it can)
    head: Head | None = None  # the command a function of its name leads to the supervisor


class Head(NamedTuple):
    """The simple command a backgrounded list's forked child runs last (the only one, or
    the one after `cd DIR &&`), whose command word a function can stand for."""

    name: str
    start: int  # its bytes, less the redirections after it
    end: int


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
        if inner.type in _GROUPS:
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
            unit = Unit(start, end, amp.start_byte, False, placed, state.cwd, blocker)
            self.units.append(unit._replace(head=_head(node, self.source)))
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
        if _group(node) is not None:
            return "it is a ( … ) or { …; } group (its commands are read, not moved)"
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


def _head(node: Node, source: bytes) -> Head | None:
    """The command a function named after its command word leads to the supervisor, in the
    child the shell forks for `LIST &`, with nothing else of the list left to run: LIST is
    one simple command, or one after `cd DIR &&`/`pushd DIR &&` (bash runs those in the
    child, zsh in the calling shell itself; both fork for the last command and look it up
    there). None for every other shape: an external command or a pipeline before it (zsh
    would run a function of that name in the calling shell, and each command of a
    pipeline is a child of its own), an assignment before the command word (it would reach
    the supervisor's own environment), a redirection inside the span or before the word, a
    word that is quoted, a path, not a plain name or a reserved word."""
    redirects: list[Node] = []
    if node.type == "redirected_statement":
        redirects = node.children_by_field_name("redirect")
        node = node.child_by_field_name("body") or node
    parts = _and_list(node)
    if parts is None or any(r.start_byte < parts[-1].end_byte for r in redirects):
        return None  # a redirection before the last command's word
    if not all(_one_target(r) for r in redirects):
        return None
    *first, last = parts
    if any(_word_of(p, source) not in _FIRST for p in first):
        return None
    name = _word_of(last, source)
    if name is None or not _NAME.fullmatch(name) or name in _NO_FUNCTION:
        return None
    return Head(name, last.start_byte, last.end_byte)


# What may come before the command a function leads to the supervisor, in the same list.
_FIRST = frozenset({"cd", "pushd"})
# Words no function of corral's may stand for: those above, and the steps before it.
_NO_FUNCTION = _NOT_A_FUNCTION | _FIRST


def _and_list(node: Node) -> list[Node] | None:
    """The commands of `a && b && c`, in order; None if any is not a simple command."""
    if node.type == "list":
        left, op, right = node.children if len(node.children) == 3 else (None, None, None)
        if left is None or right is None or op is None or op.type != "&&":
            return None
        head, tail = _and_list(left), _and_list(right)
        return None if head is None or tail is None else head + tail
    return [node] if node.type == "command" else None


def _word_of(command: Node, source: bytes) -> str | None:
    """The plain command word of a simple command with nothing before it (no assignment,
    no redirection) and no redirection among its words, or None."""
    if command.children[0].type != "command_name":
        return None
    if any(c.type.endswith("_redirect") for c in command.children):
        return None
    word = command.children[0].named_children
    if len(word) != 1 or word[0].type != "word":
        return None
    return source[word[0].start_byte : word[0].end_byte].decode("utf-8")


def _one_target(redirect: Node) -> bool:
    """`> log`, not `> log --host x`: the grammar hangs words after a redirection's target
    on the redirection, where the shell gives them to the command."""
    return len([c for c in redirect.named_children if c.type != "file_descriptor"]) == 1


def _group(node: Node) -> Node | None:
    """The ( … ) or { …; } group a statement is, redirected or not."""
    if node.type in _GROUPS:
        return node
    if node.type == "redirected_statement":
        body = node.child_by_field_name("body")
        if body is not None and body.type in _GROUPS:
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
