"""The real Claude Code CLI in its interactive terminal UI: a tmux window on a private socket,
driven by keys, read from the screen, against a scripted fake API (see harness.py).

The tmux server and everything under it carry the ClaudeCLI's run marker; `close()` kills
the server and the CLI by pid, and the `claude` fixture then fails the test if anything
else of the run is left.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.claude.fake_api import FakeAPI, Turn
from tests.claude.harness import ClaudeCLI


class ScreenTimeout(AssertionError):
    pass


class Terminal:
    """`claude *args` in the project folder, in a `columns` by `rows` tmux window."""

    def __init__(
        self,
        claude: ClaudeCLI,
        script: Sequence[Turn],
        args: Sequence[str] = (),
        *,
        columns: int = 160,
        rows: int = 50,
    ) -> None:
        self.claude = claude
        self.api = FakeAPI(script)
        self.args = tuple(args)
        self.size = (columns, rows)
        self.socket = claude.tmp / "tmux"  # short: AF_UNIX paths are limited to 108 bytes
        self.server_pid: int | None = None
        self.cli_pid: int | None = None

    def __enter__(self) -> Terminal:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def tmux(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(
            ["tmux", "-S", str(self.socket), *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if check and done.returncode:
            raise RuntimeError(f"tmux {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def start(self) -> None:
        """Skip the first-run screens as a person who set up Claude Code once would have
        (onboarding done, the API key accepted, the project trusted), then start the CLI."""
        self.claude.trust_project()
        config = self.claude.home / ".claude" / ".claude.json"
        data = json.loads(config.read_text())
        key = self.claude.env("")["ANTHROPIC_API_KEY"]
        data.update(
            hasCompletedOnboarding=True,
            theme="dark",
            customApiKeyResponses={"approved": [key[-20:]], "rejected": []},
        )
        config.write_text(json.dumps(data))
        self.api.start()
        env = self.claude.env(self.api.url, {"TERM": "xterm-256color"})
        columns, rows = self.size
        argv = [str(self.claude.binary), *self.args]
        subprocess.run(
            ["tmux", "-S", str(self.socket), "-f", "/dev/null", "new-session", "-d",
             "-x", str(columns), "-y", str(rows), "-c", str(self.claude.project),
             "--", *argv],
            env=env, check=True, timeout=30, capture_output=True,
        )  # fmt: skip
        self.tmux("set-option", "-g", "focus-events", "on")
        self.tmux("set-option", "-g", "remain-on-exit", "on")
        self.server_pid = int(self.tmux("display-message", "-p", "#{pid}").strip())
        self.cli_pid = int(self.tmux("display-message", "-p", "#{pane_pid}").strip())

    def screen(self) -> str:
        """What the window shows now, one line per row, without trailing blanks."""
        text = self.tmux("capture-pane", "-p", "-J")
        lines = (re.sub(r"[^\S\n]", " ", line).rstrip() for line in text.split("\n"))
        return "\n".join(lines).strip("\n")  # (the UI draws some spaces as U+00A0)

    def wait_for(
        self, want: str | re.Pattern[str] | Callable[[str], bool], timeout: float = 60.0
    ) -> str:
        """The screen once it shows `want` (text, a pattern, or a test of the screen)."""
        if isinstance(want, str):
            test: Callable[[str], bool] = lambda s: want in s  # noqa: E731
        elif isinstance(want, re.Pattern):
            test = lambda s: want.search(s) is not None  # noqa: E731
        else:
            test = want
        deadline = time.monotonic() + timeout
        while True:
            shown = self.screen()
            if test(shown):
                return shown
            if time.monotonic() > deadline:
                raise ScreenTimeout(f"the screen never showed {want!r}; it shows:\n{shown}")
            time.sleep(0.2)

    def wait_for_turns(self, used: int, timeout: float = 90.0) -> None:
        """Until the model's script has given `used` turns and the CLI is idle again."""
        deadline = time.monotonic() + timeout
        while self.api.turns_used < used:
            if time.monotonic() > deadline:
                raise ScreenTimeout(
                    f"{self.api.turns_used} of {used} turns taken; the screen:\n{self.screen()}"
                )
            time.sleep(0.2)

    def type(self, text: str, timeout: float = 30.0) -> None:
        """Type `text` into the prompt and send it (Enter again until the prompt took it:
        keys sent while the CLI is still starting can be dropped)."""
        prompt = f"❯ {text}"
        self.tmux("send-keys", "-l", text)
        self.wait_for(lambda s: s.rstrip().endswith(prompt) or f"{prompt}\n" in s, timeout)
        deadline = time.monotonic() + timeout
        while True:
            self.tmux("send-keys", "Enter")
            try:
                self.wait_for(lambda s: not _in_prompt(s, prompt), timeout=2.0)
                return
            except ScreenTimeout:
                if time.monotonic() > deadline:
                    raise

    def press(self, *keys: str) -> None:
        self.tmux("send-keys", *keys)

    def close(self) -> None:
        """Kill the CLI and the tmux server by pid, stop the fake API."""
        for pid in (self.cli_pid, self.server_pid):
            if pid is not None:
                _kill(pid)
        self.tmux("kill-server", check=False)
        Path(self.socket).unlink(missing_ok=True)
        self.api.close()


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _in_prompt(screen: str, prompt: str) -> bool:
    """The text still waits in the input box: the line between the box's two rules."""
    lines = screen.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(prompt) and 0 < i < len(lines) - 1:
            return lines[i - 1].startswith("─") and lines[i + 1].startswith("─")
    return False
