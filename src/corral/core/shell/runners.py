"""The long-runner table: dev servers and watchers, their port flags and default ports.

A Tool matches a command (its runner words already skipped, see launch.py) when the program's
name is the first of `words` and the rest of `words` appear, in order, among its positional
arguments. Users extend the table with their own patterns (plain words, e.g. "make dev").
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from corral.lowlevel.named import NamedTuple

# Package scripts that are long runners: exactly these names, optionally with `:suffix`.
SCRIPT_NAMES = ("dev", "start", "serve", "watch", "preview", "storybook")
PACKAGE_MANAGERS = ("npm", "pnpm", "yarn", "bun", "deno")
# Flags of the table's tools that take a value: skipped when finding subcommands.
VALUE_FLAGS = frozenset(
    ("-f", "--file", "--env-file", "--profile", "--project-name", "--app", "-A", "--config", "-c")
)


class Tool(NamedTuple):
    words: tuple[str, ...]  # program name ("a|b" for aliases), then subcommands in order
    port: int | None = None  # the port it listens on when none is given
    port_flags: tuple[str, ...] = ("--port",)  # flags whose value is the local port
    needs: tuple[str, ...] = ()  # one of these flags must be given (tsc -w)
    never: tuple[str, ...] = ()  # none of these may be given, as a flag or first argument
    positional_port: bool = False  # `http.server 8000`, `runserver 0.0.0.0:8000`
    extra: bool = False  # from the user's configuration

    @property
    def name(self) -> str:
        return " ".join(word.split("|")[0] for word in self.words)


_P = ("--port", "-p")
TOOLS: tuple[Tool, ...] = (
    Tool(("vite", "preview"), 4173),
    Tool(("vite",), 5173, never=("build", "optimize")),
    Tool(("next", "dev"), 3000, _P),
    Tool(("next", "start"), 3000, _P),
    Tool(("nuxt|nuxi", "dev"), 3000, _P),
    Tool(("nuxt|nuxi", "preview"), 3000, _P),
    Tool(("astro", "dev|preview"), 4321),
    Tool(("remix", "dev"), 3000),
    Tool(("expo", "start"), 8081, _P),
    Tool(("react-native", "start"), 8081),
    Tool(("metro",), 8081),
    Tool(("webpack", "serve"), 8080),
    Tool(("webpack-dev-server",), 8080),
    Tool(("ng", "serve"), 4200),
    Tool(("storybook", "dev"), 6006, _P),
    Tool(("start-storybook",), 6006, _P),
    Tool(("tsc",), needs=("-w", "--watch")),
    Tool(("jest",), needs=("--watch", "--watchAll")),
    Tool(("vitest", "watch|dev")),
    Tool(("vitest",), needs=("--watch", "-w")),
    Tool(("nodemon",)),
    Tool(("node",), needs=("--watch",)),
    Tool(("bun",), needs=("--watch", "--hot")),
    Tool(("deno", "run|serve"), needs=("--watch",)),
    Tool(("rails", "server|s"), 3000, _P),
    Tool(("http.server",), 8000, positional_port=True),
    Tool(("uvicorn",), 8000),
    Tool(("gunicorn",), 8000),
    Tool(("flask", "run"), 5000, _P),
    Tool(("manage.py|django-admin|django", "runserver"), 8000, positional_port=True),
    Tool(("docker", "compose", "up"), never=("-d", "--detach")),
    Tool(("docker-compose", "up"), never=("-d", "--detach")),
    Tool(("tilt", "up"), 10350),
    Tool(("hugo", "server|serve"), 1313, _P),
    Tool(("jekyll", "serve|server|s"), 4000, ("--port", "-P")),
    Tool(("wrangler", "dev"), 8787),
    Tool(("cargo", "watch")),
    Tool(("air",)),
    Tool(("go", "run")),
    Tool(("serve",), 3000, ("--listen", "-l", "-p", "--port")),
    Tool(("http-server",), 8080, _P),
    Tool(("live-server",), 8080),
    Tool(("parcel",), 1234, _P, never=("build",)),
    Tool(("gatsby", "develop"), 8000, _P),
    Tool(("mkdocs", "serve"), 8000),
    Tool(("streamlit", "run"), 8501, ("--server.port",)),
)


def basename(word: str) -> str:
    return word.rstrip("/").rsplit("/", 1)[-1]


def is_script_name(name: str) -> bool:
    """`dev`, `start:web`: a package script that runs until stopped."""
    head, _, suffix = name.partition(":")
    return head in SCRIPT_NAMES and (":" not in name or bool(suffix))


@lru_cache(maxsize=64)
def user_tools(patterns: tuple[str, ...]) -> tuple[Tool, ...]:
    """The user's extra long-runner patterns ("make dev", "foreman start") as tools."""
    tools = []
    for pattern in patterns:
        words = tuple(basename(w) if i == 0 else w for i, w in enumerate(pattern.split()))
        if words and all(words):
            tools.append(Tool(words, extra=True))
    return tuple(tools)


def trigger_words(extra: Sequence[str] = ()) -> frozenset[str]:
    """Program names whose presence in a line means it may start a long runner."""
    names = {alias for tool in TOOLS for alias in tool.words[0].split("|")}
    names.update(PACKAGE_MANAGERS, ("npx", "pnpx", "bunx", "uv", "uvx", "poetry", "pipenv"))
    names.update(("bundle", "pipx", "env", "nohup", "nice", "time", "command"))
    names.update(t.words[0] for t in user_tools(tuple(extra)))
    return frozenset(names)


def match_tool(words: Sequence[str], extra: Sequence[str] = ()) -> Tool | None:
    """The first tool of the user's patterns, then the table, that `words` runs."""
    if not words:
        return None
    program = basename(words[0])
    head, _ = split_dashdash(words[1:])
    positional = positionals(head)
    for tool in (*user_tools(tuple(extra)), *TOOLS):
        if program not in tool.words[0].split("|"):
            continue
        if tool.needs and not any(_has_flag(head, flag) for flag in tool.needs):
            continue
        if tool.never and (
            any(_has_flag(head, flag) for flag in tool.never if flag.startswith("-"))
            or (positional and positional[0] in tool.never)
        ):
            continue
        wanted = tool.words[1:]
        if len(positional) >= len(wanted) and all(
            word in alternatives.split("|")
            for word, alternatives in zip(positional, wanted, strict=False)
        ):
            return tool
    return None


def positionals(words: Sequence[str]) -> list[str]:
    """Arguments that are not flags, skipping the values of common value-taking flags."""
    found: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in VALUE_FLAGS:
            skip = True
        elif not word.startswith("-"):
            found.append(word)
    return found


def split_dashdash(words: Sequence[str]) -> tuple[list[str], list[str]]:
    words = list(words)
    if "--" in words:
        at = words.index("--")
        return words[:at], words[at + 1 :]
    return words, []


def _has_flag(words: Sequence[str], flag: str) -> bool:
    return any(w == flag or w.startswith(flag + "=") for w in words)
