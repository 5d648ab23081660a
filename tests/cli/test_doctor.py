"""corral doctor (issue 11, point 9): every kind of bad state is reported with what `--fix`
would do, `--fix` does it, and a second run finds nothing wrong."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from tests.helpers import corral, ledger_record, private_home


def _gone_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _doctor(*args: str, **kw: Any) -> tuple[int, dict[str, Any]]:
    result = corral("doctor", "--json", *args, **kw)
    return result.returncode, json.loads(result.stdout)["data"]


def _problems(data: dict[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for f in data["findings"]:
        if f["problem"]:
            found.setdefault(f["check"], []).append(f["text"])
    return found


def test_a_healthy_home_has_nothing_wrong(corral_home: Path) -> None:
    result = corral("doctor")
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip().endswith("nothing wrong")


def test_every_kind_of_bad_state_is_reported_and_fixed(corral_home: Path) -> None:
    ledger = corral_home / "ledger"
    ledger.mkdir(mode=0o755)
    os.chmod(ledger, 0o755)
    (ledger / f"{uuid.uuid4().hex}.json").write_text("{not json")
    typed = ledger_record(
        corral_home, state="running", exit_code=None, ended_at=None, pid="1234"
    )  # a wrongly typed field
    dead = ledger_record(
        corral_home, state="running", exit_code=None, ended_at=None, pid=_gone_pid()
    )
    old = time.time() - 3600
    temp = ledger / f".{dead}.4194304.tmp"
    temp.touch()
    os.utime(temp, (old, old))
    (corral_home / "corral.sqlite3").write_bytes(os.urandom(8192))
    reservations = corral_home / "reservations"
    reservations.mkdir(mode=0o700)
    (reservations / "0123abcd.json").write_text(json.dumps({"token": "x", "at": old}))
    with socket.socket(socket.AF_UNIX) as sock:  # a daemon that died: its socket file stays
        sock.bind(str(corral_home / "corral.sock"))

    status, data = _doctor()
    assert status == 1 and not data["ok"]
    problems = _problems(data)
    assert set(problems) == {
        "state folders", "ledger", "litter", "database", "reservations", "daemon"
    }  # fmt: skip
    ledger_text = " | ".join(problems["ledger"])
    assert f"unreadable record {typed}.json: field 'pid'" in ledger_text
    assert f"job {dead[:8]}: its supervisor is gone" in ledger_text
    assert len(problems["ledger"]) == 3  # the unparseable file, the typed one, the dead job
    human = corral("doctor")
    assert "PROBLEM" in human.stdout and "--fix would" in human.stdout
    assert "`corral doctor --fix` fixes" in human.stdout

    fixed = corral("doctor", "--fix")
    assert fixed.returncode == 0, fixed.stdout
    assert "all fixed" in fixed.stdout
    status, data = _doctor()
    assert status == 0 and data["ok"], _problems(data)
    assert len(list((corral_home / "bad-records").iterdir())) == 2
    assert not (corral_home / "corral.sock").exists() and not temp.exists()
    assert os.stat(ledger).st_mode & 0o777 == 0o700
    assert list(corral_home.glob("corral.sqlite3.bad-*"))


def _install(home: Path, project: Path) -> Path:
    result = corral("install", "claude", cwd=project, env=private_home(home))
    assert result.returncode == 0, result.stderr
    return home / ".claude" / "settings.json"


def test_claude_hooks_naming_a_missing_program_are_reinstalled(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    settings = _install(home, project)
    moved = settings.read_text().replace(sys.executable, "/gone/venv/bin/python3")
    settings.write_text(moved)
    env = private_home(home)
    status, data = _doctor(cwd=project, env=env)
    assert status == 1
    (text,) = _problems(data)["claude code"]
    assert "/gone/venv/bin/python3, which does not exist" in text
    assert corral("doctor", "--fix", cwd=project, env=env).returncode == 0
    assert "/gone/" not in settings.read_text()
    assert _doctor(cwd=project, env=env)[0] == 0


def test_corral_as_plugin_and_in_settings_is_reported_and_the_settings_hooks_go(
    tmp_path: Path,
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    settings = _install(home, project)
    plugins = home / ".claude" / "plugins"
    plugins.mkdir()
    installed = {"version": 2, "plugins": {"corral@corral": [{"scope": "user"}]}}
    (plugins / "installed_plugins.json").write_text(json.dumps(installed))
    env = private_home(home)
    status, data = _doctor(cwd=project, env=env)
    assert status == 1
    (text,) = _problems(data)["claude code"]
    assert "installed twice" in text and "every hook runs twice" in text
    assert corral("doctor", "--fix", cwd=project, env=env).returncode == 0
    after = json.loads(settings.read_text())
    assert "hooks" not in after and "statusLine" in after
    assert _doctor(cwd=project, env=env)[0] == 0
