"""Where the control room's rows come from: the daemon (started when none runs) serves the
same board as a snapshot taken here, and the tui falls back to snapshots when no daemon can
run or the daemon goes away."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from textual.pilot import Pilot

from corral.service import board as board_service
from corral.surfaces import daemon
from corral.surfaces.tui import feed as feed_module
from corral.surfaces.tui.app import ControlRoom
from corral.surfaces.tui.feed import LiveFeed
from tests.helpers import alive, corral, start_job, wait_for
from tests.tui.conftest import run, stop_daemon, until


@pytest.fixture
def job(corral_home: Path) -> Iterator[dict[str, Any]]:
    started = start_job("sleep 300")
    yield started
    from corral.service import stopping

    assert stopping.stop([started["id"]]).ok


@pytest.fixture
def no_daemon_left(corral_home: Path) -> Iterator[None]:
    yield
    stop_daemon(corral_home)


def _jobs(board: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(j["id"], j["state"], j["project"]) for j in board["jobs"]]


def test_the_tui_starts_the_daemon_and_draws_its_board(
    job: dict[str, Any], no_daemon_left: None
) -> None:
    assert daemon.health() is None
    folder = Path.cwd()
    app = ControlRoom(LiveFeed(folder), folder=folder)

    async def scenario(pilot: Pilot[Any]) -> None:
        await until(pilot, lambda: app.feed.source == "daemon", "the daemon")
        boards = app.boards
        # a board counted now may have been taken here while the daemon came up (its
        # heading says so): the test waits for one the daemon served
        await until(pilot, lambda: app.boards > boards and from_daemon(), "the daemon's board")
        assert f"job:{job['id']}" in app.rows

    def from_daemon() -> bool:
        return "via daemon" in str(app.heading.render())

    run(app, scenario)
    health = daemon.health(timeout=30)  # a loaded machine's daemon may answer slowly
    assert health is not None and health["snapshots_taken"] >= 1


def test_each_board_says_where_it_came_from_whatever_the_feed_uses_now(
    job: dict[str, Any], no_daemon_left: None
) -> None:
    """The heading names the origin of the board it shows: a board taken here before the
    daemon came up stays a snapshot's, though the feed uses the daemon from then on."""
    feed = LiveFeed(Path.cwd())
    feed.board()  # no daemon yet: taken here
    feed.connect()
    assert (feed.source, feed.drawn_from) == ("daemon", "snapshots (starting the daemon)")
    feed.board()
    assert feed.drawn_from == "daemon"


def test_the_daemons_board_is_the_one_taken_here(
    job: dict[str, Any], corral_home: Path, no_daemon_left: None
) -> None:
    feed = LiveFeed(Path.cwd())
    feed.connect()
    served, _ = feed.board()
    assert served["cpu_measured"] is False  # the first board is drawn at once
    assert feed.board()[0]["cpu_measured"] is True
    here = board_service.board(Path.cwd()).to_json()
    assert _jobs(served) == _jobs(here) == [(job["id"], "running", str(Path.cwd()))]
    assert served["project"] == here["project"]
    transport = httpx.HTTPTransport(uds=str(corral_home / "corral.sock"))
    with httpx.Client(transport=transport, base_url="http://corral", timeout=30) as client:
        for query in ("project=relative/folder", "", f"project={Path.cwd()}&all=true",
                      f"project={Path.cwd()}&quick=maybe"):  # fmt: skip
            answer = client.get(f"/api/board?{query}")
            assert answer.status_code == 400, answer.text
            assert answer.json()["data"] is None and answer.json()["errors"]


def test_when_the_daemon_goes_away_the_tui_takes_snapshots_and_asks_it_again(
    job: dict[str, Any], no_daemon_left: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    feed = LiveFeed(Path.cwd())
    feed.connect()
    assert feed.source == "daemon"
    health = daemon.health(timeout=30)
    assert health is not None
    os.kill(health["pid"], signal.SIGTERM)
    wait_for(lambda: not alive(health["pid"]), 30, "daemon gone")
    now = [1000.0]  # the feed's clock stands still while the test runs
    monkeypatch.setattr(feed_module, "clock", lambda: now[0])
    got, _ = feed.board()
    assert _jobs(got) == [(job["id"], "running", str(Path.cwd()))]
    assert feed.source == "snapshots (the daemon stopped answering)"
    # a daemon answers again, but it is asked only once ASK_AGAIN has passed
    assert corral("daemon", "--ensure").returncode == 0
    now[0] += feed_module.ASK_AGAIN - 0.5
    feed.board()
    assert feed.drawn_from == "snapshots (the daemon stopped answering)"  # not asked yet
    now[0] += 0.5
    got, _ = feed.board()
    assert (feed.source, feed.drawn_from) == ("daemon", "daemon")
    assert _jobs(got) == [(job["id"], "running", str(Path.cwd()))]


def test_a_daemon_slow_to_start_is_asked_later(
    job: dict[str, Any], no_daemon_left: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`daemon --ensure` taking longer than ENSURE_TIMEOUT (a loaded machine) is no daemon
    that cannot run: the tui takes snapshots and asks it after ASK_AGAIN."""
    feed = LiveFeed(Path.cwd())
    now = [1000.0]
    monkeypatch.setattr(feed_module, "clock", lambda: now[0])
    monkeypatch.setattr(feed_module, "ENSURE_TIMEOUT", 0.001)
    feed.connect()
    assert feed.source == "snapshots (the daemon is slow to start)"
    got, _ = feed.board()
    assert feed.drawn_from == "snapshots (the daemon is slow to start)"
    assert corral("daemon", "--ensure").returncode == 0  # it came up after all
    now[0] += feed_module.ASK_AGAIN
    got, _ = feed.board()
    assert (feed.source, feed.drawn_from) == ("daemon", "daemon")
    assert _jobs(got) == [(job["id"], "running", str(Path.cwd()))]


def test_an_ask_that_missed_while_the_daemon_was_started_is_no_miss(
    job: dict[str, Any], no_daemon_left: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """connect() runs in a thread of its own: a board's ask that found no daemon while
    connect() started it does not make the feed think the daemon stopped answering."""
    feed = LiveFeed(Path.cwd())
    real = daemon.get_unless

    def meanwhile(*args: Any, **kwargs: Any) -> Any:
        answer = real(*args, **kwargs)  # no daemon yet: None
        feed.connect()  # as if the connect thread finished while this ask was in flight
        return answer

    monkeypatch.setattr(daemon, "get_unless", meanwhile)
    feed.board()
    assert feed.source == "daemon" and feed.daemon_up
    monkeypatch.setattr(daemon, "get_unless", real)
    got, _ = feed.board()
    assert (feed.source, feed.drawn_from) == ("daemon", "daemon")
    assert _jobs(got) == [(job["id"], "running", str(Path.cwd()))]


class _Asked:
    """daemon.get_unless as it is (the real socket), counting the times it is called."""

    def __init__(self) -> None:
        self.times = 0
        self.real = daemon.get_unless

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.times += 1
        return self.real(*args, **kwargs)


def test_a_daemon_that_still_does_not_answer_is_asked_again_after_twice_as_long_each_time(
    job: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    feed = LiveFeed(Path.cwd())
    asked = _Asked()
    monkeypatch.setattr(daemon, "get_unless", asked)
    now = [1000.0]
    monkeypatch.setattr(feed_module, "clock", lambda: now[0])
    feed.board()  # the first board looks for a daemon already running: none
    assert asked.times == 1
    gaps: list[float] = []
    for _ in range(6):
        waited = 0.0
        while asked.times == 1 + len(gaps):
            now[0] += 1.0
            waited += 1.0
            got, _ = feed.board()
            assert _jobs(got) == [(job["id"], "running", str(Path.cwd()))]  # snapshots meanwhile
        gaps.append(waited)
    assert gaps == [10.0, 20.0, 40.0, 80.0, 80.0, 80.0]
    assert (feed_module.ASK_AGAIN, feed_module.ASK_AGAIN_MAX) == (10.0, 80.0)


def test_where_no_daemon_can_run_the_tui_takes_snapshots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)  # too long a path for the daemon's socket
    deep.mkdir(parents=True, mode=0o700)
    monkeypatch.setenv("CORRAL_HOME", str(deep))
    job = start_job("sleep 300")
    feed = LiveFeed(Path.cwd())
    feed.connect()
    assert feed.source == "snapshots (no daemon: see daemon.log)"
    got, _ = feed.board()
    assert [j["id"] for j in got["jobs"]] == [job["id"]]
    # it cannot run: it is never asked again, however long the tui runs
    asked = _Asked()
    monkeypatch.setattr(daemon, "get_unless", asked)
    now = time.monotonic()
    monkeypatch.setattr(feed_module, "clock", lambda: now + 3600.0)
    feed.board()
    assert asked.times == 0 and feed.drawn_from == "snapshots (no daemon: see daemon.log)"
    from corral.service import stopping

    assert stopping.stop([job["id"]]).ok


def test_the_first_board_is_read_while_textual_loads(job: dict[str, Any]) -> None:
    feed = LiveFeed(Path.cwd(), use_daemon=False)
    feed.prefetch()  # as `corral tui` does before importing the app
    got, _ = feed.board()
    assert _jobs(got) == [(job["id"], "running", str(Path.cwd()))]
    assert got["cpu_measured"] is False  # drawn at once; measured from the next board on
    assert got["complete"] is False  # the jobs alone: no other process read yet
    assert got["unsupervised"] == got["other_listeners"] == []
    whole, _ = feed.board()
    assert whole["complete"] is True and whole["cpu_measured"] is True
    assert _jobs(whole) == _jobs(got)


def test_the_jobs_are_drawn_before_the_whole_board_is_read(
    job: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    read = threading.Event()
    whole = board_service.board

    def slow(*args: Any, **kwargs: Any) -> board_service.Board:
        read.wait(30)  # the machine's processes take long to read
        return whole(*args, **kwargs)

    monkeypatch.setattr(board_service, "board", slow)
    feed = LiveFeed(Path.cwd(), use_daemon=False)
    feed.prefetch()
    app = ControlRoom(feed, folder=Path.cwd())

    async def scenario(pilot: Pilot[Any]) -> None:
        assert f"job:{job['id']}" in app.rows
        assert "reading the other processes and listeners" in str(app.heading.render())
        read.set()
        await until(pilot, lambda: "reading" not in str(app.heading.render()), "the rest")

    try:
        run(app, scenario)
    finally:
        read.set()


def test_the_daemon_answers_an_unchanged_board_with_its_tag_alone(
    job: dict[str, Any], corral_home: Path, no_daemon_left: None
) -> None:
    LiveFeed(Path.cwd()).connect()  # the daemon started as the tui starts it
    transport = httpx.HTTPTransport(uds=str(corral_home / "corral.sock"))
    url = f"/api/board?project={Path.cwd()}"
    with httpx.Client(transport=transport, base_url="http://corral", timeout=30) as client:
        first = client.get(url)
        etag = first.headers["ETag"]
        for _ in range(100):  # other suites' processes come and go: the board may change
            again = client.get(url, headers={"If-None-Match": etag})
            if again.status_code == 304:
                break
            assert again.status_code == 200 and again.headers["ETag"] != etag
            etag = again.headers["ETag"]
        assert again.status_code == 304 and again.content == b""
        started = start_job("sleep 301")
        changed = client.get(url, headers={"If-None-Match": etag})
        assert changed.status_code == 200 and changed.headers["ETag"] != etag
        assert started["id"] in [j["id"] for j in changed.json()["data"]["jobs"]]
    from corral.service import stopping

    assert stopping.stop([started["id"]]).ok


def test_the_tui_ages_an_unchanged_board_it_has(job: dict[str, Any], no_daemon_left: None) -> None:
    feed = LiveFeed(Path.cwd())
    feed.connect()
    feed.board()  # the first, drawn at once (CPU not measured)
    previous, _ = feed.board()
    for _ in range(100):  # other suites' processes come and go: the board may change
        time.sleep(0.2)  # ages are shown to a tenth of a second: let one go by at least
        got, _ = feed.board()
        if feed.unchanged:
            break
        previous = got
    assert feed.unchanged == 1
    assert _jobs(got) == _jobs(previous)
    mine = next(j for j in got["jobs"] if j["id"] == job["id"])
    before = next(j for j in previous["jobs"] if j["id"] == job["id"])
    assert mine["age_seconds"] > before["age_seconds"]
