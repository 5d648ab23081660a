"""The control room under Textual's pilot: fixed boards (injected at the view layer, for
screens that must look the same every run) and real jobs (for what the keys do)."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from corral.surfaces.tui.app import ControlRoom
from tests.helpers import alive, wait_for

PROJECT = "/home/dev/shop"
SIZE = (150, 32)


class FixedFeed:
    """A feed that always gives the same board: what a snapshot test draws."""

    source = drawn_from = "fixed rows"

    def __init__(self, board: dict[str, Any], log: list[str] = ()) -> None:  # type: ignore[assignment]
        self.data = board
        self.log = list(log)

    def board(self) -> tuple[dict[str, Any], list[str]]:
        return self.data, []

    def connect(self) -> None:
        pass

    def ready(self) -> tuple[dict[str, Any], list[str]] | None:
        return None  # read by the app's first fetch, like a board the daemon serves

    def read_log(
        self, job: str, after: int | None, grep: str | None, tail: int
    ) -> tuple[list[str], int | None, str | None]:
        return (self.log if after is None else []), 0, None


def job(short: str, command: str, **fields: Any) -> dict[str, Any]:
    """A job row as the board gives it (`JobView.to_json()` plus its project)."""
    row = {
        "id": short + "0" * (32 - len(short)), "pid": 4242, "started_at": "boot:1",
        "state": "running", "mode": "detached", "session": None, "cwd": PROJECT,
        "command": command, "ports": [], "processes": 1, "cpu_percent": 0.0,
        "rss_bytes": 30 * 1024 * 1024, "age_seconds": 75.0, "exit_code": None,
        "backend": "group", "tmux": None, "note": None, "attribution": "supervised",
        "name": None, "log": None, "ended_at": None, "signal": None, "project": PROJECT,
    }  # fmt: skip
    row.update(fields)
    return row


def process(pid: int, command: str, **fields: Any) -> dict[str, Any]:
    """An unsupervised process row as the board gives it (`ProcessView.to_json()`)."""
    row = {
        "pid": pid, "started_at": f"boot:{pid}", "attribution": "env", "session": "c0ffee12aa",
        "job": None, "role": "process", "agent": "alive", "orphaned": False, "own": True,
        "name": command.split(maxsplit=1)[0], "command": command, "cwd": PROJECT, "ports": [],
        "processes": 1, "cpu_percent": 0.0, "rss_bytes": 12 * 1024 * 1024,
        "age_seconds": 300.0, "recalled": False,
    }  # fmt: skip
    row.update(fields)
    return row


def listener(port: int, pid: int | None, name: str | None) -> dict[str, Any]:
    return {
        "port": port, "proto": "tcp", "family": "ipv4", "address": "127.0.0.1", "pid": pid,
        "name": name,
    }  # fmt: skip


def board(
    jobs: list[dict[str, Any]] = (),  # type: ignore[assignment]
    unsupervised: list[dict[str, Any]] = (),  # type: ignore[assignment]
    listeners: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> dict[str, Any]:
    return {
        "project": PROJECT,
        "jobs": list(jobs),
        "unsupervised": list(unsupervised),
        "other_listeners": list(listeners),
    }


def fixed_app(
    data: dict[str, Any], session: str | None = None, log: list[str] | None = None
) -> ControlRoom:
    feed = FixedFeed(data, log or [])
    return ControlRoom(feed, folder=Path(PROJECT), session=session, refresh_every=None)


def focused(app: ControlRoom) -> object:
    """The widget with the focus (an object: the checker narrows `app.focused` otherwise)."""
    return app.focused


async def until(pilot: Pilot[Any], predicate: Callable[[], Any], what: str) -> Any:
    """The predicate's first true value, letting the app run between looks."""
    deadline = time.monotonic() + 30
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


def run(app: ControlRoom, scenario: Callable[[Pilot[Any]], Awaitable[None]]) -> None:
    """Run `scenario` against `app` under the pilot (no terminal), then let the app end."""

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.boards, "the first board")
            await scenario(pilot)

    asyncio.run(main())


def result(app: ControlRoom) -> str:
    return str(app.query_one("#result").render())


def stop_daemon(home: Path) -> None:
    """End the daemon a test's tui started (by its pid, from its health answer)."""
    from corral.surfaces import daemon

    found = daemon.health(timeout=30)  # a loaded machine's daemon may answer slowly
    if found is None:
        return
    import os

    os.kill(found["pid"], signal.SIGTERM)
    wait_for(lambda: not alive(found["pid"]), 30, "daemon gone")
    del home
