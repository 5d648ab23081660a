"""Which command of a list sent to the background (`LIST &`) a function named after its
command word can lead to the supervisor, in the process that runs that command, while the
list keeps its text (inplace.py writes the function, decision.through_function its text;
midline.py reads the list). Measured with bash 5.2 and zsh 5.9; the differential
(tests/core/shell/test_midline_differential.py) runs both:

- the command must be the last thing its process runs: LIST's last command, after any
  other commands joined by `&&` or `||`, in a ( … ) or { …; } group (after its other
  statements: `(cd web; vite)`) or not; or one command of LIST's last pipeline (a process
  of its own in both shells). `{ vite; echo done; } &` or `vite && echo done &` would
  skip the `echo`: no function there. Where the process is, and which dispositions it
  has, differs (_bash_form): zsh runs every such command in a process of its own that
  ignores SIGINT and SIGQUIT (outside a group, the commands before it run in the calling
  shell itself); bash does so for `CMD &` and the commands of `A | B &` only, `exec`s
  the last command of `( … ) &` in the process forked for it, and has the process forked
  for `a && CMD &` or `{ CMD; } &` fork CMD and wait for it, each with the shell's own
  dispositions;
- the function must lead that command alone: where the list runs anything else (`cd web
  &&`, `nvm use 20 &&`, `cat x |`), that may be a function of the user's or a sourced
  script which runs NAME itself (`nvm use` runs `npm --version` in a command
  substitution), so the function lets every call whose arguments are not the command's
  own through with `command NAME "$@"` (`guard`), and NAME must be no builtin of either
  shell (zsh's `command` runs only external commands). Another command of that name with
  the same arguments earlier in the list (run through the function too) is let through
  too, counted, only where it surely runs before the one led to the supervisor (an
  `&&`-only or `||`-only list); in a pipeline, never. (The shell's own messages about a
  command let through, `command not found` or bash's notice of it killed by a signal,
  then come from inside a function: bash names the place "environment", zsh the
  function. Under bash, where it can, the line has bash find a program of corral's for
  the name instead (hash_checks), so those messages, and the notice of the list's own
  process about the command itself, are the line's own);
- the command word must be one a function can be named, once quotes are removed (bash's
  POSIX mode refuses names that are not identifiers, and fatally: the function is defined
  only outside it), and none that is looked up before functions (reserved words,
  precommand modifiers, POSIX special builtins);
- nothing the list sets may reach the supervisor and change it rather than the job: an
  assignment before the command (`X=1 vite`: the function gets X in its environment, and so
  does the supervisor it runs) or an `export` earlier in the list names none of
  SUPERVISOR_VARIABLES.

The supervisor's shell then runs the command's assignments and words again, without its
redirections (the calling shell applied those to the function, and so to the supervisor).

Where no function can lead a list's long runners (one runs before something else in its
process, or the list has several), bash and zsh can still be left to find a program of
corral's for each runner's word in their table of hashed commands (hashed_heads): the
shell runs it wherever it would have run the real program, with whatever it would have
given it, so nothing of the list changes but the file executed.
"""

from __future__ import annotations

import re

from corral.core.shell.parse import Refused, _word, hung_on
from corral.lowlevel.named import NamedTuple
from corral.lowlevel.record import SESSION_VARIABLES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeGuard

    from tree_sitter import Node

# The ( … ) and { …; } groups of the grammar (midline.py reads them as statements).
GROUPS = frozenset({"subshell", "compound_statement"})
# A command word bash (outside POSIX mode) and zsh both accept as a function's name and find
# as one: `http-server`, `python3.11`, `./node_modules/.bin/vite` (no `=`, no leading `-`).
_FUNCTION_NAME = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9_./@%+:,-]*")
# Words no function can stand for: reserved words and precommand modifiers of bash or zsh,
# POSIX special builtins (found before functions in bash's POSIX mode), and the folder
# steps the reader follows.
NOT_A_FUNCTION = frozenset(
    {"if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until",
     "do", "done", "in", "function", "time", "coproc", "repeat", "foreach", "end",
     "nocorrect", "noglob", "command", "builtin", "exec", "declare", "export", "float",
     "integer", "local", "readonly", "typeset", "break", "continue", "eval", "exit",
     "return", "set", "shift", "times", "trap", "unset", ".", ":", "cd", "pushd"}
)  # fmt: skip
# Builtins of bash or zsh (with zsh/files): `command NAME` would not run them in zsh.
_BUILTINS = frozenset(
    {"alias", "autoload", "bg", "bind", "bindkey", "caller", "cd", "chdir", "compgen",
     "complete", "compopt", "dirs", "disable", "disown", "echo", "emulate", "enable",
     "false", "fc", "fg", "functions", "getln", "getopts", "hash", "help", "history",
     "jobs", "kill", "let", "limit", "log", "logout", "mapfile", "popd", "print", "printf",
     "private", "pushd", "pushln", "pwd", "r", "read", "readarray", "rehash", "sched",
     "setopt", "shopt", "source", "suspend", "test", "true", "type", "ulimit", "umask",
     "unalias", "unfunction", "unhash", "unlimit", "unsetopt", "vared", "wait", "whence",
     "where", "which", "zcompile", "zformat", "zle", "zmodload", "zparseopts",
     "zregexparse", "zstyle", "chgrp", "chmod", "chown", "ln", "mkdir", "mv", "rm",
     "rmdir", "sync", "[", "-"}
)  # fmt: skip
# Variables that change the supervisor or the shell it starts, not only the job: corral's
# own (its state folder, the session it records, the shell that runs the command: HOME,
# XDG_*, SHELL), the interpreter's and the C library's (PYTHON*, LD_*, DYLD_*, locale, TZ,
# TMPDIR, malloc and gconv settings), and those a shell reads when it starts (BASH_ENV,
# ENV, SHELLOPTS, BASHOPTS, POSIXLY_CORRECT, ZDOTDIR). The job itself gets each of them
# either way: its shell sets them again before running it. PATH is not one: the
# supervisor is started and starts its shell by absolute paths, and the command is looked
# up with the assignment in place, as written.
SUPERVISOR_VARIABLES = frozenset(
    {"HOME", "SHELL", "TMPDIR", "TZ", "LANG", "LANGUAGE", "BASH_ENV", "ENV", "SHELLOPTS",
     "BASHOPTS", "POSIXLY_CORRECT", "ZDOTDIR", "GLIBC_TUNABLES", "GCONV_PATH", "LOCPATH",
     "NLSPATH", *SESSION_VARIABLES}
)  # fmt: skip
SUPERVISOR_PREFIXES = ("CORRAL_", "XDG_", "PYTHON", "LD_", "DYLD_", "LC_", "MALLOC_", "__corral")


# How the function leads the command to the supervisor under bash (_bash_form).
ASYNC = "async"  # `exec`, ignoring SIGINT and SIGQUIT first (bash's `exec` restores them)
EXEC = "exec"  # `exec`, with the shell's own dispositions
CHILD = "child"  # as a command of its own, which the process waits for


class Head(NamedTuple):
    """The command a function of its name leads to the supervisor."""

    name: str  # its command word as the shell looks it up (quotes removed)
    start: int  # its bytes, through the redirections after it
    end: int
    text: str  # what the supervisor's shell runs: its assignments and words, no redirection
    earlier: int = 0  # commands of that name the list runs before it (through `command`)
    form: str = ASYNC  # how bash runs it: ASYNC, EXEC or CHILD
    # its arguments as written, which the function checks before it runs the supervisor,
    # when the list runs anything else (None: nothing else can call the function)
    guard: tuple[str, ...] | None = None
    values: tuple[str, ...] | None = None  # its arguments' values, with `checks`
    # Where bash may run a program of corral's for the name instead of a function
    # (hash_checks; any shape but `CMD &` alone): the words of the commands the list runs
    # before it, none of which may be a function of the user's when the line runs; None:
    # a function only.
    checks: tuple[str, ...] | None = None


def supervisor_variable(name: str) -> bool:
    return name in SUPERVISOR_VARIABLES or name.startswith(SUPERVISOR_PREFIXES)


def heads(node: Node, source: bytes) -> tuple[Head, ...]:
    """The commands of the statement `node` (sent to the background) that a function of
    their name can lead to the supervisor: those of its list's last pipeline (one, unless
    it is a pipeline), each with what comes before it checked; () for any other shape."""
    node, trailing = _unwrap(node)
    group = node.type if node.type in GROUPS else None
    statements: list[Node] = []  # a group's statements before the last one
    if node.type in GROUPS:
        if any(c.type == "&" for c in node.children) or not node.named_children:
            return ()  # `( vite & )`: the command inside is a unit of its own
        *statements, last_statement = node.named_children
        node, trailing = _unwrap(last_statement)  # the group's redirections are the group's
        if node.type in GROUPS:
            return ()
    found = _and_or(node, trailing)
    if found is None:
        return ()
    *first, last = found[0]
    ops = set(found[1])
    # earlier commands: their word, whether run directly, their arguments' values
    before: list[tuple[str | None, bool, tuple[str, ...] | None]] = []
    earlier_commands: list[Node] = []
    for statement in statements:  # `(cd web; vite)`: run first, but not counted
        parts = _and_or(statement, [])
        if parts is None:
            return ()
        for part in parts[0]:
            if not _read_earlier(part, source, before, earlier_commands, counted=False):
                return ()
    for part in first:
        if not _read_earlier(part, source, before, earlier_commands, counted=True):
            return ()
    commands = _pipeline(*last)
    if commands is None or any(word is None for word, _, _ in before):
        return ()  # an earlier command word that cannot be read
    words = [_command_word(c, source) for c, _ in commands]
    found_heads = []
    for (command, redirects), name in zip(commands, words, strict=True):
        if not _can_name(name) or words.count(name) > 1:
            continue
        if not _own_assignments(command, source):
            continue
        arguments = _arguments(command, redirects, source)
        if arguments is None:
            continue
        values = tuple(value for _, value in arguments)
        same = [d for word, d, args in before if word == name and args in (None, values)]
        if same and (len(ops) > 1 or not all(same)):
            continue  # it might run through the function without surely coming first
        alone = not before and len(commands) == 1
        if not alone and name in _BUILTINS:
            continue  # a call let through would need `command`, which zsh gives externals
        guard = None if alone else tuple(text for text, _ in arguments)
        text = _text(command, redirects, source)
        end = max([command.end_byte, *(r.end_byte for r in redirects)])
        form = _bash_form(group, bool(first), len(commands) > 1, bool(statements))
        # (`CMD &` alone: the function leads it in the process forked for it, every text
        # the line's own: it needs no more)
        hashed = not (alone and form == ASYNC)
        if hashed and not _exact_values(command, redirects, source):
            hashed = False  # (`~/x`: the function's guard compares it as the shell expands it)
        checks = hash_checks(name, command, earlier_commands, source) if hashed else None
        found_heads.append(
            Head(
                name, command.start_byte, end, text, len(same), form, guard,
                values if hashed else None, checks,
            )
        )  # fmt: skip
    return tuple(found_heads)


# Builtins that can set a variable, source a file, or change how bash finds a command: run
# in the list's own process before the command, one could drop what `hash -p` left there.
HASH_UNSAFE = frozenset(
    {".", "alias", "builtin", "command", "declare", "enable", "eval", "exec", "export",
     "getopts", "hash", "let", "local", "mapfile", "printf", "read", "readarray",
     "readonly", "set", "shopt", "source", "typeset", "unalias", "unset"}
)  # fmt: skip


def hash_checks(
    name: str, command: Node, earlier: list[Node], source: bytes
) -> tuple[str, ...] | None:
    """Where bash can be left to run the command itself, found through its table of hashed
    commands (`hash -p <corral's program> NAME`, decision.through_function), and so with
    every text of its own (the notices a list's process prints about the command): the
    words of the commands the list runs before it, which the line checks are no functions
    when it runs (a function, nvm's, may change PATH, which empties that table); None
    where a function must stand for it instead: a name with a `/` (never looked up), an
    earlier command that is no plain command or one of HASH_UNSAFE, or PATH (or the table,
    BASH_CMDS) named anywhere in the command or before it."""
    if "/" in name:
        return None
    words: list[str] = []
    for part in [*earlier, command]:
        text = source[part.start_byte : part.end_byte]
        if b"PATH" in text or b"BASH_CMDS" in text:
            return None
        if part is command:
            continue
        word = _table_word(part, source)
        if word is None:
            return None
        if word != name and word not in words:
            words.append(word)
    return tuple(words)


def _table_word(command: Node, source: bytes) -> str | None:
    """The word of a command run beside one the shell's table of commands leads; None where
    running it may empty or change that table (no plain command, or one of HASH_UNSAFE)."""
    word = _command_word(command, source) if command.type == "command" else None
    return word if word and word not in HASH_UNSAFE else None


def _read_earlier(
    part: tuple[Node, list[Node]],
    source: bytes,
    before: list[tuple[str | None, bool, tuple[str, ...] | None]],
    nodes: list[Node],
    counted: bool,
) -> bool:
    """Add the commands of an earlier pipeline `part` to `before` (see `_earlier`; run
    directly when `counted` and not piped) and to `nodes`; False when it is no plain
    pipeline or sets one of SUPERVISOR_VARIABLES for what follows."""
    commands = _pipeline(*part)
    if commands is None or not all(_sets_nothing(c, source) for c, _ in commands):
        return False
    direct = counted and len(commands) == 1
    before.extend(_earlier(c, r, source, direct) for c, r in commands)
    nodes.extend(c for c, _ in commands)
    return True


def _bash_form(group: str | None, earlier: bool, piped: bool, statements: bool) -> str:
    """How bash runs the command (zsh runs every one as ASYNC: in a process of its own,
    which starts ignoring SIGINT and SIGQUIT). Measured with
    bash 5.2: the process the calling shell forks for `&` runs `CMD &` (or one command of
    `A | B &`) ignoring SIGINT and SIGQUIT; in a ( … ) group it `exec`s the last command,
    whose dispositions are the shell's own again (the last command of `( a && CMD )` too,
    not that of `( a; b && CMD )`); a list (`a && CMD &`) or a { …; } group runs in a
    child of its own that forks CMD (the shell's own dispositions) and waits for it; a
    command of a pipeline there is a process of its own, the shell's dispositions again."""
    if group is None and not earlier:
        return ASYNC
    if piped or (group == "subshell" and not (earlier and statements)):
        return EXEC
    return CHILD


def _unwrap(node: Node) -> tuple[Node, list[Node]]:
    """A statement's body and the redirections after it."""
    if node.type != "redirected_statement":
        return node, []
    body = node.child_by_field_name("body")
    if body is None:
        return node, []
    return body, node.children_by_field_name("redirect")


def _and_or(
    node: Node, trailing: list[Node]
) -> tuple[list[tuple[Node, list[Node]]], list[str]] | None:
    """The pipelines of `a && b || c`, in order, each with the redirections the grammar
    hangs after it (`a && b > log && c` reads as `(a && b) > log && c`: they are b's), and
    the operators between them."""
    if node.type == "redirected_statement":
        body, redirects = _unwrap(node)
        if body.type == "list":
            return _and_or(body, redirects + trailing)
    if node.type != "list":
        return [(node, trailing)], []
    if len(node.children) != 3:
        return None
    left, op, right = node.children
    if op.type not in ("&&", "||"):
        return None
    head, tail = _and_or(left, []), _and_or(right, trailing)
    if head is None or tail is None:
        return None
    return head[0] + tail[0], [*head[1], op.type, *tail[1]]


def _pipeline(node: Node, trailing: list[Node]) -> list[tuple[Node, list[Node]]] | None:
    """The simple commands of a pipeline (or of one command), each with its redirections;
    `trailing`: those the grammar hangs on the whole statement, its last command's."""
    if node.type == "pipeline":
        found: list[tuple[Node, list[Node]]] = []
        for child in node.children:
            if child.type in ("|", "|&"):
                continue
            one = _pipeline(child, []) if child.is_named else None
            if one is None or len(one) != 1:
                return None
            found.extend(one)
        if found:
            found[-1] = (found[-1][0], found[-1][1] + trailing)
        return found or None
    body, redirects = _unwrap(node)
    if body.type == "command":
        return [(body, redirects + trailing)]
    if body.type in ("declaration_command", "variable_assignment", "variable_assignments"):
        return [(body, redirects + trailing)]
    return None


def _command_word(command: Node, source: bytes) -> str | None:
    """The command word as the shell looks it up (quotes removed): "" for a command with
    none (`export …`, `X=1` alone), None when it cannot be read."""
    if command.type != "command":
        return ""
    word = next((c for c in command.children if c.type == "command_name"), None)
    if word is None:
        return ""
    if len(word.named_children) != 1:
        return None
    try:
        found = _word(word.named_children[0], source)
    except Refused:
        return None
    return found.value if found.literal else None


def _earlier(
    command: Node, redirects: list[Node], source: bytes, direct: bool
) -> tuple[str | None, bool, tuple[str, ...] | None]:
    """An earlier command of the list: its word, whether the list runs it directly, and its
    arguments' values (None: not read, and so maybe the same as the runner's)."""
    arguments = _arguments(command, redirects, source) if command.type == "command" else None
    values = None if arguments is None else tuple(value for _, value in arguments)
    return _command_word(command, source), direct, values


def _arguments(
    command: Node, redirects: list[Node], source: bytes
) -> tuple[tuple[str, str], ...] | None:
    """The command's arguments (the words after its command word, the grammar's words hung
    on a redirection included), each as written and as the command gets it; None when one
    is not plain text."""
    found = []
    for node in _argument_nodes(command, redirects):
        try:
            word = _word(node, source)
        except Refused:
            return None
        if not word.literal:
            return None
        found.append((source[node.start_byte : node.end_byte].decode("utf-8"), word.value))
    return tuple(found)


def _argument_nodes(command: Node, redirects: list[Node]) -> list[Node]:
    """The command's argument words in order, those hung on a redirection included."""
    nodes = [
        child
        for child in command.named_children
        if child.type not in ("command_name", "variable_assignment")
        and not child.type.endswith("_redirect")
    ]
    for redirect in [
        *redirects,
        *(c for c in command.named_children if c.type.endswith("_redirect")),
    ]:
        nodes.extend(hung_on(redirect))
    return sorted(nodes, key=lambda n: n.start_byte)


# Unquoted text bash and zsh give a command as it is: no `~` or pattern (nor zsh's `=NAME`
# at a word's start).
_AS_IT_IS = re.compile(r"[A-Za-z0-9_@%+=:,./-]*")


def _exact_values(command: Node, redirects: list[Node], source: bytes) -> bool:
    """Each argument's value (`_arguments`) is exactly what the command gets, to compare
    with what a program receives (corral's program in the shell's table sees `~/x` as the
    shell expanded it, where a function's guard tests the words as written)."""
    stack = _argument_nodes(command, redirects)
    if any(source[n.start_byte : n.start_byte + 1] == b"=" for n in stack):
        return False
    while stack:
        node = stack.pop()
        quoted = node.parent is not None and node.parent.type in ("string", "raw_string")
        text = source[node.start_byte : node.end_byte].decode("utf-8")
        if node.type in ("word", "number") and not quoted and not _AS_IT_IS.fullmatch(text):
            return False
        stack.extend(node.children)
    return True


def _can_name(word: str | None) -> TypeGuard[str]:
    """A function can be named `word` and is looked up before anything else of that name."""
    return word is not None and bool(_FUNCTION_NAME.fullmatch(word)) and word not in NOT_A_FUNCTION


def _sets_nothing(command: Node, source: bytes) -> bool:
    """An earlier command of the list sets none of SUPERVISOR_VARIABLES for what follows
    (`export NAME=…`, or `NAME=…` alone, which `set -a` would export)."""
    if command.type == "command":
        return True  # its own assignments last only while it runs
    return _own_assignments(command, source)


def _own_assignments(command: Node, source: bytes) -> bool:
    """None of the command's assignments names one of SUPERVISOR_VARIABLES."""
    stack = [command]
    while stack:
        part = stack.pop()
        if part.type == "variable_assignment":
            name = part.child_by_field_name("name")
            text = source[name.start_byte : name.end_byte] if name is not None else b""
            if supervisor_variable(text.decode("utf-8")):
                return False
        elif part.type in ("declaration_command", "variable_assignments", "command"):
            stack.extend(part.named_children)
    return True


def _text(command: Node, redirects: list[Node], source: bytes) -> str:
    """The command's assignments and words in order, without its redirections (the words
    the grammar hangs on a redirection after its target are the command's)."""
    pieces: list[tuple[int, int]] = []
    for child in command.named_children:
        if child.type.endswith("_redirect"):
            redirects = [*redirects, child]
        else:
            pieces.append((child.start_byte, child.end_byte))
    for redirect in redirects:
        pieces.extend((c.start_byte, c.end_byte) for c in hung_on(redirect))
    return " ".join(source[a:b].decode("utf-8") for a, b in sorted(pieces))


HASHED = "hash"  # a Head's form where only bash's or zsh's table of commands leads it


def hashed_heads(node: Node, source: bytes) -> tuple[Head, ...]:
    """Where no function can lead the list's long runner to the supervisor (`vite && echo
    done &`: something runs after it in its process; `vite | next dev &`: two of them),
    the commands of the statement `node` that bash and zsh can still be left to find in
    their table of hashed commands (decision.through_hash): every simple command the list
    runs (through its groups, `&&`/`||` lists and pipelines) whose word no other command
    there shares, no `/`, builtin or reserved word, with plain arguments and no
    assignment to one of SUPERVISOR_VARIABLES; each with the words of the others, checked
    to be no functions when the line runs. () when the list holds anything else, a
    command that may change PATH (HASH_UNSAFE, a declaration) or names PATH, or one that
    would print corral's program as the command's path (SHOWS_THE_TABLE, zsh's `=NAME`)."""
    commands: list[tuple[Node, list[Node]]] = []
    if not _simple_commands(node, [], commands):
        return ()
    text = source[node.start_byte : node.end_byte]
    if _PATH_NAMED.search(text):
        return ()
    words = [_table_word(c, source) for c, _ in commands]
    if any(w is None or w in SHOWS_THE_TABLE for w in words):
        return ()
    if any(w and re.search(rb"(?<![^\s;&|(){}<>])=" + re.escape(w.encode()), text) for w in words):
        return ()  # zsh's `=NAME`: the path the table has for NAME
    found = []
    for (command, redirects), name in zip(commands, words, strict=True):
        if not _can_name(name) or "/" in name or name in _BUILTINS or words.count(name) > 1:
            continue
        arguments = _arguments(command, redirects, source)
        if arguments is None or not _own_assignments(command, source):
            continue
        if not _exact_values(command, redirects, source):
            continue
        others = tuple(dict.fromkeys(w for w in words if w and w != name))
        end = max([command.end_byte, *(r.end_byte for r in redirects)])
        found.append(
            Head(
                name, command.start_byte, end, _text(command, redirects, source), 0, HASHED,
                tuple(text for text, _ in arguments), tuple(value for _, value in arguments),
                others,
            )
        )  # fmt: skip
    return tuple(found)


# zsh's builtins that print the path the table holds for a name (bash's `type`, `command`
# and `hash` the reader or HASH_UNSAFE keep out), and precommand modifiers before them.
SHOWS_THE_TABLE = frozenset({"type", "which", "whence", "where", "noglob", "nocorrect"})
# PATH and the tables that hold where commands are, by any of their names in bash or zsh.
_PATH_NAMED = re.compile(rb"PATH|BASH_CMDS|\bpath\b|\bcommands\b|\bhash\b|\brehash\b")


def _simple_commands(
    node: Node, trailing: list[Node], found: list[tuple[Node, list[Node]]]
) -> bool:
    """Add the simple commands of `node` (groups, `&&`/`||` lists, pipelines, statements)
    to `found`, each with its redirections; False when it holds anything else."""
    node, redirects = _unwrap(node)
    if node.type in GROUPS:
        statements = [c for c in node.named_children if not c.type.endswith("_redirect")]
        if any(c.type == "&" for c in node.children) or not statements:
            return False
        return all(_simple_commands(s, [], found) for s in statements)
    parts = _and_or(node, redirects + trailing)
    if parts is None:
        return False
    for part in parts[0]:
        body, more = _unwrap(part[0])
        if body.type in GROUPS:
            if not _simple_commands(body, more + part[1], found):
                return False
            continue
        commands = _pipeline(*part)
        if commands is None:
            return False
        found.extend(commands)
    return True
