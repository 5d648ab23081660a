"""What one simple command launches: runner words skipped, package scripts resolved.

`classify(words)` answers with a Launch (the folder changes and environment the command's own
words make, e.g. `env -C web`, `npm --prefix web`) and, when it starts a long runner, the
Runner: its identity key, the matching tool (for ports) and the arguments to scan for a port.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache

from corral.core.shell.runners import (
    VALUE_FLAGS,
    Tool,
    basename,
    is_script_name,
    match_tool,
    split_dashdash,
)
from corral.lowlevel.named import NamedTuple

# Per package manager: flags taking a value -> what the value means ("chdir", "scope", "").
_PM_FLAGS: dict[str, dict[str, str]] = {
    "npm": {"--prefix": "chdir", "-w": "scope", "--workspace": "scope", "--registry": "",
            "--loglevel": "", "--cache": "", "--userconfig": "", "--globalconfig": ""},
    "pnpm": {"-C": "chdir", "--dir": "chdir", "-F": "scope", "--filter": "scope",
             "--loglevel": "", "--reporter": ""},
    "yarn": {"--cwd": "chdir"},
    "bun": {"--cwd": "chdir", "--filter": "scope", "-F": "scope"},
    "deno": {"--config": "", "-c": ""},
}  # fmt: skip
_RUN_WORDS = {
    "npm": ("run", "run-script", "rum", "urn"),
    "pnpm": ("run", "run-script"),
    "yarn": ("run",),
    "bun": ("run",),
    "deno": ("task",),
}
_EXEC_WORDS = ("exec", "x", "dlx")
# Runner words: skipped with their flags (value-taking flags listed) before the real program.
_PREFIXES: dict[str, tuple[str, ...]] = {
    "nohup": (),
    "setsid": (),  # read only where it leads `CMD &` rewritten in place (parse.py)
    "time": (),
    "command": (),
    "nice": ("-n", "--adjustment"),
    "npx": ("-p", "--package", "--node-options", "--call"),
    "pnpx": ("-p", "--package"),
    "bunx": ("-p", "--package"),
    "uvx": ("--from", "--with", "--python", "-p"),
    "pipx": ("--spec", "--python"),
}
_SUB_PREFIXES: dict[tuple[str, str], tuple[str, ...]] = {
    ("uv", "run"): ("--with", "--python", "-p", "--env-file", "--project", "--directory"),
    ("poetry", "run"): (),
    ("pipenv", "run"): (),
    ("bundle", "exec"): (),
    ("pipx", "run"): ("--spec", "--python"),
}


class Launch(NamedTuple):
    words: tuple[str, ...]  # the program and its arguments, runner words skipped
    chdirs: tuple[str, ...] = ()  # folder changes made by its own words (env -C, --prefix)
    env: tuple[tuple[str, str], ...] = ()  # NAME=value given through `env`


class Runner(NamedTuple):
    key: str  # what makes two jobs the same job (digested in identity.py)
    tool: Tool | None  # the tool that listens (None: a script whose body is unknown)
    args: tuple[str, ...]  # arguments that may name the port
    script: bool = False
    chdirs: tuple[str, ...] = ()  # folder flags of the package manager (npm --prefix DIR)


# Compiled on first use: most lines name neither a python nor `env NAME=value`.
@cache
def _python_name() -> re.Pattern[str]:
    return re.compile(r"python(?:\d+(?:\.\d+)*)?$")


@cache
def _assignment() -> re.Pattern[str]:
    return re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def unwrap(words: Sequence[str]) -> Launch:
    """Skip runner words (nohup, env, npx, python -m, uv run, …) before the real program."""
    rest = list(words)
    chdirs: list[str] = []
    env: list[tuple[str, str]] = []
    for _ in range(16):  # each round removes at least one word; bounded anyway
        if not rest:
            break
        head = basename(rest[0])
        if head == "env":
            rest = _env(rest[1:], chdirs, env)
        elif head in _PREFIXES:
            if head == "command" and any(w in ("-v", "-V") for w in rest[1:2]):
                return Launch((), tuple(chdirs), tuple(env))
            rest = _skip_flags(rest[1:], _PREFIXES[head])
        elif len(rest) > 1 and (head, rest[1]) in _SUB_PREFIXES:
            rest = _skip_flags(rest[2:], _SUB_PREFIXES[(head, rest[1])])
        elif head.startswith("python") and _python_name().match(head) and len(rest) > 1:
            rest = _python(rest[1:])
        else:
            break
    return Launch(tuple(rest), tuple(chdirs), tuple(env))


# corral's own commands that start a job under a supervisor of their own.
_OWN_STARTS = frozenset({"run", "restart"})


def starts_under_corral(words: Sequence[str]) -> bool:
    """The command is corral's own `run` or `restart` (`corral`, its script by any path, or
    `python -m corral`, runner words such as `nohup` or `uv run` skipped): it runs its job
    under corral's supervisor already, and applies corral's refusals itself."""
    launch = unwrap(words)
    return (
        len(launch.words) > 1
        and basename(launch.words[0]) == "corral"
        and launch.words[1] in _OWN_STARTS
    )


def _skip_flags(words: list[str], valued: tuple[str, ...]) -> list[str]:
    at = 0
    while at < len(words) and words[at].startswith("-"):
        if words[at] == "--":
            return words[at + 1 :]
        at += 2 if words[at] in valued else 1
    return words[at:]


def _env(words: list[str], chdirs: list[str], env: list[tuple[str, str]]) -> list[str]:
    at = 0
    while at < len(words):
        word = words[at]
        if word in ("-C", "--chdir") and at + 1 < len(words):
            chdirs.append(words[at + 1])
            at += 2
            continue
        if word.startswith("--chdir="):
            chdirs.append(word.split("=", 1)[1])
        elif word.startswith("-C") and len(word) > 2:
            chdirs.append(word[2:])
        elif word in ("-u", "--unset"):
            at += 1
        elif word == "--":
            at += 1
            break
        elif _assignment().match(word):
            name, _, value = word.partition("=")
            env.append((name, value))
        elif not word.startswith("-"):
            break
        at += 1
    return words[at:]


def _python(args: list[str]) -> list[str]:
    at = 0
    while at < len(args) and args[at].startswith("-"):
        if args[at] == "-m" and at + 1 < len(args):
            return args[at + 1 :]
        if args[at] == "-c":
            return []  # code given as text: not read
        at += 2 if args[at] in ("-X", "-W") else 1
    return args[at:]


def classify(
    words: Sequence[str],
    extra: Sequence[str] = (),
    scripts: Mapping[str, str] | None = None,
) -> tuple[Launch, Runner | None]:
    """The command's launch and, if it starts a long runner, the runner."""
    launch = unwrap(words)
    return launch, _runner(launch, extra, scripts or {}, 0)


def _runner(
    launch: Launch, extra: Sequence[str], scripts: Mapping[str, str], depth: int
) -> Runner | None:
    words = launch.words
    if not words:
        return None
    program = basename(words[0])
    if program in _PM_FLAGS:
        found = _package_manager(program, list(words[1:]), extra, scripts, depth)
        if found is not None:
            return found
    tool = match_tool(words, extra)
    if tool is None:
        return None
    return Runner("tool " + " ".join((tool.name, *_key_args(tool, words[1:]))), tool, words[1:])


def _key_args(tool: Tool, args: Sequence[str]) -> list[str]:
    """Positional arguments that tell two jobs of one tool apart (not ports or hosts)."""
    head, _ = split_dashdash(args)
    kept: list[str] = []
    skip = False
    valued = {*tool.port_flags, "--host", "-H", "--bind", "-b", "--hostname", "--mode"}
    for word in head:
        if skip:
            skip = False
        elif word in valued or word in VALUE_FLAGS:
            skip = True
        elif not word.startswith("-") and not _looks_like_port(word):
            kept.append(word)
    return kept[len(tool.words) - 1 :]


def _looks_like_port(word: str) -> bool:
    return word.rsplit(":", 1)[-1].isdigit()


def _package_manager(
    pm: str, args: list[str], extra: Sequence[str], scripts: Mapping[str, str], depth: int
) -> Runner | None:
    flags = _PM_FLAGS[pm]
    scope: list[str] = []
    chdirs: list[str] = []
    positional: list[tuple[int, str]] = []
    at = 0
    while at < len(args) and len(positional) < 3:
        word = args[at]
        if word == "--":
            break
        name, eq, value = word.partition("=")
        if name in flags and (eq or at + 1 < len(args)):
            if not eq:
                value = args[at + 1]
                at += 1
            if flags[name] == "scope":
                scope.append(value)
            elif flags[name] == "chdir":
                chdirs.append(value)
        elif not word.startswith("-"):
            positional.append((at, word))
        at += 1
    if not positional:
        return None
    index, sub = positional[0]
    named = False  # the script was named after `run` (or `yarn workspace W`)
    if pm == "yarn" and sub == "workspace" and len(positional) > 2:
        scope.append(positional[1][1])
        index, sub = positional[2]
        named = True
    elif sub in _RUN_WORDS[pm] and len(positional) > 1:
        index, sub = positional[1]
        named = True
    if not named and sub in _EXEC_WORDS and pm != "deno":
        inner = Launch(tuple(_skip_flags(args[index + 1 :], ("-p", "--package"))))
        found = _runner(inner, extra, scripts, depth + 1)
    elif not named and pm in ("npm", "deno") and sub != "start":
        return None
    else:
        found = _script(pm, sub, tuple(args[index + 1 :]), scope, extra, scripts, depth)
    if found is None or not chdirs:
        return found
    return Runner(found.key, found.tool, found.args, found.script, tuple(chdirs))


def _script(  # noqa: PLR0917 - one call site, every value is needed
    pm: str,
    name: str,
    rest: tuple[str, ...],
    scope: list[str],
    extra: Sequence[str],
    scripts: Mapping[str, str],
    depth: int,
) -> Runner | None:
    body = _body_runner(scripts.get(name), extra, scripts, depth) if depth < 3 else None
    if is_script_name(name) or body is not None:
        key = " ".join(("script", *(f"[{s}]" for s in scope), name))
        return Runner(key, body.tool if body else None, rest + (body.args if body else ()), True)
    if pm != "npm" and name not in scripts:
        return _runner(Launch((name, *rest)), extra, scripts, depth + 1)
    return None


def _body_runner(
    body: str | None, extra: Sequence[str], scripts: Mapping[str, str], depth: int
) -> Runner | None:
    """The first long runner a package.json script's text starts, if any."""
    if not body:
        return None
    import shlex

    try:
        tokens = shlex.split(body, posix=True)
    except ValueError:
        return None
    segment: list[str] = []
    for token in [*tokens, ";"]:
        if token in ("&&", "||", ";", "|", "&"):
            found = _runner(unwrap(_drop_assignments(segment)), extra, scripts, depth + 1)
            if found is not None:
                return found
            segment = []
        else:
            segment.append(token)
    return None


def _drop_assignments(words: list[str]) -> list[str]:
    at = 0
    while at < len(words) and _assignment().match(words[at]):
        at += 1
    return words[at:]
