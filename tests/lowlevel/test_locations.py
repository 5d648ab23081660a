"""One definition of corral's folders and of the supervisor's command line, used the same way
by every program; corral's folders are private, and it never changes one it did not create."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from corral.lowlevel import locations
from corral.surfaces.claude import hook
from tests.helpers import LAUNCHER, corral, kill_with_env, wait_for


def _env_without_home(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CORRAL_HOME", "XDG_STATE_HOME")}
    return {**env, "HOME": str(tmp_path / "user"), **extra}


def test_relative_corral_home_is_made_absolute_from_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CORRAL_HOME", "state//here/")
    assert locations.home_dir() == f"{tmp_path}/state/here"
    assert locations.ledger_dir() == f"{tmp_path}/state/here/ledger"
    monkeypatch.setenv("CORRAL_HOME", "  ")  # blank: unset
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", "relative")  # ignored, as the XDG rules say
    assert locations.home_dir() == f"{tmp_path}/.local/state/corral"


def test_supervisor_without_ledger_uses_the_same_folder_as_the_cli(tmp_path: Path) -> None:
    # A relative XDG_STATE_HOME: the supervisor once took it as given (from the job's
    # folder) while the CLI ignored it, so `corral ls` never saw the job.
    work = tmp_path / "work"
    work.mkdir()
    mark = f"CORRAL_TEST_MARK={uuid.uuid4()}"
    env = _env_without_home(tmp_path, XDG_STATE_HOME="rel", CORRAL_TEST_MARK=mark[17:])
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", str(LAUNCHER), "--", "true"],
            cwd=work, env=env, timeout=30, check=True,
        )  # fmt: skip
        assert done.returncode == 0
        ledger = tmp_path / "user" / ".local" / "state" / "corral" / "ledger"
        assert len(list(ledger.glob("*.json"))) == 1
        assert not (work / "rel").exists()
        listed = json.loads(corral("ls", "--all", "--json", cwd=work, env=env).stdout)
        assert len(listed["data"]) == 1
    finally:
        kill_with_env(mark.encode())


def test_job_started_through_the_hook_is_listed_by_ls(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    mark = f"CORRAL_TEST_MARK={uuid.uuid4()}"
    env = _env_without_home(tmp_path, XDG_STATE_HOME="rel", CORRAL_TEST_MARK=mark[17:])
    payload = {
        "hook_event_name": "PreToolUse", "session_id": str(uuid.uuid4()), "cwd": str(work),
        "permission_mode": "default", "tool_name": "Bash", "tool_use_id": "toolu_1",
        "tool_input": {"command": "sleep 300 &", "description": "d"},
    }  # fmt: skip
    try:
        out = subprocess.run(
            hook.command("pre-tool-use"), input=json.dumps(payload), capture_output=True,
            text=True, env=env, timeout=60, check=True,
        ).stdout  # fmt: skip
        command = json.loads(out)["hookSpecificOutput"]["updatedInput"]["command"]
        assert "--ledger" in command.split()
        subprocess.run(["bash", "-c", command], cwd=work, env=env, timeout=30, check=True)
        token = command.split()[command.split().index("--job") + 1]

        def listed() -> bool:
            data = json.loads(corral("ls", "--json", cwd=work, env=env).stdout)["data"]
            return any(job["id"] == token for job in data)

        wait_for(listed, what="the hook's job listed by corral ls")
        assert corral("stop", token[:12], cwd=work, env=env).returncode == 0
    finally:
        kill_with_env(mark.encode())


def test_every_supervisor_command_comes_from_one_builder() -> None:
    argv = locations.supervisor_argv(
        "npm run dev", token="a" * 32, mode="detached", ledger="/l", grace=1.5, port=3000
    )
    assert argv == [
        sys.executable, "-I", "-S", locations.LAUNCHER, "--job", "a" * 32, "--detached",
        "--ledger", "/l", "--grace", "1.5", "--port", "3000", "--", "npm run dev",
    ]  # fmt: skip
    src = Path(locations.__file__).resolve().parent.parent
    for path in src.rglob("*.py"):  # nobody else spells the supervisor's options out
        if path.name != "locations.py" and "supervisor" not in path.parts:
            text = path.read_text()
            assert '"--ledger", ' not in text and '"--job", ' not in text, path


# -- private folders (issue 11.8) ---------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_new_corral_home_is_created_private(tmp_path: Path) -> None:
    home = tmp_path / "new" / "home"
    env = {**os.environ, "CORRAL_HOME": str(home)}
    assert corral("run", "-d", "-c", "true", env=env).returncode == 0
    assert _mode(home) == 0o700
    assert _mode(home / "ledger") == 0o700 and _mode(home / "logs") == 0o700


@pytest.mark.parametrize("mode", [0o755, 0o1777])
def test_existing_open_corral_home_is_refused_and_left_as_it_was(tmp_path: Path, mode: int) -> None:
    home = tmp_path / "shared"
    home.mkdir()
    home.chmod(mode)
    env = {**os.environ, "CORRAL_HOME": str(home)}
    result = corral("run", "-d", "-c", "sleep 300", env=env)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert f"{home}: CORRAL_HOME is an existing folder with mode {mode:04o}" in result.stderr
    assert "chmod 700" in result.stderr
    assert _mode(home) == mode
    assert not (home / "ledger").exists()
    # the supervisor itself never changes it either (it runs the line unsupervised)
    subprocess.run([sys.executable, "-I", "-S", str(LAUNCHER), "--", "true"], env=env, check=True)
    assert _mode(home) == mode and not (home / "ledger").exists()


def test_existing_private_corral_home_is_used(tmp_path: Path) -> None:
    home = tmp_path / "mine"
    home.mkdir(mode=0o700)
    env = {**os.environ, "CORRAL_HOME": str(home)}
    assert corral("run", "-d", "-c", "true", env=env).returncode == 0
    assert (home / "ledger").is_dir()


def test_folders_below_the_home_are_corrals_own(tmp_path: Path) -> None:
    home = tmp_path / "mine"
    (home / "ledger").mkdir(parents=True, mode=0o755)  # an older corral's ledger
    home.chmod(0o700)
    os.environ["CORRAL_HOME"] = str(home)  # the fixture restores it
    assert locations.ensure_private(str(home / "ledger" / "x")) == f"{home}/ledger/x"
    assert _mode(home / "ledger") == 0o700 and _mode(home / "ledger" / "x") == 0o700
