"""The note the PreToolUse hook leaves corral's shell prefix on a line it read: with a valid
one the prefix checks the hook's reading against the live jobs and starts the same job
without loading the line reader; with any other (missing, damaged, foreign, stale, not
private) it reads the line itself, exactly as without a note."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.core.claude.shell_string import compose
from corral.lowlevel.redact import command_digest
from corral.lowlevel.shells import caller_environment
from corral.surfaces.claude import notes, prefix
from tests.helpers import corral, free_port, start_job, wait_for
from tests.surfaces.claude.test_hook import SESSION, payload, run_hook
from tests.surfaces.claude.test_hook_with_prefix import prefix_env
from tests.surfaces.claude.test_prefix import SESSION as CALL_SESSION
from tests.surfaces.claude.test_prefix import Prefix, listening, records

READER = ("corral.core.shell.parse", "corral.core.shell.plan", "corral.core.shell.jobs")
_TOKEN = re.compile(r"[0-9a-f]{32}")


def _masked(argv: list[str] | None) -> str:
    """An argv with its job tokens (random per start) masked."""
    return _TOKEN.sub("T", json.dumps(argv))


def _env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        **prefix_env(home),
        "CLAUDE_CODE_SESSION_ID": SESSION,
        "CORRAL_HOME": str(home),
        "SHELL": "/bin/bash",  # Claude Code's shell (CI runs with SHELL unset)
    }


# Each line with the shape it takes: a whole-line task, a background task, a trailing `&`
# (detached, rewritten in the string), a mid-line `&` (in place), a job in another folder.
LINES = [
    ("python3 -m http.server {port} --bind 127.0.0.1", False),
    ("python3 -m http.server {port} --bind 127.0.0.1", True),
    ("sleep 30; echo done", True),
    ("python3 -m http.server {port} --bind 127.0.0.1 &", False),
    ("python3 -m http.server {port} --bind 127.0.0.1 & sleep 1; echo up", False),
    ("cd web && npm run dev", False),
    ("cd web && npm run dev & sleep 1", False),  # in place, its arguments checked (guard)
]


@pytest.mark.parametrize(("template", "background"), LINES)
def test_a_noted_line_starts_the_same_job_without_the_line_reader(
    tmp_path: Path, corral_home: Path, template: str, background: bool
) -> None:
    work = tmp_path / "work"
    (work / "web").mkdir(parents=True)
    (work / "web" / "package.json").write_text(json.dumps({"scripts": {"dev": "vite --port 5199"}}))
    line = template.format(port=free_port())
    data = payload(line, work, **({"run_in_background": True} if background else {}))
    hooked = run_hook("pre-tool-use", data, env=_env(corral_home))
    assert (hooked.returncode, hooked.stdout, hooked.stderr) == (0, "", "")
    string = compose(line, "true && ", str(tmp_path / "cwd-file"))
    code = (
        "import json, shutil, sys\n"
        "from corral.surfaces.claude import prefix\n"
        "from corral.lowlevel.shells import caller_environment\n"
        "env = caller_environment()\n"
        f"home, string, line = {str(corral_home)!r}, {string!r}, {line!r}\n"
        "noted = prefix.plan(string, '', env, home)\n"
        f"read = [m for m in {READER!r} + ('tree_sitter',) if m in sys.modules]\n"
        "shutil.rmtree(home + '/reservations', ignore_errors=True)\n"
        f"if {background!r}:\n"
        f"    prefix.note_background(home, {SESSION!r}, line)\n"
        "again = prefix.plan(string, '', env, home)\n"
        "print(json.dumps([noted.argv, noted.refusal, read, again.argv, again.refusal,"
        f" [m for m in {READER!r} if m in sys.modules]]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=work, env=_env(corral_home), capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    noted, refused, read, again, refused_again, read_again = json.loads(out.stdout)
    assert read == [] and read_again  # the note spared the reader; without one it ran
    assert refused is None and refused_again is None
    assert noted is not None and noted != prefix.as_it_came(string, "", caller_environment())
    assert _masked(noted) == _masked(again)  # same identity, port, folder, display, shape
    assert not list((corral_home / "prefix-read").iterdir())  # used once


@pytest.mark.parametrize("what", ["the same server", "another server on its port"])
def test_a_note_carries_no_stale_ok_the_prefix_checks_the_live_jobs(
    tmp_path: Path, corral_home: Path, what: str
) -> None:
    """The hook read the line while nothing ran; by the time the prefix runs it, the server
    (or another on its port) does: refused, on the note path, against the live jobs."""
    port = free_port()
    line = f"python3 -m http.server {port} --bind 127.0.0.1"
    hooked = run_hook("pre-tool-use", payload(line, tmp_path), env=_env(corral_home))
    assert (hooked.returncode, hooked.stdout) == (0, "")  # nothing ran: no refusal then
    elsewhere = tmp_path / "elsewhere"  # the same server in another folder: only the port
    elsewhere.mkdir()
    job = start_job(line, cwd=tmp_path if what == "the same server" else elsewhere)
    try:
        wait_for(lambda: listening(port), 10, "the port")
        string = compose(line, "true && ", str(tmp_path / "cwd-file"))
        code = (
            "import json, sys\n"
            "from corral.surfaces.claude import prefix\n"
            "from corral.lowlevel.shells import caller_environment\n"
            f"p = prefix.plan({string!r}, '', caller_environment(), {str(corral_home)!r})\n"
            f"print(json.dumps([p.argv, p.refusal, [m for m in {READER!r} if m in sys.modules]]))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, env=_env(corral_home),
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        argv, refusal, read = json.loads(out.stdout)
        assert read == [] and argv is None, out.stdout  # the note's path, and no job
        assert job["id"][:8] in refusal and str(port) in refusal
    finally:
        corral("stop", "--all", check=True)


def test_through_the_hook_and_the_prefix_program_a_noted_server_is_supervised(
    tmp_path: Path, corral_home: Path
) -> None:
    """Claude Code's order: the hook, then the prefix program (the note path end to end);
    the job is the one `corral explain` reads from the line."""
    pre = Prefix(tmp_path)
    port = free_port()
    line = f"python3 -m http.server {port} --bind 127.0.0.1"
    data = {**payload(line, pre.work, run_in_background=True), "session_id": CALL_SESSION}
    hooked = run_hook("pre-tool-use", data, env={**_env(corral_home), **pre.env()})
    assert (hooked.returncode, hooked.stdout) == (0, "")
    assert len(list((corral_home / "prefix-read").iterdir())) == 1
    process = pre.popen(pre.string(line))
    try:
        [job] = wait_for(lambda: records(corral_home), 10, "the record")
        explained = json.loads(corral("explain", "--json", line, cwd=pre.work).stdout)
        [expected] = explained["data"]["jobs"]
        assert (job["command"], job["port"], job["mode"]) == (line, port, "task")
        assert (job["identity"], job["session"]) == (expected["identity"], CALL_SESSION)
        assert not list((corral_home / "prefix-read").iterdir())  # taken
        log = corral_home / "corral.log"
        assert "shell prefix" not in (log.read_text() if log.exists() else "")  # no error
        again = pre.run(pre.string(line))  # no note: read here, refused against the live job
        assert again.returncode == 1 and job["id"][:8] in again.stderr
    finally:
        corral("stop", "--all", check=True)
        process.communicate(timeout=30)


# Notes that must not be trusted: each is written in place of a valid one.
def _valid_note(home: Path, cwd: Path, line: str) -> tuple[Path, str]:
    """The note the hook leaves for `line` (through the service, as the hook writes it)."""
    from corral.service import claude
    from corral.service.hooks import read_line

    reading = read_line(line, cwd=str(cwd), background=False)
    wrapper = claude.wrapper()
    notes.note_reading(
        str(home), SESSION, str(cwd), line, background=False, wrapper=wrapper, reading=reading
    )
    [path] = list((home / "prefix-read").iterdir())
    return path, path.read_text()


def _signed(body: object) -> str:
    text = json.dumps(body, separators=(",", ":"))
    return f"{text}\n{command_digest(text)}\n"


def _baseline(tmp_path: Path, home: Path, line: str) -> str:
    """The plan for `line` with no note: the line read here."""
    string = compose(line, "true && ", str(tmp_path / "cwd-file"))
    chosen = prefix.plan(string, "", _bytes_env(), str(home))
    shutil.rmtree(home / "reservations", ignore_errors=True)
    assert chosen.argv is not None and chosen.argv[-1] != string  # a job, not as it came
    return _masked(chosen.argv)


def _bytes_env() -> dict[bytes, bytes]:
    """Claude Code's environment for the prefix. Its SHELL is this process's: the prefix
    supervises only where the supervisor (which reads this process's SHELL) would run the
    line with the shell Claude Code uses, and CI runs with SHELL unset."""
    env = {**caller_environment(), b"CLAUDE_CODE_SESSION_ID": SESSION.encode()}
    shell = os.environ.get("SHELL") or shutil.which("bash") or "/bin/bash"
    return {**env, b"SHELL": shell.encode()}


@pytest.fixture
def noted(
    tmp_path: Path, corral_home: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, str, str]:
    monkeypatch.setenv("SHELL", "/bin/bash")
    monkeypatch.chdir(tmp_path)
    line = f"python3 -m http.server {free_port()} --bind 127.0.0.1 &"
    baseline = _baseline(tmp_path, corral_home, line)
    path, _ = _valid_note(corral_home, tmp_path, line)
    path.unlink()
    return path, tmp_path, line, baseline


def _plan_with(note: Path, text: str | bytes, tmp_path: Path, home: Path, line: str) -> str:
    """The plan (its argv as JSON) with `text` as the note on `line`."""
    _write(note, text.encode() if isinstance(text, str) else text)
    string = compose(line, "true && ", str(tmp_path / "cwd-file"))
    chosen = prefix.plan(string, "", _bytes_env(), str(home))
    shutil.rmtree(home / "reservations", ignore_errors=True)
    assert not note.exists()  # used once, trusted or not
    return json.dumps(chosen.argv)


BAD: dict[str, Callable[[dict[str, Any]], object]] = {
    "another session": lambda b: {**b, "session": "another"},
    "another command": lambda b: {**b, "command": b["command"] + " "},
    "another folder": lambda b: {**b, "cwd": "/"},
    "a background call": lambda b: {**b, "background": True},
    "expired": lambda b: {**b, "at": time.time() - notes.READ_SECONDS - 1},
    "from the future": lambda b: {**b, "at": time.time() + 60},
    "another format": lambda b: {**b, "v": notes.READ_VERSION + 1},
    "other supervisor words": lambda b: {**b, "wrapper": ["corral-run"]},
    "a job without a folder": lambda b: {**b, "jobs": [[*b["jobs"][0][:2], "web", None, True]]},
    "a wrap without a token": lambda b: {**b, "token": None},
    "in place without its rewrites": lambda b: {**b, "mode": "in-place"},
    "a rewrite of another shape": lambda b: {
        **b,
        "mode": "in-place",
        "in_place": [{"job": 0, "token": b["token"], "start": 0}],
    },
    "no body": lambda b: [b],
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_foreign_stale_or_malformed_note_is_not_trusted(
    noted: tuple[Path, Path, str, str], corral_home: Path, kind: str
) -> None:
    path, cwd, line, baseline = noted
    _, text = _valid_note(corral_home, cwd, line)
    body = json.loads(text.split("\n")[0])
    bad = _signed(BAD[kind](body))
    assert _masked(json.loads(_plan_with(path, bad, cwd, corral_home, line))) == baseline


@pytest.mark.parametrize("kind", ["group-readable", "a symlink", "a folder", "damaged"])
def test_a_note_that_is_not_a_private_file_of_ours_is_not_trusted(
    noted: tuple[Path, Path, str, str], corral_home: Path, kind: str
) -> None:
    path, cwd, line, baseline = noted
    _, text = _valid_note(corral_home, cwd, line)
    if kind == "group-readable":
        os.chmod(path, 0o640)
    elif kind in ("a symlink", "a folder"):
        path.rename(cwd / "elsewhere")
        if kind == "a symlink":
            path.symlink_to(cwd / "elsewhere")  # taken away, not followed
        else:
            path.mkdir()
    else:
        path.write_text(text.replace('"task"', '"detached"'))  # the digest no longer agrees
    string = compose(line, "true && ", str(cwd / "cwd-file"))
    chosen = prefix.plan(string, "", _bytes_env(), str(corral_home))
    shutil.rmtree(corral_home / "reservations", ignore_errors=True)
    assert _masked(chosen.argv) == baseline
    if kind == "a folder":
        path.rmdir()
    else:
        assert not path.is_symlink() and not path.exists()  # not left for the next call


def test_a_valid_note_is_trusted(noted: tuple[Path, Path, str, str], corral_home: Path) -> None:
    """The control for the tests above: the same note, untouched, is used."""
    path, cwd, line, baseline = noted
    _, text = _valid_note(corral_home, cwd, line)
    body = json.loads(text.split("\n")[0])
    body["token"] = "a" * 32  # the note's own token ends up in the job: it was used
    body["rewritten"] = _TOKEN.sub("a" * 32, body["rewritten"])
    planned = _plan_with(path, _signed(body), cwd, corral_home, line)
    assert "a" * 32 in planned and _masked(json.loads(planned)) == baseline


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
KEYS = ["v", "at", "session", "cwd", "command", "background", "wrapper", "action", "mode",
        "rewritten", "token", "jobs", "in_place"]  # fmt: skip


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cut=st.integers(min_value=0, max_value=10_000),
    flip=st.integers(min_value=0, max_value=10_000),
    garbage=st.binary(max_size=300),
    kind=st.sampled_from(["truncated", "a byte changed", "garbage"]),
)
def test_a_damaged_note_falls_back_to_reading_the_line(  # noqa: PLR0917 - hypothesis's
    noted: tuple[Path, Path, str, str],
    corral_home: Path,
    cut: int,
    flip: int,
    garbage: bytes,
    kind: str,
) -> None:
    path, cwd, line, baseline = noted
    _, text = _valid_note(corral_home, cwd, line)
    raw = text.encode()
    path.unlink()
    if kind == "truncated":
        bad = raw[: cut % len(raw)]
    elif kind == "a byte changed":
        at = flip % len(raw)
        bad = raw[:at] + bytes([raw[at] ^ 0x20]) + raw[at + 1 :]
    else:
        bad = garbage
    assert _masked(json.loads(_plan_with(path, bad, cwd, corral_home, line))) == baseline


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(key=st.sampled_from(KEYS), value=JSON, drop=st.booleans())
def test_a_note_of_any_shape_never_breaks_the_prefix(
    noted: tuple[Path, Path, str, str], corral_home: Path, key: str, value: Any, drop: bool
) -> None:
    """Whatever a signed note holds, the prefix plans without an error; a note that no longer
    names this call (session, folder, command, kind, format, age) is not used at all."""
    path, cwd, line, _ = noted
    _, text = _valid_note(corral_home, cwd, line)
    body = json.loads(text.split("\n")[0])
    if drop:
        body.pop(key)
    else:
        body[key] = value
    _write(path, _signed(body).encode())
    taken = notes.take_reading(str(corral_home), SESSION, str(cwd), line, background=False)
    if key in ("v", "at", "session", "cwd", "command", "background") and (
        drop or value != json.loads(text.split("\n")[0])[key]
    ):
        assert taken is None
    if taken is not None:  # never raises, whatever the words
        for wrapper in (["any"], taken.get("wrapper"), body.get("wrapper")):
            notes.reading_of(taken, wrapper if isinstance(wrapper, list) else [])
    _write(path, _signed(body).encode())
    string = compose(line, "true && ", str(cwd / "cwd-file"))
    chosen = prefix.plan(string, "", _bytes_env(), str(corral_home))  # never raises
    shutil.rmtree(corral_home / "reservations", ignore_errors=True)
    assert chosen.argv is not None or chosen.refusal is not None


def _write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
