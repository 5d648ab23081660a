"""What the model is told about the jobs a line it sent starts in place (service.hooks)."""

from __future__ import annotations

from corral.core.shell.plan import decide
from corral.service.hooks import started_context

TOKEN = "ab" * 16


def _told(line: str) -> str:
    decision = decide(line, background=False, cwd="/w", home="/h", wrapper=("S",), token=TOKEN)
    assert decision.in_place, decision
    return started_context(decision)


def test_a_server_rewritten_in_place_is_named_with_its_job_and_port() -> None:
    told = _told("vite --port 5180 & sleep 1; curl -s localhost:5180")
    assert told == (
        f"corral supervises `vite --port 5180` as job {TOKEN[:8]} in /w, port 5180 (each "
        "sent to the background in this line, rewritten in place; the rest of the line ran "
        "as written). `corral ls` lists them with their ports; `corral stop ID` stops one "
        "with every process it started. Reuse them rather than starting the same servers "
        "again."
    )


def test_a_list_led_by_the_shells_table_says_when_it_runs_as_written() -> None:
    told = _told("vite --port 5181 && echo done & sleep 1")
    assert told.startswith(f"corral supervises `vite --port 5181` as job {TOKEN[:8]} in /w")
    assert told.endswith(
        " A list whose server only the shell's table of commands leads to corral runs as "
        "written, unsupervised, when one of your shell functions is in it (it could change "
        "PATH): `corral ls` then lists that server as unsupervised."
    )
    assert "shell functions" not in _told("cd /w && vite --port 5182 & sleep 1")
