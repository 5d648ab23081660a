"""Reading a shell line with tree-sitter-bash into a small, flat model, or saying why not.

Only a plain subset of the shell is read: lists of pipelines of simple commands whose words
are unquoted text, whole quoted strings and variables. Everything else makes the line
unreadable, and an unreadable line runs exactly as written. The grammar is loaded on first
use only: most lines are decided without it (see plan.py).
"""

from __future__ import annotations

import os
import re

from corral.lowlevel.named import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

    from tree_sitter import Node, Parser

_PARSER: Parser | None = None

# Constructs named in the reason given for an unreadable line.
_CONSTRUCTS = {
    "subshell": "a subshell",
    "compound_statement": "a { …; } group",
    "command_substitution": "a command substitution",
    "process_substitution": "a process substitution",
    "heredoc_redirect": "a heredoc",
    "herestring_redirect": "a here-string",
    "if_statement": "an if statement",
    "for_statement": "a for loop",
    "c_style_for_statement": "a for loop",
    "while_statement": "a while loop",
    "case_statement": "a case statement",
    "function_definition": "a function definition",
    "comment": "a comment",
    "ansi_c_string": "$'…' quoting",
    "translated_string": '$"…" quoting',
    "arithmetic_expansion": "an arithmetic expansion",
    "test_command": "a [[ … ]] test",
    "negated_command": "a negated command",
    "brace_expression": "a brace expansion",
}
_SEPARATORS = frozenset({";", "&", "\n"})
_NEVER_READ = frozenset({"exec", "eval", "source", "."})
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish"})
_SETSID = re.compile(r"(?<![\w.-])setsid(?![\w-])")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_BRACES = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")
# Control characters other than tab and newline: the shell and the grammar may disagree.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# tree-sitter-bash's scanner (0.25) hands the character after `{` (and after its digits and
# `..`) and the one after `?` to C's isdigit()/isalpha(), defined only up to 255: a larger
# code point there reads outside libc's table, and the process may crash (SIGSEGV). Such a
# line is left to the shell.
_WIDE_AFTER_CTYPE = re.compile(r"\{[0-9]*(?:\.\.[0-9]*)?[^\x00-\xff]|\?[^\x00-\xff]")


class Word(NamedTuple):
    value: str  # the word after quote removal; variables stay as written
    literal: bool  # no expansion in it: value is exactly what the command receives
    quote: str  # "" unquoted (or mixed), "'" single quotes, '"' double quotes
    start: int  # byte offsets in the line
    end: int


class Command(NamedTuple):
    assignments: tuple[tuple[str, Word | None], ...]  # NAME=value before the command
    words: tuple[Word, ...]
    start: int
    end: int
    exports: bool = False  # `export NAME=value`: assignments carry to later commands


class Pipeline(NamedTuple):
    commands: tuple[Command, ...]


class Statement(NamedTuple):
    pipelines: tuple[Pipeline, ...]  # joined by && / ||: run one after another
    background: bool  # ended by `&`
    amp: int | None  # byte offset of that `&`


class Script(NamedTuple):
    statements: tuple[Statement, ...]
    size: int  # length of the line in bytes


class Unreadable(NamedTuple):
    reason: str


class Refused(Exception):
    """Raised inside the tree walk when the line is not in the readable subset."""


def _parser() -> Parser:
    global _PARSER
    if _PARSER is None:
        runtime: Any = binding("tree_sitter")
        _PARSER = runtime.Parser(runtime.Language(bash_language()))
    return _PARSER


def bash_language() -> object:
    """The bash grammar's language pointer."""
    return binding("tree_sitter_bash").language()


def binding(package: str) -> ModuleType:
    """The compiled `_binding` module of `package` (tree_sitter, tree_sitter_bash), loaded
    straight from the package folder without running the package's `__init__.py`: the
    runtime's imports `typing` (~2 ms on the hook's path) for one Protocol class, the
    grammar's imports importlib.resources (and with it tempfile, shutil, bz2, lzma, random:
    ~9 ms) for a query file corral never reads. The package's own import is the fallback."""
    import sys

    name = f"{package}._binding"
    if name in sys.modules:
        return sys.modules[name]
    from importlib import machinery

    for entry in sys.path:
        for suffix in machinery.EXTENSION_SUFFIXES:
            path = f"{entry or '.'}/{package}/_binding{suffix}"
            if not os.path.isfile(path):
                continue
            loader = machinery.ExtensionFileLoader(name, path)
            module = loader.create_module(machinery.ModuleSpec(name, loader, origin=path))
            loader.exec_module(module)
            sys.modules[name] = module  # the package's own import, if any, reuses it
            return module
    import importlib

    return importlib.import_module(name)


def lexical_reason(line: str) -> str | None:
    """Reasons that need no grammar: text the shell and the grammar could read differently."""
    if _CONTROL.search(line):
        return "it holds control characters"
    if not line.isascii() and _WIDE_AFTER_CTYPE.search(line):
        return "the grammar cannot read a wide character after `{` or `?` safely"
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return "it is not valid UTF-8 text"
    return None


def syntax_tree(line: str) -> tuple[Node, bytes] | Unreadable:
    """The grammar's tree of the line and its bytes, when nothing lexical or syntactic
    already makes it unreadable (midline.py walks it further than `read` does)."""
    reason = lexical_reason(line)
    if reason is not None:
        return Unreadable(reason)
    source = line.encode("utf-8")
    tree = _parser().parse(source)
    root = tree.root_node
    if root.has_error:
        return Unreadable("the shell would reject it (syntax error)")
    if b"\\" in source and not _backslashes_quoted(root, source):
        return Unreadable("it uses a backslash escape")
    return root, source


def read(line: str) -> Script | Unreadable:
    """The line as a Script, or why corral cannot read it with certainty."""
    found = syntax_tree(line)
    if isinstance(found, Unreadable):
        return found
    root, source = found
    try:
        return Script(_statements(root, source), len(source))
    except Refused as refusal:
        return Unreadable(str(refusal))


def _backslashes_quoted(root: Node, source: bytes) -> bool:
    """Whether every backslash is inside single quotes (the only place it means itself)."""
    spans: list[tuple[int, int]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "raw_string":
            spans.append((node.start_byte, node.end_byte))
        else:
            stack.extend(node.children)
    offsets = [at for at, byte in enumerate(source) if byte == 0x5C]
    return all(any(a < at < b for a, b in spans) for at in offsets)


def _text(node: Node, source: bytes) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8")


def _statements(root: Node, source: bytes) -> tuple[Statement, ...]:
    statements: list[Statement] = []
    pending: list[Pipeline] | None = None
    pending_end = 0
    for child in root.children:
        if child.type == "comment":
            raise refuse_construct(child)
        if child.is_named:
            if pending is not None:
                if b"\n" not in source[pending_end : child.start_byte]:
                    raise Refused("two commands without a separator")
                statements.append(Statement(tuple(pending), False, None))
            pending = and_or(child, source)
            pending_end = child.end_byte
        elif child.type in _SEPARATORS:
            if pending is None:
                raise Refused(f"the shell would reject it (stray {child.type!r})")
            is_amp = child.type == "&"
            statements.append(
                Statement(tuple(pending), is_amp, child.start_byte if is_amp else None)
            )
            pending = None
        else:
            raise Refused(f"the shell would reject it ({child.type!r} here)")
    if pending is not None:
        statements.append(Statement(tuple(pending), False, None))
    return tuple(statements)


def _redirected_body(node: Node, source: bytes) -> Node:
    """The statement a redirected statement wraps, once its redirects are checked."""
    _check_redirects(node, source)
    body = node.child_by_field_name("body")
    if body is None:
        raise Refused("a redirect without a command")
    return body


def and_or(node: Node, source: bytes, *, setsid: bool = False) -> list[Pipeline]:
    """The pipelines of one list node (`a && b | c`); raises Refused outside the subset.
    `setsid`: a command may start with setsid (read in place of `CMD &` only, midline.py)."""
    kind = node.type
    if kind == "redirected_statement":
        found = and_or(_redirected_body(node, source), source, setsid=setsid)
        hung = _hung_words(node, source)
        if hung:  # `a && vite > log --port 3`: words of the last command
            *commands, last = found[-1].commands
            last = last._replace(words=last.words + hung)
            _check_command(last, setsid)
            found[-1] = Pipeline((*commands, last))
        return found
    if kind == "list":
        pipelines: list[Pipeline] = []
        for child in node.children:
            if child.is_named:
                pipelines.extend(and_or(child, source, setsid=setsid))
            elif child.type not in ("&&", "||"):
                raise Refused(f"{child.type!r} inside a list")
        return pipelines
    return [_pipeline(node, source, setsid)]


def _pipeline(node: Node, source: bytes, setsid: bool = False) -> Pipeline:
    if node.type != "pipeline":
        return Pipeline((_command(node, source, setsid),))
    commands: list[Command] = []
    for child in node.children:
        if child.is_named:
            commands.extend(_pipeline(child, source, setsid).commands)
        elif child.type not in ("|", "|&"):
            raise Refused(f"{child.type!r} inside a pipeline")
    return Pipeline(tuple(commands))


def refuse_construct(node: Node) -> Refused:
    name = _CONSTRUCTS.get(node.type, f"shell syntax corral does not read ({node.type})")
    return Refused(f"it uses {name}")


def _check_redirects(node: Node, source: bytes) -> None:
    for redirect in node.children_by_field_name("redirect"):
        _redirect(redirect, source)


def _hung_words(node: Node, source: bytes) -> tuple[Word, ...]:
    """The words the grammar hangs on `node`'s redirections (see `hung_on`)."""
    words: list[Word] = []
    for redirect in node.children_by_field_name("redirect"):
        words.extend(_word(c, source) for c in hung_on(redirect))
    return tuple(words)


def hung_on(redirect: Node) -> list[Node]:
    """The words the grammar hangs on a redirection after its target (`> log --port 3`),
    which the shell gives to the command."""
    return [c for c in redirect.named_children if c.type != "file_descriptor"][1:]


def _redirect(node: Node, source: bytes) -> None:
    if node.type != "file_redirect":
        raise refuse_construct(node)
    for part in node.children:
        if part.is_named and part.type != "file_descriptor":
            _word(part, source)


def _command(node: Node, source: bytes, setsid: bool = False) -> Command:
    kind = node.type
    if kind == "redirected_statement":
        body = _redirected_body(node, source)
        command = _command(body, source, setsid)
        hung = _hung_words(node, source)
        if hung:  # `vite > log --port 3`: the port is vite's
            command = command._replace(words=command.words + hung)
            _check_command(command, setsid)
        return command
    if kind in ("variable_assignment", "variable_assignments"):
        pairs = [node] if kind == "variable_assignment" else list(node.named_children)
        assigned = tuple(_assignment(pair, source) for pair in pairs)
        return Command(assigned, (), node.start_byte, node.end_byte)
    if kind == "declaration_command":
        return _declaration(node, source)
    if kind != "command":
        raise refuse_construct(node)
    assignments: list[tuple[str, Word | None]] = []
    words: list[Word] = []
    for child in node.children:
        if child.type == "variable_assignment":
            assignments.append(_assignment(child, source))
        elif child.type == "command_name":
            inner = child.named_children
            if len(inner) != 1 or not _word(inner[0], source).literal:
                raise Refused("its command word is a variable")
            words.append(_word(inner[0], source))
        elif child.type == "file_redirect" or child.type.endswith("_redirect"):
            _redirect(child, source)
        elif child.is_named:
            words.append(_word(child, source))
    command = Command(tuple(assignments), tuple(words), node.start_byte, node.end_byte)
    _check_command(command, setsid)
    return command


def _declaration(node: Node, source: bytes) -> Command:
    keyword = node.children[0].type if node.children else ""
    if keyword != "export":
        raise Refused(f"it uses `{keyword}`")
    assignments: list[tuple[str, Word | None]] = []
    for child in node.named_children:
        if child.type != "variable_assignment":
            raise Refused("`export` of something other than NAME=value")
        assignments.append(_assignment(child, source))
    return Command(tuple(assignments), (), node.start_byte, node.end_byte, exports=True)


def _assignment(node: Node, source: bytes) -> tuple[str, Word | None]:
    name = node.child_by_field_name("name")
    value = node.child_by_field_name("value")
    if name is None or name.type != "variable_name":
        raise Refused("an assignment corral does not read")
    return _text(name, source), None if value is None else _word(value, source)


def _check_command(command: Command, setsid: bool = False) -> None:
    if not command.words:
        return
    first = command.words[0].value
    base = first.rsplit("/", 1)[-1]
    if first in _NEVER_READ or (
        base in ("command", "builtin")
        and len(command.words) > 1
        and command.words[1].value in _NEVER_READ
    ):
        raise Refused(f"it uses `{first}`")
    leading = _leading_setsid(command.words) if setsid else -1
    for at, word in enumerate(command.words):
        if at == leading:
            continue
        if _SETSID.search(word.value) and (word.quote != "'" or base in _SHELLS):
            raise Refused("it calls setsid (corral cannot follow a new session)")
        if word.literal and not word.quote and _BRACES.search(word.value):
            raise Refused("it uses a brace expansion")


def _leading_setsid(words: tuple[Word, ...]) -> int:
    """The index of a plain `setsid` word that starts the program (after nohup/env
    NAME=value), or -1."""
    for at, word in enumerate(words):
        value = word.value
        if word.quote or not word.literal:
            return -1
        if value.rsplit("/", 1)[-1] == "setsid":
            return at
        if value not in ("nohup", "env") and not _ASSIGNMENT.match(value):
            return -1
    return -1


def _word(node: Node, source: bytes) -> Word:
    kind = node.type
    text = _text(node, source)
    start, end = node.start_byte, node.end_byte
    if kind in ("word", "number"):
        if "\\" in text:
            raise Refused("it uses a backslash escape")
        return Word(text, True, "", start, end)
    if kind == "raw_string":
        return Word(text[1:-1], True, "'", start, end)
    if kind == "string":
        return _double_quoted(node, source)
    if kind in ("simple_expansion", "expansion"):
        _check_expansion(node)
        return Word(text, False, "", start, end)
    if kind == "concatenation":
        return _concatenation(node, source)
    raise refuse_construct(node)


def _check_expansion(node: Node) -> None:
    for child in node.named_children:
        if child.type not in ("variable_name", "special_variable_name", "word", "string"):
            raise refuse_construct(child)


def _double_quoted(node: Node, source: bytes) -> Word:
    parts: list[str] = []
    literal = True
    for child in node.children:
        if not child.is_named:
            continue
        if child.type == "string_content":
            piece = _text(child, source)
            if "\\" in piece:
                raise Refused("it uses a backslash escape")
            parts.append(piece)
        elif child.type in ("simple_expansion", "expansion"):
            _check_expansion(child)
            parts.append(_text(child, source))
            literal = False
        else:
            raise refuse_construct(child)
    return Word("".join(parts), literal, '"', node.start_byte, node.end_byte)


def _concatenation(node: Node, source: bytes) -> Word:
    pieces = node.children
    parts: list[str] = []
    literal = True
    for index, piece in enumerate(pieces):
        if piece.type in ("string", "raw_string"):
            after_equals = index == len(pieces) - 1 and index > 0 and parts[-1].endswith("=")
            if not after_equals:
                raise Refused("it glues quotes to other text")
        word = _word(piece, source)
        if piece.type == "word" and word.value in ("{", "}"):
            raise Refused("it uses a brace expansion")
        parts.append(word.value)
        literal = literal and word.literal
    return Word("".join(parts), literal, "", node.start_byte, node.end_byte)
