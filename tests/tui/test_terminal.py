"""`corral tui` in a real terminal (tmux on a private socket) with two real jobs: the screen
shows both commands and the port, `s` then `y` stops the selected job and the screen shows it
stopped, `q` ends it with status 0 and leaves the terminal as it found it."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers import alive, free_port, pids_with_env, start_job, wait_for
from tests.tui.conftest import stop_daemon

pytestmark = pytest.mark.slow  # a real terminal, a real daemon, real jobs: seconds


class Terminal:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30
        ).stdout

    def screen(self) -> list[str]:
        return self.tmux("capture-pane", "-p", "-t", "tui").splitlines()

    def line_with(self, text: str) -> str:
        return next((line for line in self.screen() if text in line), "")

    def wait(self, predicate: Callable[[], object], what: str, timeout: float = 30) -> None:
        """Wait for `predicate`; on a timeout, say what the screen showed."""
        try:
            wait_for(predicate, timeout, what)
        except AssertionError:
            screen = "\n".join(self.screen())
            raise AssertionError(f"timed out waiting for {what}; the screen:\n{screen}") from None

    def flag(self, name: str) -> str:
        return self.tmux("display-message", "-p", "-t", "tui", f"#{{{name}}}").strip()


@pytest.fixture
def terminal(corral_home: Path) -> Iterator[Terminal]:
    if subprocess.run(["sh", "-c", "command -v tmux"], capture_output=True).returncode:
        pytest.fail("tmux is not installed: scripts/system-deps.sh installs it")
    term = Terminal(f"corral-tui-{os.urandom(6).hex()}")
    yield term
    term.tmux("kill-server")
    base = os.environ.get("TMUX_TMPDIR") or "/tmp"
    Path(base, f"tmux-{os.getuid()}", term.socket).unlink(missing_ok=True)
    stop_daemon(corral_home)
    # kill-server hangs up the pane's processes (`exec sleep 600`, carrying CORRAL_HOME)
    # and ends before they are gone: the server gone is not enough for the teardown
    entry = f"CORRAL_HOME={corral_home}".encode()
    wait_for(lambda: not pids_with_env(entry), 30, "tmux server and its panes gone")


def _open(terminal: Terminal, home: Path, *args: str) -> None:
    # COLUMNS and LINES reach the pane from somewhere in pytest (80x24): Textual would take
    # them over the terminal's real size
    argv = ["env", "-u", "COLUMNS", "-u", "LINES", sys.executable, "-m", "corral", *args]
    terminal.tmux(
        "new-session", "-d", "-s", "tui", "-x", "150", "-y", "40",
        "-e", f"CORRAL_HOME={home}", "-c", os.getcwd(),
        f'{shlex.join(argv)}; echo "tui exited with status $?"; exec sleep 600',
    )  # fmt: skip


def _quit(terminal: Terminal) -> None:
    terminal.tmux("send-keys", "-t", "tui", "q")
    terminal.wait(lambda: terminal.line_with("tui exited with status"), "the tui to end")
    assert terminal.line_with("tui exited with status") == "tui exited with status 0"


def test_plain_corral_on_a_terminal_opens_the_control_room(
    terminal: Terminal, corral_home: Path
) -> None:
    _open(terminal, corral_home)
    terminal.wait(lambda: terminal.line_with("corral · "), "the control room")
    assert "NAME/ID" in terminal.line_with("STATE")
    _quit(terminal)


def test_two_jobs_stop_one_with_s_y_and_quit_clean(terminal: Terminal, corral_home: Path) -> None:
    port = free_port()
    sleeper = start_job("sleep 300")
    server = start_job(f"python3 -m http.server {port} --bind 127.0.0.1", "--ready", "port")
    _open(terminal, corral_home, "tui")
    terminal.wait(lambda: f":{port}" in terminal.line_with("http.server"), "the jobs, port", 60)
    assert "running" in terminal.line_with("sleep 300")
    assert terminal.flag("alternate_on") == "1"
    # the newest job is selected first: the server
    terminal.tmux("send-keys", "-t", "tui", "s")
    terminal.wait(lambda: terminal.line_with("Stop job"), "the question")
    assert "http.server" in terminal.line_with("Stop job")
    terminal.tmux("send-keys", "-t", "tui", "y")
    terminal.wait(lambda: "stopped" in terminal.line_with("http.server"), "the job shown stopped")
    terminal.wait(lambda: terminal.line_with(f"supervisor pid {server['pid']}: terminated"), "it")
    assert "running" in terminal.line_with("sleep 300")
    assert not alive(server["pid"]) and alive(sleeper["pid"])
    _quit(terminal)
    # the terminal as before: main screen, cursor shown, no mouse reporting, nothing left
    assert terminal.flag("alternate_on") == "0"
    assert terminal.flag("cursor_flag") == "1"
    assert terminal.flag("mouse_any_flag") == terminal.flag("mouse_sgr_flag") == "0"
    assert [line for line in terminal.screen() if line.strip()] == ["tui exited with status 0"]
    from corral.service import stopping

    assert stopping.stop([sleeper["id"]]).ok
