"""Which folder each command of a line runs in, following cd, pushd and popd.

The shell runs a list sent to the background with `&` in a subshell, and each command of a
pipeline too: a `cd` there does not carry into what follows. Folders are joined as text
(like `cd` without -P): nothing is looked up on disk.
"""

from __future__ import annotations

import posixpath

from corral.core.shell.parse import Command, Script, Unreadable, Word
from corral.lowlevel.named import NamedTuple

_CD_FLAGS = frozenset({"-L", "-P", "-e", "-@"})


class Placed(NamedTuple):
    command: Command
    words: tuple[str, ...]  # the command's words, `~` expanded where the shell would
    cwd: str
    exported: tuple[tuple[str, str], ...]  # variables exported earlier in the line
    statement: int  # index of its statement (lists separated by ; & or newline)
    background: bool  # its statement ends with `&`
    pipeline: int  # index of its pipeline in the whole line
    piped: bool  # shares its pipeline with other commands (they run at once)


class _State(NamedTuple):
    cwd: str
    stack: tuple[str, ...]
    exported: tuple[tuple[str, str], ...]


class NoFolder(Exception):
    pass


def expand_tilde(word: Word, home: str) -> str:
    if word.quote or not word.literal:
        return word.value
    if word.value == "~" or word.value.startswith("~/"):
        return home + word.value[1:]
    return word.value


def resolve(cwd: str, home: str, target: str) -> str:
    """The folder `cd target` enters from cwd; raises NoFolder when it cannot be known."""
    if target.startswith(("$HOME/", "${HOME}/")) or target in ("$HOME", "${HOME}"):
        target = home + target.split("}", 1)[-1] if target.startswith("${") else home + target[5:]
    if "$" in target or "`" in target:
        raise NoFolder("the folder depends on a variable")
    if target.startswith("~"):
        raise NoFolder("the folder is another user's home (~user)")
    if target == "-":
        raise NoFolder("`cd -` depends on the folder before this line")
    if not target:
        raise NoFolder("the folder is empty")
    return posixpath.normpath(posixpath.join(cwd, target))


def place(script: Script, cwd: str, home: str) -> tuple[Placed, ...] | Unreadable:
    """Every command of the script with its folder, or why the folders cannot be known."""
    try:
        return tuple(_place(script, cwd, home))
    except NoFolder as exc:
        return Unreadable(str(exc))


def _place(script: Script, cwd: str, home: str) -> list[Placed]:
    placed: list[Placed] = []
    state = _State(posixpath.normpath(cwd), (), ())
    pipeline_index = 0
    for number, statement in enumerate(script.statements):
        local = state
        for pipeline in statement.pipelines:
            piped = len(pipeline.commands) > 1
            for command in pipeline.commands:
                words = tuple(expand_tilde(w, home) for w in command.words)
                after = _step(local, command, words, home)
                if after is None:
                    placed.append(
                        Placed(command, words, local.cwd, local.exported, number,
                               statement.background, pipeline_index, piped)
                    )  # fmt: skip
                elif not piped:
                    local = after
            pipeline_index += 1
        if not statement.background:
            state = local
    return placed


def _step(state: _State, command: Command, words: tuple[str, ...], home: str) -> _State | None:
    """The shell state after a folder or export command; None for any other command."""
    if command.exports:
        exported = dict(state.exported)
        for name, value in command.assignments:
            if value is not None and value.literal:
                exported[name] = value.value
            else:
                exported.pop(name, None)
        return _State(state.cwd, state.stack, tuple(exported.items()))
    if words and words[0] == "builtin":
        words = words[1:]
    if not words or words[0] not in ("cd", "pushd", "popd"):
        return None
    args = list(words[1:])
    if words[0] == "cd":
        while args and args[0] in _CD_FLAGS:
            args.pop(0)
        if args and args[0] == "--":
            args.pop(0)
        if len(args) > 1:
            raise NoFolder("`cd` with more than one folder")
        target = resolve(state.cwd, home, args[0]) if args else home
        return _State(target, state.stack, state.exported)
    if words[0] == "pushd":
        if args and args[0] == "--":
            args.pop(0)
        if not args:
            if not state.stack:
                raise NoFolder("`pushd` without a folder swaps with a stack this line lacks")
            return _State(state.stack[0], (state.cwd, *state.stack[1:]), state.exported)
        if len(args) > 1 or args[0][:1] in ("+", "-"):
            raise NoFolder(f"`pushd {args[0]}` rotates a folder stack corral does not see")
        target = resolve(state.cwd, home, args[0])
        return _State(target, (state.cwd, *state.stack), state.exported)
    if args or not state.stack:
        raise NoFolder("`popd` returns to a folder pushed before this line")
    return _State(state.stack[0], state.stack[1:], state.exported)
