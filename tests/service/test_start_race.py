"""Issue 11.1: of simultaneous `corral run -d` of one server in one folder, exactly one wins,
every round. Each contender is a process that imported the CLI once and forks for each round
(the interpreter's start-up is not what races; the CLI's own work is), released together."""

from __future__ import annotations

import multiprocessing
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from corral.adapters import ledger
from corral.service import jobs
from tests.helpers import free_port

ROUNDS = 20
CONTENDERS = 20


def _contender(line: str, cwd: str, barrier: Any, results: Any, index: int) -> None:
    from corral.cli.main import main

    os.chdir(cwd)
    devnull = os.open(os.devnull, os.O_WRONLY)
    for round_no in range(ROUNDS):
        barrier.wait()
        child = os.fork()
        if child == 0:
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            code = 99
            try:
                code = main(["run", "-d", "-c", line])
            finally:
                os._exit(code)
        _, status = os.waitpid(child, 0)
        results[round_no * CONTENDERS + index] = os.waitstatus_to_exitcode(status)
        barrier.wait()  # the referee stops the round's winner
        barrier.wait()


def _race(line: str, cwd: Path) -> list[tuple[int, int]]:
    """Per round: (winners by exit status, jobs running after the round)."""
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(CONTENDERS + 1)
    results = ctx.Array("i", ROUNDS * CONTENDERS)
    workers = [
        ctx.Process(target=_contender, args=(line, str(cwd), barrier, results, i))
        for i in range(CONTENDERS)
    ]
    for w in workers:
        w.start()
    rounds = []
    try:
        for round_no in range(ROUNDS):
            barrier.wait()  # release
            barrier.wait()  # all answered
            codes = results[round_no * CONTENDERS : (round_no + 1) * CONTENDERS]
            live = [r for r in ledger.read_all().records if ledger.supervisor_alive(r)]
            rounds.append((sum(1 for c in codes if c == 0), len(live)))
            outcomes, _ = jobs.stop_records(live, audit=False)
            assert all(o.ok for o in outcomes), outcomes
            jobs.clean()
            barrier.wait()
    finally:
        for w in workers:
            w.join(timeout=30)
            if w.is_alive():
                w.kill()
    return rounds


@pytest.mark.slow
def test_one_winner_per_round_for_a_server_with_a_port(tmp_path: Path) -> None:
    port = free_port()
    line = f"{sys.executable} -m http.server {port} --bind 127.0.0.1"
    rounds = _race(line, tmp_path)
    assert rounds == [(1, 1)] * ROUNDS


@pytest.mark.slow
def test_one_winner_per_round_for_a_server_without_a_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    nodemon = bin_dir / "nodemon"  # a long runner the table knows, with no port
    nodemon.write_text("#!/bin/sh\nexec sleep 300\n")
    nodemon.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    (tmp_path / "app").mkdir()
    rounds = _race("nodemon srv.js", tmp_path / "app")
    assert rounds == [(1, 1)] * ROUNDS
