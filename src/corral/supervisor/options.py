"""The supervisor's command line (its usage is `program.py`'s docstring): parsed by hand,
strictly, without argparse (start-up is the supervisor's budget)."""

from __future__ import annotations

from corral.lowlevel.procfs import _decimal
from corral.lowlevel.record import DEFAULT_GRACE, MAX_GRACE, is_token

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Usage(Exception):
    pass


def parse(argv: list[str]) -> dict[str, Any]:
    opts: dict[str, Any] = {
        "job": None,
        "mode": "task",
        "session": None,
        "grace": DEFAULT_GRACE,
        "ledger": None,
        "identity": None,
        "port": None,
        "ready_fd": None,
        "log_cap": None,
        "meta": [],
        "async": False,
        "fallback": True,
        "startup": False,
        "shell": None,
    }
    valued = {"--job", "--session", "--grace", "--ledger", "--identity", "--port", "--ready-fd",
              "--log-cap", "--shell"}  # fmt: skip
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            if len(argv) != i + 2:
                raise Usage("give the line as exactly one argument after --")
            opts["line"] = argv[i + 1]
            break
        if arg in ("--task", "--detached"):
            opts["mode"] = arg[2:]
        elif arg == "--async":
            opts["async"] = True
        elif arg == "--no-fallback":
            opts["fallback"] = False
        elif arg == "--shell-startup":
            opts["startup"] = True
        elif arg == "--meta" and i + 1 < len(argv) and "=" in argv[i + 1][1:]:
            key, _, value = argv[i + 1].partition("=")
            if not key.replace("_", "a").isalnum() or not key.isascii():
                raise Usage(f"--meta takes KEY=VALUE with a plain key, not {key!r}")
            opts["meta"].append((key, value))
            i += 1
        elif arg in valued and i + 1 < len(argv):
            opts[arg[2:].replace("-", "_")] = argv[i + 1]
            i += 1
        else:
            raise Usage(f"unknown or incomplete option {arg!r}")
        i += 1
    if "line" not in opts:
        raise Usage("missing -- LINE")
    try:
        opts["grace"] = float(opts["grace"])
        for key in ("port", "ready_fd", "log_cap"):
            text = opts[key]
            if text is not None:
                if not (text.isascii() and text.isdigit()):
                    raise ValueError(f"--{key.replace('_', '-')} takes a number, not {text!r}")
                opts[key] = _decimal(text.encode())
        if opts["port"] is not None and opts["port"] > 65535:  # readers refuse such a record
            raise ValueError(f"--port takes a port number, not {opts['port']}")
    except ValueError as exc:
        raise Usage(str(exc)) from None
    if not 0 <= opts["grace"] <= MAX_GRACE:
        raise Usage(f"--grace takes seconds from 0 to {MAX_GRACE:g}")
    job = opts["job"]
    if job is not None and not is_token(job):
        raise Usage("--job takes 32 lowercase hex digits")
    return opts
