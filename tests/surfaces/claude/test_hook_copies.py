"""Two copies of corral's hook for one tool call (a plugin plus a settings install, or two
scopes' settings): Claude Code runs both, in parallel. They must never deny each other."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

from tests.helpers import free_port
from tests.surfaces.claude.test_hook import payload, run_hook, stop_all


def _both(event: str, data: dict[str, object]) -> list[subprocess.CompletedProcess[str]]:
    """Start two hook processes for the same input at once, as Claude Code does."""
    from corral.surfaces.claude import hook

    text = json.dumps(data)
    procs = [
        subprocess.Popen(
            hook.command(event),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(text, timeout=60)
        results.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return results


def test_two_copies_of_the_hook_for_one_call_never_deny_each_other(tmp_path: Path) -> None:
    for n in range(5):  # the race is the point: several rounds, a fresh call each
        # a fresh server each round: the one answered before holds its reservation
        line = f"python3 -m http.server {free_port()} --bind 127.0.0.1"
        (tmp_path / str(n)).mkdir()
        data = payload(line, tmp_path / str(n), run_in_background=True)
        results = _both("pre-tool-use", data)
        assert [r.returncode for r in results] == [0, 0]
        outs = [json.loads(r.stdout)["hookSpecificOutput"] for r in results if r.stdout]
        assert len(outs) == 1, [r.stdout for r in results]  # one answers, the other is silent
        assert "updatedInput" in outs[0]
        assert "permissionDecision" not in outs[0]
    stop_all()


def test_a_second_copy_is_silent_and_a_new_call_is_answered(
    tmp_path: Path, corral_home: Path
) -> None:
    data = payload("sleep 300 &", tmp_path)
    first = run_hook("pre-tool-use", data)
    assert "updatedInput" in json.loads(first.stdout)["hookSpecificOutput"]
    again = run_hook("pre-tool-use", data)  # the same call, as a second copy sees it
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")
    # a new call is answered: refused, as the first call's job is being started
    fresh = run_hook("pre-tool-use", {**data, "tool_use_id": f"toolu_{uuid.uuid4().hex}"})
    assert json.loads(fresh.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    # an id that cannot name a file is never claimed: such a call is always answered
    odd = {**data, "tool_use_id": "../x"}
    for _ in range(2):
        assert json.loads(run_hook("pre-tool-use", odd).stdout)["hookSpecificOutput"]
    assert len(list((corral_home / "hook-calls").iterdir())) == 2  # the two answered ids


def test_the_first_hook_call_ever_makes_corrals_home_private_and_wraps(tmp_path: Path) -> None:
    """A CORRAL_HOME that does not exist yet: the hook's first file (its claim on the call)
    creates the home with mode 0700, as every other program does; a home made with the
    default mode would be refused as unsafe from then on, and nothing would ever be
    supervised."""
    import stat

    home = tmp_path / "new-home"
    env = {"CORRAL_HOME": str(home)}
    data = payload("npm run dev", tmp_path, run_in_background=True)
    result = run_hook("pre-tool-use", data, env=env)
    assert "updatedInput" in result.stdout, (result.stdout, _log(home))
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "hook-calls").stat().st_mode) == 0o700
    stop_all()


def _log(home: Path) -> str:
    log = home / "corral.log"
    return log.read_text() if log.exists() else ""
