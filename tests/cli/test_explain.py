"""`corral explain`'s human text says what happens to a line and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import corral

# What corral puts around a command whose text it keeps: `$_` saved before the list, the
# flag of its own function, and the removal, called with `$_` as it was.
SAVED = "__corral_us=$_; typeset +x __corral_us; "
FLAG = "__corral_fn=1; typeset +x __corral_fn"
REMOVE_NPM = (
    ' function __corral_end { [ -z "${__corral_fn-}" ] || { unset -f npm; unset __corral_fn; };'
    ' unset -f __corral_end; unset __corral_us; }; __corral_end "$__corral_us";'
)


def _row(out: str, start: str) -> str:
    """The first row of `corral explain`'s text that starts so."""
    return next(r for r in out.splitlines() if r.startswith(start))


def test_a_runner_sent_to_the_background_mid_line_is_rewritten_in_place(tmp_path: Path) -> None:
    out = corral("explain", "--", "npm run dev & sleep 1; echo hi", cwd=tmp_path).stdout
    assert out.startswith("supervised in place: each long runner"), out
    rows = out.splitlines()
    shell = rows[rows.index("The agent's shell runs:") + 1]
    after, flag = REMOVE_NPM, FLAG
    assert shell.endswith(f"; }}; {flag}; }}; npm run dev &{after} sleep 1; echo hi")
    assert shell.startswith(f"  {SAVED}typeset -f npm >/dev/null 2>&1 || {{ function npm {{ ")
    assert " --detached " in shell and " --async -- 'npm run dev'; }" in shell
    job = next(r for r in rows if r.startswith("  job: "))
    assert job.startswith(f"  job: npm run dev  (in {tmp_path}, identity ")
    rewritten = _row(out, "    rewritten in place: ")
    assert rewritten.endswith(f"-- 'npm run dev'; }}; {flag}; }}; npm run dev &{after}")
    assert "    (its text is kept, so the shell's job notices name it as written: a\n" in out


def test_a_list_sent_to_the_background_becomes_the_supervisors_command_line(
    tmp_path: Path,
) -> None:
    line = "HOME=/tmp/h vite --port 5997 & sleep 1"  # HOME would reach the supervisor
    out = corral("explain", "--", line, cwd=tmp_path).stdout
    rewritten = _row(out, "    rewritten in place: ")
    assert rewritten.endswith(" --async -- 'HOME=/tmp/h vite --port 5997'"), rewritten
    assert "its text is kept" not in out


@pytest.mark.parametrize(
    "line", ["vite --port 5997 && echo done & sleep 1", "{ vite; echo done; } & sleep 1"]
)
def test_a_runner_before_other_commands_is_found_through_the_shells_table(
    line: str, tmp_path: Path
) -> None:
    """`exec` would skip the echo and no function can run the supervisor as a command of
    its own there in zsh: the shell finds corral's program for the word instead."""
    out = corral("explain", "--", line, cwd=tmp_path).stdout
    assert out.startswith("supervised in place: each long runner"), out
    rewritten = _row(out, "    rewritten in place: ")
    assert rewritten.startswith(f'    rewritten in place: {SAVED}if [ -n "${{BASH_VERSION-}}"')
    assert "/shims/" in rewritten and "; hash -p '" in rewritten and "then hash vite='" in rewritten
    kept = line.removesuffix(" sleep 1")
    assert f"; fi; {kept} function __corral_end {{ case ${{__corral_fn-}} in b) " in rewritten
    assert (
        "    (its text is kept: bash or zsh find a program of corral's for its command\n"
        "    word, which runs the supervisor; where they cannot (a function of yours in\n"
        "    the list, the word not on PATH, another shell), the list runs as written)\n"
    ) in out


def test_the_last_command_of_a_list_keeps_its_text(tmp_path: Path) -> None:
    out = corral("explain", "--", "npm ci && npm run dev & sleep 1", cwd=tmp_path).stdout
    rewritten = _row(out, "    rewritten in place: ")
    assert rewritten.startswith(f"    rewritten in place: {SAVED}typeset -f npm >/dev/null 2>&1")
    # `npm ci` (or any call but `npm run dev`: a user's function may make one) runs as is
    guard = '[ "$#" -ne 2 ] || [ "${1}" != run ] || [ "${2}" != dev ]'
    assert f'function npm {{ if {guard}; then command npm "$@"; return; fi;' in rewritten
    assert " --async -- 'npm run dev'; return; fi; case $- in" in rewritten
    # in bash, where it can: corral's program for the word, found in bash's table
    assert "/shims/" in rewritten and "; hash -p '" in rewritten
    assert (
        "; }; __corral_fn=1; fi; typeset +x __corral_fn; }; npm ci && npm run dev & " in rewritten
    )
    assert (
        "    (its text is kept: bash finds a program of corral's for its command word,\n"
        "    which runs the supervisor; where it cannot (a function of yours in the\n"
        "    list, the word not on PATH) or in zsh, a function of that word does, and\n"
        "    bash's notice of it killed by a signal then names the supervisor)\n"
    ) in out


def test_a_group_that_runs_something_after_its_runner_stays_as_written(tmp_path: Path) -> None:
    out = corral("explain", "--", "{ vite; printf done; } & sleep 1", cwd=tmp_path).stdout
    assert out.startswith("untouched: it runs as written; corral cannot move the job"), out
    assert (
        "    runs as written: it is a ( … ) or { …; } group, and no function can lead its last"
        " command alone to a supervisor (a group's commands are read, not moved)\n"
    ) in out


def test_each_rewritten_command_shows_its_identity_folder_and_port(tmp_path: Path) -> None:
    (tmp_path / "web").mkdir()
    line = "cd web && vite --port 5999 & python3 -m http.server 8999 & wait"
    out = corral("explain", "--", line, cwd=tmp_path).stdout
    jobs = [r for r in out.splitlines() if r.startswith("  job: ")]
    assert jobs[0].startswith(f"  job: vite --port 5999  (in {tmp_path}/web, port 5999, identity ")
    assert jobs[1].startswith(f"  job: python3 -m http.server 8999  (in {tmp_path}, port 8999, ")
    assert out.count("    rewritten in place: ") == 2
    # a group keeps its text too, with the folder and port of the job inside it
    line = "(cd web && PORT=3011 npm run dev) > dev.log 2>&1 & sleep 1"
    out = corral("explain", "--", line, cwd=tmp_path).stdout
    job = _row(out, "  job: ")
    assert job.startswith(f"  job: npm run dev  (in {tmp_path}/web, port 3011, identity "), job
    rewritten = _row(out, "    rewritten in place: ")
    flag = "__corral_fn=1; fi; typeset +x __corral_fn"
    assert f" --async -- 'PORT=3011 npm run dev'; }}; {flag}; }}; (cd web && " in rewritten
    assert "    (its text is kept: bash finds a program of corral's for its command word,\n" in out


def test_a_job_that_cannot_be_moved_exactly_says_which_construct(tmp_path: Path) -> None:
    out = corral("explain", "--", "vite --port $P & sleep 1", cwd=tmp_path).stdout
    assert out.startswith("untouched: it runs as written; corral cannot move the job"), out
    assert "    runs as written: it uses a variable (`$P`) a new shell may not have\n" in out


def test_a_plain_job_sent_to_the_background_mid_line_is_only_checked(tmp_path: Path) -> None:
    out = corral("explain", "--", "sleep 5 & vite", cwd=tmp_path).stdout
    assert out.startswith("untouched: it runs as written (corral supervises a job"), out
    assert "job: vite" in out


def test_a_plain_line_has_no_job(tmp_path: Path) -> None:
    out = corral("explain", "--", "ls -la", cwd=tmp_path).stdout
    assert out == "untouched: no long-running job to supervise; it runs as written.\n"


def test_a_trailing_ampersand_is_supervised(tmp_path: Path) -> None:
    out = corral("explain", "--", "npm run dev &", cwd=tmp_path).stdout
    assert out.startswith("supervised (detached mode).")


@pytest.mark.parametrize("background", [[], ["--background"]])
def test_corrals_own_run_is_said_to_supervise_itself(background: list[str], tmp_path: Path) -> None:
    line = "corral run -d -- python3 -m http.server 8999 &"
    out = corral("explain", *background, "--", line, cwd=tmp_path).stdout
    assert out == (
        "untouched: corral's own `run` starts the job under its supervisor and refuses a\n"
        "duplicate or a held port itself; no second supervisor wraps it. It runs as written.\n"
    )
