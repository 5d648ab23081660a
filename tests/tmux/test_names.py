"""Pure parts of the tmux backend: names, the nested-tmux rule, the configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral import config
from corral.adapters import tmux
from corral.backends.tmux.tmux_wrapper import uses_tmux


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("vite", "vite"),
        ("npx vite --port 5174", "vite-5174"),
        ("npm run dev -- --port 5174", "dev-5174"),
        ("pnpm dev", "dev"),
        ("tsc --watch", "tsc-watch"),
        ("tsc -w -p tsconfig.json", "tsc-watch"),
        ("PORT=3000 node server.js", "node-3000"),
        ("python -m http.server 8000", "http_server"),
        ("/usr/bin/env FOO=1 make serve", "serve"),
        ("", "job"),
        ("echo 'unclosed", "echo"),
        ("cat; ls /proc/self/fd", "cat"),  # `cat;` would end the tmux command
        ("a;b", "a_b"),
    ],
)
def test_window_names(line: str, name: str) -> None:
    assert tmux.window_name(line) == name


def test_names_are_made_unique() -> None:
    assert tmux.unique_name("vite", set()) == "vite"
    assert tmux.unique_name("vite", {"vite", "vite-2"}) == "vite-3"


def test_session_is_the_git_top_level_folder_sanitised(tmp_path: Path) -> None:
    repo = tmp_path / "my.app:v2"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "deep").mkdir(parents=True)
    assert tmux.session_name(str(repo / "src" / "deep")) == "my_app_v2"
    assert tmux.session_name(str(tmp_path)) == tmux.clean_name(tmp_path.name, "corral")
    assert tmux.clean_name("...", "corral") == "corral"


@pytest.mark.parametrize(
    ("line", "nested"),
    [
        ("tmux new -d", True),
        ("echo hi && tmux ls", True),
        ("/usr/bin/tmux -V", True),
        ("echo tmux-ish", False),
        ("npm run dev", False),
    ],
)
def test_lines_using_tmux_are_not_wrapped(line: str, nested: bool) -> None:
    assert uses_tmux(line) is nested


def test_config_defaults_and_values(corral_home: Path) -> None:
    assert (config.backend(), config.tmux_keep_windows()) == ("group", False)
    (corral_home / "config.toml").write_text('backend = "tmux"\n[tmux]\nkeep_windows = true\n')
    assert (config.backend(), config.tmux_keep_windows()) == ("tmux", True)
    (corral_home / "config.toml").write_text('backend = "screen"\n[broken')
    assert config.backend() == "group"
