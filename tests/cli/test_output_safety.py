"""Commands are data (issue 11, point 10): no human output interprets rich markup in a
command (`[/x]` crashed `corral ls`; `[bold red]` and `[link=…]` were rendered) or passes
its control characters (ESC, OSC 8 hyperlinks, bells, carriage returns) to the terminal."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.cli.main import main
from corral.core.text import printable, unsafe
from tests.helpers import corral, ledger_record, start_job, wait_for

ESC = "\x1b"
OSC8 = f"{ESC}]8;;https://evil.example/{ESC}\\click{ESC}]8;;{ESC}\\"
NASTY = f"sleep 300 # [/x] [bold red]red[/] [link=https://evil.example]l[/link] {ESC}[2J\a\r{OSC8}"


def _control_free(out: str) -> bool:
    return not any(unsafe(c) for c in out.replace("\n", ""))


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.text(min_size=1, max_size=40))
def test_any_command_text_renders_and_sends_no_control_character(
    command: str, corral_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token = ledger_record(corral_home, command=command)
    try:
        assert main(["ls", "--all"]) == 0
        listed = capsys.readouterr().out
        assert main(["stop", token]) == 0  # already exited: reported with its command
        stopped = capsys.readouterr().out
    finally:
        (corral_home / "ledger" / f"{token}.json").unlink()
    for out in (listed, stopped):
        assert _control_free(out), out
    assert printable(command).strip() in stopped


def test_markup_and_escapes_in_a_running_job_are_shown_as_text(tmp_path: Path) -> None:
    session = str(uuid.uuid4())
    job = start_job(NASTY, "--session", session, cwd=tmp_path)
    # a process of the session that corral did not start, named with an escape sequence
    loose = subprocess.Popen(
        ["bash", "-c", f'exec -a "evil{ESC}[31m[/x]" sleep 300'],
        env={**os.environ, "CORRAL_SESSION": session},
    )
    try:
        shown = printable(NASTY)
        ls = corral("ls")
        assert ls.returncode == 0, ls.stderr
        assert shown[:40] in ls.stdout and _control_free(ls.stdout)
        procs = corral("procs", "--session", session, cwd=tmp_path)
        assert procs.returncode == 0, procs.stderr
        assert shown in procs.stdout and _control_free(procs.stdout)

        def listed_loose() -> str | None:
            out = corral("procs", "--session", session, cwd=tmp_path).stdout
            return out if "evil" in out else None

        loose_out = wait_for(listed_loose)
        assert printable(f"evil{ESC}[31m[/x]") in loose_out and _control_free(loose_out)
        explained = corral("explain", "--background", "--", NASTY)
        assert explained.returncode == 0 and _control_free(explained.stdout)
        markup = "sleep 300 '[/x] [bold red]red[/] [link=https://evil.example]l[/link]'"
        explained = corral("explain", "--background", "--", markup)
        assert f"job: {markup}" in explained.stdout
        stop = corral("stop", job["id"])
        assert stop.returncode == 0, stop.stderr
        assert shown in stop.stdout and _control_free(stop.stdout)
    finally:
        corral("stop", "--all")
        loose.kill()
        loose.wait()


@given(st.text())
def test_printable_leaves_no_unsafe_character_and_keeps_plain_text(text: str) -> None:
    shown = printable(text)
    assert not any(unsafe(c) for c in shown)
    assert printable(shown) == shown  # idempotent: escaping twice changes nothing
    if not any(unsafe(c) for c in text):
        assert shown == text
