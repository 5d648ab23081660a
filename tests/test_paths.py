"""corral's folders without platformdirs (the hook's `python -I -S` path) are the same as
with it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import platformdirs
import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
CASES = [{}, {"XDG_STATE_HOME": "/x/state", "XDG_CONFIG_HOME": "/x/config"},
         {"XDG_STATE_HOME": "relative", "XDG_CONFIG_HOME": "  "}]  # fmt: skip


@pytest.mark.parametrize("env", CASES)
def test_folders_by_hand_match_platformdirs(env: dict[str, str], monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("CORRAL_HOME")
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    code = (
        f"import sys; sys.path.insert(0, {str(SRC)!r}); from corral import paths\n"
        "from corral.lowlevel import locations\n"
        "print(paths.home_dir()); print(paths.config_file())\n"
        "assert locations.home_dir() == paths.home_dir()\n"
        "assert locations.config_path() == str(paths.config_file())\n"
        "print('platformdirs' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True,
        env={"HOME": str(tmp_path), **env},
    ).stdout.split("\n")  # fmt: skip
    assert out[0] == platformdirs.user_state_dir("corral", appauthor=False)
    assert out[1] == str(
        Path(platformdirs.user_config_dir("corral", appauthor=False)) / "config.toml"
    )
    assert out[2] == "False"
