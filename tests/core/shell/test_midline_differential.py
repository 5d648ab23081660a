"""Differential: a line that sends commands to the background mid-line behaves the same run
as written and run with those commands rewritten in place under the real supervisor: the
same stdout, stderr and exit status, the same `$!`/`wait` results, the signal dispositions
and open fds the job sees, stdin at EOF, environment, umask and folder (pids aside).

The backgrounded commands here are made long runners through the user's own patterns
(`extra_runners`), so that small, deterministic commands stand in for servers. Lines run
under bash (zsh too when it is installed); all of them at once on a few threads.

When the job dies of a signal bash reports (`line 1: 4242 Hangup   CMD`), the notice names
the command as the line has it. A command that keeps its text (reached through a function
named after its command word) gets the very notice, pid aside; one whose bytes become the
supervisor's command line (a list, a pipeline, `X=1 CMD`: see midline._head) gets that
command line in its notice instead, and only there is the text masked
(test_bashs_signal_notice_is_the_lines_own and ..._differs_only_by_the_command_text).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from corral.core.shell.plan import Decision, decide
from tests.helpers import LAUNCHER, zsh_or_skip
from tests.lines_corpus import STDIN
from tests.test_transparency import line_environment

EXTRA = ("sh", "cat", "printf")
WRAPPER = (sys.executable, "-I", "-S", str(LAUNCHER))

# The command sent to the background; each prints only what is the same on every run.
UNITS = [
    "sh -c 'echo out; echo err >&2'",
    "sh -c 'exit 3'",
    "sh -c 'kill -TERM $$'",
    "sh -c 'kill -INT $$; kill -QUIT $$; echo int-and-quit-ignored'",
    "sh -c 'grep ^SigIgn /proc/$$/status'",
    "sh -c 'cd /proc/$$/fd && echo fds *'",  # builtins only: no pipe of its own is open
    "cat",
    "sh -c 'read x; echo read=$?'",
    "sh -c 'umask; pwd'",
    "X=1 sh -c 'echo x=$X'",
    "env Y=2 sh -c 'echo y=$Y; echo home=$HOME'",
    "nohup sh -c 'echo nohup-out' 2>/dev/null",
    "setsid sh -c 'echo in-a-new-session'",
    "sh -c 'echo to-file; echo e >&2' > f.txt 2>&1",
    "sh -c 'echo b; echo a; echo c' | sort -r",
    "cd sub && sh -c 'pwd; echo in-sub'",
    "sh -c 'echo via-fd-3 >&3' 3>&1",
    "sh -c 'sleep 0.2; echo late'",
    "printf '%s|' one 'two words' \"three\"",
    "sh -c 'trap \"echo got-usr1\" USR1; kill -USR1 $$; exit 5'",
    'sh -c \'echo "$0" "$#" "$*"\' arg0 a \'b c\'',
    "sh -c 'yes | head -n 3'",
]
# What follows `UNIT &`: nothing racy is printed before the job is waited for.
TAILS = [
    "wait $!; echo rc=$?",
    "p=$!; wait $p; echo rc=$?",
    "wait; echo all-done",
    "sleep 0.05; wait $!; echo rc=$?",
    "true && wait $! && echo ok || echo failed=$?",
    "wait $!\necho rc=$?",
    "wait $! 2>/dev/null; s=$?; echo status=$s; wait $! 2>/dev/null; echo again=$?",
]
# zsh answers a second `wait $!` with the job's status or 127 depending on whether the job had
# ended before the first `wait` ran: a race in the line itself (seen as written too), which a
# supervisor's start-up only makes likelier. bash answers 127 either way.
ZSH_RACE = "echo again="
# Whole lines around a unit (`{u}`), or with several units.
SHAPES = [
    "( {u} & wait $!; echo sub-rc=$? ); echo after=$?",
    "{{ {u} & wait $!; echo group-rc=$?; }}",
    "{{ {u} & }} 3>&1; wait; echo braced",
    "umask 077; {u} & wait $!; echo rc=$?",
    "export Z=9; {u} & wait $!; echo rc=$?",
    "cd sub; {u} & wait $!; echo rc=$?",
]
MULTI = [
    "sh -c 'echo a > a.txt' & printf b > b.txt & wait; cat a.txt b.txt",
    "sh -c 'exit 4' & p=$!; cat no-such-file 2>/dev/null & q=$!; wait $p; echo p=$?; wait $q\n"
    "echo q=$?",
    "sh -c 'sleep 5' & kill $!; wait $!; echo killed=$?",
    "sh -c 'sleep 5' & p=$!; kill -TERM $p; wait $p; echo killed=$?",
    "sh -c 'exit 2' & sleep 0.1; wait $!; echo rc=$?; echo done",
    "sh -c 'echo x' > x.txt & wait; printf y > y.txt & wait; cat x.txt y.txt",
    "sh -c 'exit 7' & printf second & wait; echo all",
    "sh -c 'echo one' > one.txt & sleep 1 & wait; cat one.txt",
    "mkfifo pipe; (sh -c 'echo inner > pipe' &); cat pipe",  # double fork: no wait; a FIFO
    "mkfifo r; sh -c 'trap \"echo hup; exit 4\" HUP; echo > r; while :; do sleep 0.05; done' & "
    "read x < r; kill -HUP $!; wait $!; echo rc=$?",
    "mkfifo r; sh -c 'trap \"echo usr1; exit 5\" USR1; echo > r; while :; do sleep 0.05; done' "
    "& read x < r; kill -USR1 $!; wait $!; echo rc=$?",
    "mkfifo r; sh -c 'echo > r; exec sleep 5' & read x < r; kill -HUP $!; wait $!; echo rc=$?",
    "sh -c 'exit 1' & wait $! || echo failed-as-expected",
    # `wait $!` returns when the command exits, not when what it left running does
    "sh -c '(sleep 0.5; echo late) & echo main' & wait $!; echo waited=$?",
    "sh -c '(sleep 0.5; echo late) & exit 6' & wait; echo all=$?",
    # `kill -KILL $!` kills the command, not only what runs in its place
    "mkfifo r; sh -c 'echo > r; exec sleep 5' > /dev/null & read x < r; kill -KILL $!; "
    "wait $!; echo rc=$?",
    # zsh runs the `cd` leading an async list in the calling shell itself, bash in the child
    "cd sub && sh -c 'pwd' & wait; pwd",
    "cd sub && pushd . && sh -c 'exit 5' & wait $!; echo rc=$?; pwd",
    "cd no-such-dir 2>/dev/null && sh -c 'echo never' & wait; echo done",
    # nothing of the function that led the job to its supervisor is left in the shell
    "sh -c 'exit 3' & wait $!; echo rc=$?; type sh; echo flag=${__corral_fn-unset}",
    "mkfifo r; sh -c 'echo > r; exec sleep 5' & read x < r; kill -USR1 $!; wait $!; echo rc=$?",
]


def _lines() -> list[str]:
    lines = [f"mkdir -p sub; {unit} & {tail}" for unit in UNITS for tail in TAILS]
    lines += [f"mkdir -p sub; {shape.format(u=unit)}" for shape in SHAPES for unit in UNITS[:8]]
    lines += [f"mkdir -p sub; {line}" for line in MULTI]
    return lines


LINES = _lines()


def _decide(line: str, cwd: str) -> Decision:
    d = decide(
        line,
        background=False,
        cwd=cwd,
        home=os.path.expanduser("~"),
        wrapper=WRAPPER,
        extra_runners=EXTRA,
    )
    assert d.action == "wrap" and d.mode == "in-place" and d.rewritten, (line, d)
    return d


def _rewrite(line: str, cwd: str) -> str:
    rewritten = _decide(line, cwd).rewritten
    assert rewritten is not None
    return rewritten


def _run(shell: str, text: str, env: dict[str, str], work: Path) -> tuple[bytes, bytes, int]:
    """Run in `work`, made empty first: both runs of a line see the same folder."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    done = subprocess.run(
        [shell, "-c", text], cwd=work, env=env, input=STDIN, capture_output=True, timeout=60,
        check=False,
    )  # fmt: skip
    return done.stdout, done.stderr, done.returncode


_NOTICE = re.compile(rb"(: line \d+: ) *\d+ ([A-Z][\w ]*?(?: \(core dumped\))?) {2,}[^\n]*")


_PID = re.compile(rb"(: line \d+: ) *\d+ ")


def _masked(outcome: tuple[bytes, bytes, int], text: bool) -> tuple[bytes, bytes, int]:
    """bash's notice of a job killed by a signal, with its pid masked (and its command text
    when `text`)."""
    out, err, code = outcome
    if text:
        return out, _NOTICE.sub(rb"\1PID \2 <command>", err), code
    return out, _PID.sub(rb"\1PID ", err), code


def _compare(shell: str, line: str, env: dict[str, str]) -> str | None:
    decision = _decide(line, "/nonexistent-cwd")  # folders only feed the job's record
    assert decision.rewritten is not None
    text = any(wrap.head is None for wrap in decision.in_place)  # a command's text replaced
    work = Path(tempfile.mkdtemp(prefix="corral-midline-"))
    try:
        direct = _run(shell, line, env, work)
        moved = _run(shell, decision.rewritten, env, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if _masked(direct, text) == _masked(moved, text):
        return None
    return f"{shell}: {line!r}\n  as written: {direct!r}\n  rewritten:  {moved!r}"


def test_enough_lines() -> None:
    assert len(LINES) >= 150, len(LINES)
    assert len(set(LINES)) == len(LINES)


@pytest.mark.parametrize("shell", ["/bin/bash", "zsh"])
def test_rewritten_lines_behave_as_written(shell: str, corral_home: Path) -> None:
    found = zsh_or_skip() if shell == "zsh" else shutil.which(shell)
    assert found is not None
    env = line_environment({"CORRAL_HOME": str(corral_home), "SHELL": found})
    lines = LINES if shell == "/bin/bash" else [line for line in LINES if ZSH_RACE not in line]
    with ThreadPoolExecutor(max_workers=6) as pool:
        problems = [p for p in pool.map(lambda line: _compare(found, line, env), lines) if p]
    assert not problems, f"{len(problems)} of {len(lines)} differ:\n" + "\n".join(problems)
    # and they really were supervised: one ledger record per rewritten command at least
    assert len(list((corral_home / "ledger").glob("*.json"))) >= len(lines)


def test_the_job_sees_a_shells_async_dispositions(corral_home: Path) -> None:
    line = "sh -c 'grep ^SigIgn /proc/$$/status' & wait"
    env = line_environment({"CORRAL_HOME": str(corral_home)})
    out, _, _ = _run("/bin/bash", _rewrite(line, "/"), env, corral_home / "work")
    assert out == b"SigIgn:\t0000000000000006\n"  # SIGINT and SIGQUIT: as `CMD &` gets them


def test_what_the_shell_ignores_the_job_ignores_too(corral_home: Path) -> None:
    # restore_signals=False: the calling bash starts with SIGPIPE and SIGXFSZ ignored (as
    # this Python process has them), and so does any `CMD &` it runs
    line = "sh -c 'grep ^SigIgn /proc/$$/status' & wait"
    env = line_environment({"CORRAL_HOME": str(corral_home)})
    seen = []
    for text in (line, _rewrite(line, "/")):
        done = subprocess.run(
            ["/bin/bash", "-c", text], env=env, capture_output=True, check=True,
            restore_signals=False, timeout=60,
        )  # fmt: skip
        seen.append(done.stdout)
    assert seen[0] == seen[1] == b"SigIgn:\t0000000001001006\n"  # INT, QUIT, PIPE, XFSZ


def _notices(line: str, corral_home: Path) -> tuple[bytes, bytes, Decision]:
    """bash's notices running `line` as written and as rewritten, `$!` in place of the pid
    (bash pads it); each run ends `rc=129` (killed by SIGHUP)."""
    env = line_environment({"CORRAL_HOME": str(corral_home)})
    decision = decide(
        line, background=False, cwd="/", home="/", wrapper=WRAPPER, extra_runners=EXTRA
    )
    assert decision.rewritten is not None and len(decision.in_place) == 1
    notices = []
    for text in (line, decision.rewritten):
        out, err, _ = _run("/bin/bash", f"{text}; echo bang=$p", env, corral_home / "work")
        assert out.startswith(b"rc=129\n"), (out, err)
        bang = out.split(b"bang=")[1].strip()
        notices.append(re.sub(rb": +" + bang + rb" ", b": $! ", err))
    return notices[0], notices[1], decision


def test_bashs_signal_notice_is_the_lines_own(corral_home: Path) -> None:
    """bash reports a background job killed by a signal (other than TERM, INT or PIPE) with
    the job's command as the line it read has it. A simple command keeps its bytes (a
    function of its name leads to the supervisor), so the notice is the very one."""
    line = "sh -c 'exec sleep 5' > /dev/null & p=$!; sleep 0.5; kill -HUP $p; wait $p; echo rc=$?"
    as_written, rewritten, decision = _notices(line, corral_home)
    assert decision.in_place[0].head == "sh"
    padded = b"/bin/bash: line 1: $! Hangup                  "
    assert as_written == padded + b"sh -c 'exec sleep 5' > /dev/null\n"
    assert rewritten == as_written


def test_bashs_signal_notice_differs_only_by_the_command_text(corral_home: Path) -> None:
    """A command no function can lead to the supervisor (here an assignment comes first,
    which would reach the supervisor's own environment) keeps the old rewrite: its notice
    has the supervisor's command line, ending with the command, quoted, in place of the
    command. Nothing run later can change the text the calling shell prints; the rest of
    the notice (line, `$!`, signal name) and the exit status are as without corral."""
    line = (
        "X=1 sh -c 'exec sleep 5' > /dev/null & p=$!; sleep 0.5; kill -HUP $p; wait $p; echo rc=$?"
    )
    as_written, rewritten, decision = _notices(line, corral_home)
    moved = decision.in_place[0].text
    assert decision.in_place[0].head is None
    padded = b"/bin/bash: line 1: $! Hangup                  "
    assert as_written == padded + b"X=1 sh -c 'exec sleep 5' > /dev/null\n"
    assert rewritten == padded + moved.encode() + b" > /dev/null\n"
    assert moved.endswith(" --async -- 'X=1 sh -c '\\''exec sleep 5'\\'''")
