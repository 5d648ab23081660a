"""The port a command asks for: its flags, `PORT=N` before it, else its tool's default."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from corral.core.shell.runners import Tool, basename, positionals, split_dashdash

_BIND_FLAGS = ("-b", "--bind")
_PUBLISH_FLAGS = ("-p", "--publish")
_CONTAINER_PROGRAMS = frozenset({"docker", "podman"})


def port_number(text: str) -> int | None:
    """`5173` as an int if it is a TCP port; 0 is kept: it asks for any free port."""
    if not text.isascii() or not text.isdigit() or len(text) > 5:
        return None
    number = int(text)
    return number if 0 <= number < 65536 else None


def _after_colon(text: str) -> int | None:
    """The port of `host:N`, `:N` or `tcp://host:N`."""
    if ":" not in text:
        return None
    return port_number(text.rsplit(":", 1)[1])


def _published(text: str) -> int | None:
    """The host port of docker's `[ip:]host:container[/proto]`."""
    parts = text.split("/", 1)[0].split(":")
    return port_number(parts[-2]) if len(parts) >= 2 else None


def _flag_values(words: Sequence[str], flags: Iterable[str]) -> list[str]:
    wanted = tuple(flags)
    values: list[str] = []
    for at, word in enumerate(words):
        name, eq, value = word.partition("=")
        if eq and name in wanted and name.startswith("--"):
            values.append(value)
        elif word in wanted and at + 1 < len(words):
            values.append(words[at + 1])
    return values


def flag_port(program: str, args: Sequence[str], tool: Tool | None) -> int | None:
    """The port named on the command line, or None."""
    port_flags = tool.port_flags if tool else ("--port",)
    for value in _flag_values(args, port_flags):
        found = port_number(value)
        if found is None and ":" in value:
            found = _after_colon(value)
        if found is not None:
            return found
    for value in _flag_values(args, _BIND_FLAGS):
        found = _after_colon(value)
        if found is not None:
            return found
    if basename(program) in _CONTAINER_PROGRAMS:
        for value in _flag_values(args, _PUBLISH_FLAGS):
            found = _published(value)
            if found is not None:
                return found
    if tool is not None and tool.positional_port:
        head, _ = split_dashdash(args)
        for word in positionals(head)[len(tool.words) - 1 :]:
            found = port_number(word)
            if found is None:
                found = _after_colon(word)
            if found is not None:
                return found
    return None


def env_port(assignments: Iterable[tuple[str, str]]) -> int | None:
    """`PORT=N` given to the command (the last assignment wins, as in the shell)."""
    found: int | None = None
    for name, value in assignments:
        if name == "PORT":
            found = port_number(value)
    return found


def requested_port(
    program: str,
    args: Sequence[str],
    tool: Tool | None,
    assignments: Iterable[tuple[str, str]],
) -> int | None:
    """Flags first, then `PORT=N`, then the tool's default port. An explicit 0 (any free
    port) requests no particular port, and does not fall back to the default."""
    found = flag_port(program, args, tool)
    if found is None:
        found = env_port(assignments)
    if found is None and tool is not None:
        return tool.port
    return found or None
