"""The daemon's `GET /api/board` builds a board (and its tag) once per snapshot: a client
asking again while the warm snapshot is the same gets that board, its ages moved on, or a
304, without a new build."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from corral.service import board, stopping
from corral.surfaces import http
from tests.helpers import start_job


@pytest.fixture
def client() -> Iterator[TestClient]:
    # in this process (to count the builds); a test client comes as over TCP: with the token
    with TestClient(http.create_app(token="t"), headers={"Authorization": "Bearer t"}) as c:
        yield c


def test_a_board_is_built_once_per_snapshot(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = start_job("sleep 300")
    built: list[Path] = []
    real = board.board

    def counted(folder: Path, **kw: Any) -> board.Board:
        built.append(folder)
        return real(folder, **kw)

    monkeypatch.setattr(http, "RECENT", 60.0)  # the snapshot stays the warm one
    monkeypatch.setattr(board, "board", counted)
    try:
        _ask(client, job, built)
    finally:
        assert stopping.stop([job["id"]]).ok


def _ask(client: TestClient, job: dict[str, Any], built: list[Path]) -> None:
    url = f"/api/board?project={Path.cwd()}"
    first = client.get(url)
    assert first.status_code == 200
    etag = first.headers["ETag"]
    again = client.get(url, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.headers["ETag"] == etag
    time.sleep(0.2)
    later = client.get(url)  # a client without it: the same board, older
    assert later.status_code == 200 and later.headers["ETag"] == etag
    (row,) = [j for j in later.json()["data"]["jobs"] if j["id"] == job["id"]]
    (was,) = [j for j in first.json()["data"]["jobs"] if j["id"] == job["id"]]
    assert row["age_seconds"] > was["age_seconds"]
    assert {**row, "age_seconds": 0} == {**was, "age_seconds": 0}
    assert built == [Path.cwd()]
    other = client.get(url + "&quick=true")  # another kind of board: built for itself
    assert other.status_code == 200 and len(built) == 2
