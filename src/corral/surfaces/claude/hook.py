"""corral's Claude Code hook: one entry point for every hook event it answers.

usage: python3 -I -S hook.py pre-tool-use | post-tool-use | session-start | session-end

Reads the hook's JSON on stdin and answers on stdout. The hook runs on every Bash call an
agent makes, so its start-up is a budget: a line that starts no long runner and sends nothing
to the background is answered (no output, exit 0) after reading stdin with the C JSON
scanner and checking its words against `triggers.WORDS`, without importing `json`, `re`, the
line reader or anything from site-packages. Only a candidate line loads the rest
(`pretool.py`, `events.py`).

It fails open: any internal error means exit 0, no output and one line in corral's log, so
the agent's command runs exactly as written.
"""

import sys

from corral.surfaces.claude import parse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# No `from __future__ import annotations` and no `os` on the fast path: each costs start-up.
# Annotations naming typing-only names are strings.

# core.shell.plan.LINE_LIMIT (a test pins that they agree): a longer line runs as written,
# answered at once; `corral explain` gives the reason.
LINE_LIMIT = 64 * 1024
EVENTS = ("pre-tool-use", "post-tool-use", "session-start", "session-end")
# `re`'s `\s` and str.split() agree on what whitespace is; these are the other separators
# of core.shell.plain.may_start_runner.
_SEPARATORS = str.maketrans(dict.fromkeys(";|&<>()'\"`=", " "))


def command(event: str) -> list[str]:
    """The absolute, isolated command line that settings files run for `event` (through
    run_hook.py, which loads this module from its bytecode)."""
    import os

    if event not in EVENTS:
        raise ValueError(f"unknown hook event {event!r}; expected one of {', '.join(EVENTS)}")
    launcher = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_hook.py")
    return [sys.executable, "-I", "-S", launcher, event]


def package_root() -> str:
    """The folder that holds the `corral` package this file belongs to."""
    here = __file__
    for _ in range(4):  # hook.py, claude/, surfaces/, corral/
        here = here.rpartition("/")[0]
    return here or "/"


def rewritten_by_corral(command: str) -> bool:
    """The command already runs one of corral's programs (a line the hook rewrote)."""
    from corral.lowlevel import locations

    return locations.runs_corral_program(command)


def may_need_supervision(line: str, background: bool, extra: frozenset[str] = frozenset()) -> bool:
    """False when the line reader would surely leave `line` untouched: not sent to the
    background, no `&`, and no word that can start a long runner (same answer as
    core.shell.plain.may_start_runner, which a property test pins)."""
    if background or "&" in line:
        return True
    from corral.surfaces.claude.triggers import WORDS

    for token in line.translate(_SEPARATORS).split():
        name = token.rstrip("/").rpartition("/")[2]
        if name in WORDS or name in extra or name.startswith("python"):
            return True
    return False


def extra_words(home: str, config: str) -> frozenset[str]:
    """First words of the user's `long_runners` patterns, cached beside the state so the
    configuration is parsed only when it changed."""
    import posix

    try:
        st = posix.stat(config)
    except OSError:
        return frozenset()
    stamp = f"{st.st_mtime_ns}:{st.st_size}"
    cache = f"{home}/cache/long-runners"
    try:
        with open(cache, encoding="utf-8") as f:
            lines = f.read().split("\n")
        if lines[0] == stamp:
            return frozenset(w for w in lines[1:] if w)
    except OSError:
        pass
    _site()
    import os

    from corral import config as user_config

    words = sorted(
        {p.split()[0].rstrip("/").rpartition("/")[2] for p in user_config.extra_runners()}
    )
    from corral.lowlevel.locations import ensure_private

    ensure_private(os.path.dirname(cache))
    temp = f"{cache}.{os.getpid()}.tmp"
    with open(temp, "w", encoding="utf-8") as f:
        f.write("\n".join([stamp, *words]) + "\n")
    os.replace(temp, cache)
    return frozenset(words)


_SITE_DONE = False


def _site() -> None:
    """Add the interpreter's site-packages (the grammar, psutil): the slow path only."""
    global _SITE_DONE
    if not _SITE_DONE:
        import site

        site.main()
        _SITE_DONE = True


def _pin_home(home: str) -> None:
    """The slow path finds corral's state through the same definition (lowlevel.locations);
    pinning it spares a relative CORRAL_HOME being resolved again. Whatever the slow path
    skips (a bad ledger record) goes to corral's log: the hook prints nothing of its own."""
    import os

    from corral.lowlevel import logline

    os.environ["CORRAL_HOME"] = home
    logline.to_log("hook")


def log(home: str, message: str) -> None:
    """One line in corral's log (`home` is corral's home); never raises."""
    from corral.lowlevel import logline

    logline.line("hook", message)


def _servers_pending(home: str) -> bool:
    """Whether a job started earlier still awaits being told (its URL, its failure: started.py):
    one listing."""
    import os

    from corral.surfaces.claude.started import PENDING_FOLDER

    try:
        return bool(os.listdir(home + "/" + PENDING_FOLDER))
    except OSError:
        return False


def _notify(home: str, phase: str, payload: "dict[str, Any]") -> None:
    """Tell a running daemon that a tool call started or ended (it refreshes faster)."""
    from corral.service import activity

    session, call = payload.get("session_id"), payload.get("tool_use_id")
    if isinstance(session, str) and isinstance(call, str):
        try:
            activity.tool_call(home, phase, session, call)
        except ImportError:  # no daemon support in this install: nothing to tell
            pass


CLAIM_SECONDS = 600  # a claim on a tool call is forgotten after this


def _safe_name(text: "Any") -> bool:
    return (
        isinstance(text, str)
        and 0 < len(text) <= 128
        and text.replace("-", "").replace("_", "").isalnum()
        and text.isascii()
    )


def first_copy(home: str, event: str, payload: "dict[str, Any]") -> bool:
    """False when another copy of corral's hook already answers this very tool call.

    A plugin and a settings install (or two scopes' settings) both run corral's hook for the
    same call, in parallel. Were both to decide, the second would see the first's reservation
    and refuse the server the first is starting. The first copy to claim the call answers it;
    every other copy prints nothing, which Claude Code reads as "no objection", so the
    first's rewrite or refusal stands. A call without a readable id is always answered."""
    session, call = payload.get("session_id"), payload.get("tool_use_id")
    if not (_safe_name(session) and _safe_name(call)):
        return True
    import os

    folder = f"{home}/hook-calls"
    path = f"{folder}/{event}-{session}-{call}"
    for attempt in range(2):
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            return False
        except FileNotFoundError:
            if attempt:
                return True
            from corral.lowlevel import locations

            locations.ensure_private(folder)  # corral's home too, private, as everywhere
            continue
        break
    _forget_old_claims(folder)
    return True


def _forget_old_claims(folder: str) -> None:
    import os
    import time

    limit = time.time() - CLAIM_SECONDS
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.stat().st_mtime < limit:
                os.unlink(entry.path)
        except OSError:
            continue


def answer(event: str, payload: "Any", home: str) -> str | None:
    """The hook's stdout for one event (None: print nothing, let the call run as it is)."""
    if not isinstance(payload, dict):
        return None
    if event == "pre-tool-use":
        if payload.get("tool_name") != "Bash":
            return None
        _notify(home, "start", payload)
        tool_input = payload.get("tool_input")
        if not isinstance(tool_input, dict) or not isinstance(tool_input.get("command"), str):
            return None
        if len(tool_input["command"]) > LINE_LIMIT:
            return None
        from corral.lowlevel import locations

        background = tool_input.get("run_in_background") is True
        extra = extra_words(home, locations.config_path())
        if not may_need_supervision(tool_input["command"], background, extra):
            return None
        if not first_copy(home, event, payload):
            return None
        _site()
        _pin_home(home)
        from corral.surfaces.claude import pretool

        return pretool.answer(payload, tool_input, home)
    if event == "post-tool-use":
        if payload.get("tool_name") != "Bash":
            return None
        _notify(home, "end", payload)
        response = payload.get("tool_response")
        if not isinstance(response, dict):
            return None
        tool_input = payload.get("tool_input")
        command = tool_input.get("command") if isinstance(tool_input, dict) else None
        session = payload.get("session_id")
        session = session if isinstance(session, str) and session else None
        pending = session is not None and _servers_pending(home)
        if not response.get("backgroundTaskId") and not response.get("timedOutAfterMs"):
            if not pending or not first_copy(home, event, payload):
                return None
            _site()
            _pin_home(home)
            from corral.surfaces.claude import started

            return started.answer(None, session)  # a URL that became known meanwhile
        if not first_copy(home, event, payload):
            return None
        if isinstance(command, str) and rewritten_by_corral(command):
            if not response.get("backgroundTaskId"):
                return None  # corral's own job: its supervisor already records it
            _site()
            _pin_home(home)
            from corral.surfaces.claude import started

            return started.answer(command, session)  # its URL once known, or how it crashed
    _site()
    _pin_home(home)
    from corral.surfaces.claude import events

    return events.answer(event, payload, home)


def main(argv: list[str]) -> int:
    if sys.path[:1] != [package_root()]:
        sys.path.insert(0, package_root())
    from corral.lowlevel import locations

    home = locations.home_dir()
    if len(argv) != 1 or argv[0] not in EVENTS:
        sys.stderr.write(__doc__ or "")
        return 2
    try:
        out = answer(argv[0], parse(sys.stdin.buffer.read().decode("utf-8")), home)
    except BaseException as exc:  # noqa: BLE001 - the hook fails open, whatever went wrong
        log(home, f"{argv[0]}: {type(exc).__name__}: {exc}")
        return 0
    if out:
        sys.stdout.write(out)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
