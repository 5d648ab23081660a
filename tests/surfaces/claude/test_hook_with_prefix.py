"""The PreToolUse hook when corral's shell prefix is installed (Claude Code passes
CLAUDE_CODE_SHELL_PREFIX to hooks): it rewrites nothing, so no line is supervised twice; it
notes background calls for the prefix and still refuses a duplicate early."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from corral.surfaces.claude import prefix
from tests.helpers import corral, free_port, start_job
from tests.surfaces.claude.test_hook import SESSION, answer, payload, run_hook


def prefix_env(corral_home: Path) -> dict[str, str]:
    return {"CLAUDE_CODE_SHELL_PREFIX": prefix.launcher_path(str(corral_home))}


def test_a_long_runner_is_not_rewritten(tmp_path: Path, corral_home: Path) -> None:
    line = f"python3 -m http.server {free_port()} --bind 127.0.0.1"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    without = answer(run_hook("pre-tool-use", payload(line, elsewhere)))
    assert "updatedInput" in without  # the rewrite the prefix replaces
    shutil.rmtree(corral_home / "reservations")  # that rewrite's reservations
    result = run_hook("pre-tool-use", payload(line, tmp_path), env=prefix_env(corral_home))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert not (corral_home / "reservations").exists() or not os.listdir(
        corral_home / "reservations"
    )  # the prefix reserves when it runs, so a reservation here would refuse it


def test_a_background_call_leaves_a_note_for_the_prefix(tmp_path: Path, corral_home: Path) -> None:
    line = "sleep 1; echo done"
    data = payload(line, tmp_path, run_in_background=True)
    result = run_hook("pre-tool-use", data, env=prefix_env(corral_home))
    assert (result.returncode, result.stdout) == (0, "")
    assert prefix.take_note(str(corral_home), SESSION, line)
    assert not prefix.take_note(str(corral_home), SESSION, line)  # used once


def test_a_duplicate_is_still_refused_early(tmp_path: Path, corral_home: Path) -> None:
    port = free_port()
    line = f"python3 -m http.server {port} --bind 127.0.0.1"
    job = start_job(line, cwd=tmp_path)
    try:
        data = payload(line, tmp_path, run_in_background=True)
        again = answer(run_hook("pre-tool-use", data, env=prefix_env(corral_home)))
        assert again["permissionDecision"] == "deny"
        assert job["id"][:8] in again["permissionDecisionReason"]
        assert "updatedInput" not in again
    finally:
        corral("stop", "--all", check=True)


def test_a_line_the_hook_read_is_not_read_again_by_the_prefix(
    tmp_path: Path, corral_home: Path
) -> None:
    """`python3 -c …` has a trigger word (python), so the prefix's sh fast path
    hands it to python; the hook's line reader already found nothing to supervise in it, in
    the same folder, and said so in a note: the prefix runs it as it came without loading
    the line reader (once; a second run of the same line is read again)."""
    import json
    import subprocess
    import sys

    from corral.core.claude.shell_string import compose

    line = "python3 -c 'print(6 * 7)'"
    result = run_hook("pre-tool-use", payload(line, tmp_path), env=prefix_env(corral_home))
    assert (result.returncode, result.stdout) == (0, "")
    string = compose(line, "true && ", str(tmp_path / "cwd-file"))
    code = (
        "import json, os, sys\n"
        "from corral.surfaces.claude import prefix\n"
        "from corral.lowlevel.shells import caller_environment\n"
        "env = caller_environment()\n"
        f"first = prefix.plan({string!r}, '', env, {str(corral_home)!r})\n"
        "read_first = 'corral.core.shell.parse' in sys.modules\n"
        f"second = prefix.plan({string!r}, '', env, {str(corral_home)!r})\n"
        "print(json.dumps([first.argv, read_first, second.argv,"
        " 'corral.core.shell.parse' in sys.modules]))"
    )
    env = {**os.environ, "CLAUDE_CODE_SESSION_ID": SESSION, "CORRAL_HOME": str(corral_home)}
    env["SHELL"] = "/bin/bash"  # Claude Code's shell (CI runs with SHELL unset)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    first, read_first, second, read_second = json.loads(out.stdout)
    assert first == second and first[-1] == string  # run as it came, both times
    assert (read_first, read_second) == (False, True)


def _note_nothing(home: Path, cwd: Path, command: str) -> None:
    from corral.core.shell.decision import Action, Decision, Reading
    from corral.surfaces.claude import notes

    nothing = Reading(Decision(True, None, Action.UNTOUCHED, None, None, None, ()))
    notes.note_reading(
        str(home), SESSION, str(cwd), command, background=False, wrapper=["w"], reading=nothing
    )


def test_notes_of_lines_that_never_ran_are_swept(tmp_path: Path, corral_home: Path) -> None:
    from corral.surfaces.claude import notes

    _note_nothing(corral_home, tmp_path, "python3 old.py")
    folder = corral_home / "prefix-read"
    [old] = list(folder.iterdir())
    os.utime(old, (0, 0))  # a call denied long ago: its note was never taken
    _note_nothing(corral_home, tmp_path, "python3 new.py")
    assert len(list(folder.iterdir())) == 1 and not old.exists()
    taken = notes.take_reading(
        str(corral_home), SESSION, str(tmp_path), "python3 new.py", background=False
    )
    assert taken is not None and notes.nothing_to_supervise(taken)
    assert not list(folder.iterdir())
