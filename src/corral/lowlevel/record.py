"""The ledger's record format: one flat JSON object per job, written atomically by its
supervisor (and by readers that record the end of a job whose supervisor was killed), in
`<ledger>/<id>.json`; and the check every reader applies to a record before trusting it
(`check`): every known field has its type (a JSON `true` is not a number), the id has the
exact shape of a job token, and an unknown state is refused. The job states live here, once.
"""

# No `from __future__ import annotations`: it imports the `__future__` module at run time
# (the status line's budget); annotations naming more than a builtin are strings.

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

LEDGER_VERSION = 1
# The variables that name the agent session a process runs in, first found wins: corral's
# own, then each agent's (every command Claude Code, Codex or Qwen Code spawns carries one;
# Gemini's and opencode's carry none, corral's rewrite gives their supervisor `--session`).
SESSION_VARIABLES = (
    "CORRAL_SESSION",
    "CLAUDE_CODE_SESSION_ID",
    "CODEX_THREAD_ID",
    "QWEN_CODE_SESSION_ID",
)


def session_from(environ: "Mapping[str, str]") -> "str | None":
    """The agent session named in `environ` (SESSION_VARIABLES), if any."""
    for name in SESSION_VARIABLES:
        value = environ.get(name)
        if value:
            return value
    return None


DEFAULT_GRACE = 3.0
MAX_GRACE = 3600.0
# The job's states, as the ledger holds them: a job runs, is being stopped, or has ended.
RUNNING, STOPPING, EXITED, STOPPED, KILLED = "running", "stopping", "exited", "stopped", "killed"
STATES = (RUNNING, STOPPING, EXITED, STOPPED, KILLED)
STATES_FINAL = (EXITED, STOPPED, KILLED)
# Observed, never recorded: the supervisor died (SIGKILL) while processes of the job run.
UNSUPERVISED = "unsupervised"
# The moves a job's state may make: the supervisor checks the states it records, the
# service those it records for a job whose supervisor is gone. Anything else is a bug in
# whoever reported it.
TRANSITIONS = {
    RUNNING: frozenset({STOPPING, EXITED, KILLED, UNSUPERVISED}),
    STOPPING: frozenset({STOPPED, KILLED, EXITED, UNSUPERVISED}),
    UNSUPERVISED: frozenset({STOPPED, KILLED}),
    STOPPED: frozenset(),
    EXITED: frozenset(),
    KILLED: frozenset(),
}
TOKEN_LENGTH = 32  # a job's id: 128 random bits as lowercase hex digits
_HEX = frozenset("0123456789abcdef")


def is_token(value: object) -> bool:
    """`value` has the exact shape of a job id (what the supervisor makes and accepts), so
    it is safe in a file name."""
    return isinstance(value, str) and len(value) == TOKEN_LENGTH and set(value) <= _HEX


class IllegalTransition(ValueError):
    """A job's state moved where TRANSITIONS forbids."""


def transition(job_id: str, current: str, new: str) -> str:
    """`new`, if a job may move there from `current`; else IllegalTransition naming the job,
    its state and the allowed moves."""
    if new == current or new in TRANSITIONS[current]:
        return new
    allowed = ", ".join(sorted(TRANSITIONS[current])) or "none (final)"
    raise IllegalTransition(
        f"job {job_id}: cannot go from {current} to {new}; allowed from {current}: {allowed}"
    )


# field: (kind, required). Kinds: "text", "int" (not a bool), "number" (int or float, not a
# bool, finite), "pid" (int > 0); a "?" suffix allows null.
FIELDS = {
    "version": ("int", True),
    "id": ("text", True),
    "pid": ("pid", True),
    "started_at": ("text?", True),
    "pgid": ("pid", True),
    "mode": ("text", True),
    "session": ("text?", True),
    "cwd": ("text", True),
    "command": ("text", True),
    "digest": ("text", True),
    "state": ("text", True),
    "created_at": ("number", True),
    "identity": ("text?", False),
    "port": ("int?", False),
    "backend": ("text", False),
    "shell": ("text?", False),
    "parent_pid": ("int?", False),
    "front_pid": ("int?", False),  # in place of `CMD &`: the process `$!` names (front.py)
    "exit_code": ("int?", False),
    "signal": ("int?", False),
    "stop_requested_at": ("number?", False),
    "ended_at": ("number?", False),
    "grace": ("number", False),
    "log": ("text?", False),  # the regular file the job's output goes to (None: not kept)
    # text added with the supervisor's --meta (tmux backend, job folder)
    "job_cwd": ("text", False),
    "name": ("text", False),  # `corral run --name`
    "tmux": ("text", False),
    "tmux_pane": ("text", False),
    "tmux_socket": ("text", False),
    "tmux_pane_pid": ("text", False),
}


def _fits(kind: str, value: object) -> bool:
    if kind.endswith("?"):
        if value is None:
            return True
        kind = kind[:-1]
    if kind == "text":
        return isinstance(value, str)
    if isinstance(value, bool):
        return False
    if kind == "pid":
        return isinstance(value, int) and value > 0
    if kind == "int":
        return isinstance(value, int)
    return isinstance(value, int | float) and abs(value) < float("inf")  # NaN fails too


def check(data: object, name: "str | None" = None) -> "dict[str, Any]":
    """`data` (a parsed ledger file, named `name`) if it is a record every reader can trust;
    else ValueError saying which field is wrong. Unknown fields (from a newer supervisor)
    are kept as they are."""
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    for field, (kind, required) in FIELDS.items():
        if field not in data:
            if required:
                raise ValueError(f"field {field!r} missing")
        elif not _fits(kind, data[field]):
            raise ValueError(f"field {field!r} is {_shown(data[field])}, not {kind.rstrip('?')}")
    if data["version"] != LEDGER_VERSION:
        raise ValueError(f"unknown ledger version {data['version']!r}")
    if not is_token(data["id"]):
        raise ValueError(f"field 'id' is {_shown(data['id'])}, not a job id (32 hex digits)")
    if name is not None and name != data["id"] + ".json":
        raise ValueError(f"file name {name!r} does not match the job id")
    if data["state"] not in STATES:
        raise ValueError(f"field 'state' is {_shown(data['state'])}, not a job state")
    grace = data.get("grace", DEFAULT_GRACE)
    if not 0 <= grace <= MAX_GRACE:
        raise ValueError(f"field 'grace' is {grace!r}, not 0 to {MAX_GRACE:g} seconds")
    port = data.get("port")
    if port is not None and not 0 <= port <= 65535:
        raise ValueError(f"field 'port' is {port!r}, not a port number")
    return data


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _json_value(value: "Any") -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if abs(value) < float("inf") else "null"  # NaN compares False
    out = ['"']
    for char in str(value):
        code = ord(char)
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def encode_record(record: "dict[str, Any]") -> bytes:
    """JSON for a flat record (the json module costs milliseconds of start-up to import)."""
    body = ", ".join(f"{_json_value(k)}: {_json_value(v)}" for k, v in record.items())
    return ("{" + body + "}").encode("utf-8")


def write_record(ledger: str, record: "dict[str, Any]") -> None:
    """Atomically replace <ledger>/<id>.json with `record` (temp file + rename, mode 0600)."""
    import errno
    import os

    final = os.path.join(ledger, record["id"] + ".json")
    temp = os.path.join(ledger, f".{record['id']}.{os.getpid()}.tmp")
    data = encode_record(record)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        try:
            if os.write(fd, data) != len(data):
                raise OSError(errno.ENOSPC, "short write", temp)
        finally:
            os.close(fd)
        os.replace(temp, final)
    except OSError:
        try:  # a full disk must not keep the empty temp file as litter
            os.unlink(temp)
        except OSError:
            pass
        raise
