"""Differential: a line that sends commands to the background mid-line behaves the same run
as written and run with those commands rewritten in place under the real supervisor: the
same stdout, stderr and exit status, the same `$!`/`wait` results, the signal dispositions
and open fds the job sees, stdin at EOF, environment, umask and folder (pids aside).

The backgrounded commands here are made long runners through the user's own patterns
(`extra_runners`), so that small, deterministic commands stand in for servers. Lines run
under bash (zsh too when it is installed); all of them at once on a few threads.

When the job dies of a signal bash reports (`line 1: 4242 Hangup   CMD`), the notice names
the command as bash parsed it, and every line here gets the very notice, pid aside: a
command that keeps its text (a function named after its command word, or a program of
corral's the shell finds in its table of commands, leads it to the supervisor: heads.py).
Nothing else is masked. Two kinds of command get another notice text, each pinned by its
own test (among these lines, such commands are not killed by a signal): a single command
whose bytes become the supervisor's command line (neither a function nor the shell's table
can stand for it: `HOME=/x vite`), whose notice names that command line
(test_bashs_signal_notice_differs_only_by_the_command_text); and under bash, the last
command of a list or { …; } group that a function must lead (a name with a `/`, or one of
the user's functions earlier in the list: the shell's table may be emptied), whose list
process forks the supervisor in its place and names it
(test_where_a_function_stands_for_the_command_its_notice_names_the_supervisor).
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

from corral.core.shell.plan import Decision, decide, quote_for_wrapper
from corral.service.admission import write_shims
from tests.helpers import LAUNCHER, pids_with_env, wait_for, zsh_or_skip
from tests.lines_corpus import STDIN
from tests.test_transparency import line_environment

EXTRA = ("sh", "cat", "printf", "run.sh", "job.sh serve")
# A program of which `job.sh serve` alone is a long runner: `./job.sh build && ./job.sh
# serve &` runs job.sh twice, through corral's function the first time too.
JOB = 'printf \'#!/bin/sh\\necho "$0 $*"; [ "$1" != fail ]\\n\' > job.sh; chmod +x job.sh;'
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

# The shapes a function leads to the supervisor beyond a plain command (heads.py): an
# assignment first, redirections before or among the words, a quoted word or a path, one
# command of a pipeline, the last command of an && or || list, last in a group.
EXTRA_SHAPES = [
    # assignments: the job's environment as written; corral's own variables keep the old form
    "X=1 Y='a b' sh -c 'echo \"$X|$Y\"' & wait $!; echo rc=$?",
    "PATH=/usr/bin:/bin sh -c 'echo $PATH' & wait $!; echo rc=$?",
    "HOME=/nonexistent sh -c 'echo $HOME' & wait $!; echo rc=$?",
    "CORRAL_X=1 SHELL=/bin/sh sh -c 'echo $CORRAL_X $SHELL' & wait $!; echo rc=$?",
    "X=1 sh -c 'kill -TERM $$' & wait $!; echo rc=$?",
    "mkfifo r; X=1 sh -c 'echo > r; exec sleep 5' & read x < r; kill -HUP $!; wait $!; echo rc=$?",
    "X=1 sh -c 'grep ^SigIgn /proc/$$/status' & wait; echo x=${X-unset}",
    # redirections before the command word or among its words
    ">out.txt 2>&1 sh -c 'echo o; echo e >&2' & wait $!; echo rc=$?; cat out.txt",
    "sh >out.txt -c 'echo among' & wait; cat out.txt",
    "2>&1 >out.txt sh -c 'echo o; echo e >&2' & wait; cat out.txt",
    "printf abc > in.txt; <in.txt sh -c 'cat; echo' & wait $!; echo rc=$?",
    "sh 3>&1 -c 'echo via-3 >&3' & wait",
    # a quoted command word, a path
    "'sh' -c 'echo quoted' & wait $!; echo rc=$?",
    "\"sh\" -c 'exit 4' & wait $!; echo rc=$?",
    "/bin/sh -c 'echo abs; exit 2' & wait $!; echo rc=$?",
    "printf '#!/bin/sh\\necho script $1\\n' > run.sh; chmod +x run.sh; ./run.sh a & wait $!; "
    "echo rc=$?; type ./run.sh >/dev/null 2>&1 || echo no-function-left",
    "mkfifo r; /bin/sh -c 'echo > r; exec sleep 5' & read x < r; kill -HUP $!; wait $!; echo rc=$?",
    # one command of a pipeline: `$!`, `wait $!` and `kill $!` are the last command's
    "sh -c 'echo x; exit 3' | sort & wait $!; echo rc=$?",
    "echo q | sh -c 'read l; echo got=$l' & wait $!; echo rc=$?",
    "sh -c 'echo e >&2' 2>&1 | tr a-z A-Z & wait",
    "sh -c 'grep ^SigIgn /proc/$$/status' | sort & wait",
    "sh -c 'echo x; exit 3' | cat & wait $!; echo rc=$?",  # two long runners: hashed
    "echo in | sh -c 'cat; exit 7' & wait $!; echo rc=$?",
    "sh -c 'echo b; echo a' |& sort & wait $!; echo rc=$?",
    "mkfifo r; echo > r & cat r | sh -c 'cat >/dev/null; exit 5' & wait $!; echo rc=$?",
    # lists: the runner last, after commands joined by && or ||
    "echo first && sh -c 'echo second' & wait $!; echo rc=$?",
    "false && sh -c 'echo never' & wait $!; echo rc=$?",
    "false || sh -c 'echo fallback' & wait $!; echo rc=$?",
    f"{JOB} ./job.sh build && ./job.sh serve & wait $!; echo rc=$?",
    f"{JOB} ./job.sh a && ./job.sh b > b.txt && ./job.sh serve & wait $!; echo rc=$?; cat b.txt",
    f"{JOB} ./job.sh fail && ./job.sh serve & wait $!; echo rc=$?; type ./job.sh | head -n 1",
    f"{JOB} ./job.sh fail || ./job.sh serve x & wait $!; echo rc=$?; echo n=${{__corral_n-unset}}",
    f"{JOB} cd sub && ../job.sh build && ../job.sh serve | tr a-z A-Z & wait $!; echo rc=$?; pwd",
    "true && sh -c 'echo after-true' & wait $!; echo rc=$?",
    "mkdir -p d && cd d && sh -c 'pwd' & wait; pwd",
    "echo pre && sh -c 'kill -TERM $$' & wait $!; echo rc=$?",
    "true && sh -c 'kill -HUP $$' & wait $!; echo rc=$?",
    "{ sh -c 'kill -USR1 $$'; } & wait $!; echo rc=$?",
    "true && sh -c 'grep ^SigIgn /proc/$$/status' & wait",
    "echo one > a.txt && cat a.txt & wait $!; echo rc=$?",
    "sh -c 'echo x' && echo done & wait $!; echo rc=$?",
    # groups: the runner alone or last in ( … ) or { …; }
    "( sh -c 'echo in-subshell' ) & wait $!; echo rc=$?",
    "(cd sub && sh -c 'pwd') & wait $!; echo rc=$?; pwd",
    "{ sh -c 'exit 6'; } & wait $!; echo rc=$?",
    "{ cd sub && sh -c 'pwd'; } > g.txt & wait; cat g.txt; pwd",
    "(sh -c 'grep ^SigIgn /proc/$$/status') & wait",
    "(echo a && sh -c 'echo b') & wait $!; echo rc=$?",
    f"{JOB} (./job.sh build && ./job.sh serve) & wait $!; echo rc=$?",
    "( sh -c 'echo b; echo a' | sort ) & wait $!; echo rc=$?",
    "{ sh -c 'kill -TERM $$'; } & wait $!; echo rc=$?",
    "mkfifo r; ( sh -c 'echo > r; exec sleep 5' ) & read x < r; kill -HUP $!; wait $!; echo rc=$?",
    "( X=1 sh -c 'echo x=$X; cat' ) & wait $!; echo rc=$?",
    "(cd sub; sh -c 'pwd; grep ^SigIgn /proc/$$/status') & wait $!; echo rc=$?; pwd",
    "{ cd sub; sh -c 'grep ^SigIgn /proc/$$/status'; } & wait $!; echo rc=$?; pwd",
    "(true; true && sh -c 'grep ^SigIgn /proc/$$/status') & wait $!; echo rc=$?",
    "(echo pre; sh -c 'kill -HUP $$') & wait $!; echo rc=$?",
    "(echo pre\nsh -c 'exit 4') & wait $!; echo rc=$?",
]

# Where no function can lead the runner (something runs after it in its process, several
# runners): bash and zsh find corral's program for each name in their tables (heads.py)
HASHED_SHAPES = [
    "sh -c 'exit 3' && echo never & wait $!; echo rc=$?",
    "sh -c 'exit 3' || echo failed & wait $!; echo rc=$?",
    "sh -c 'grep ^SigIgn /proc/$$/status' && echo after & wait $!; echo rc=$?",
    "sh -c 'kill -TERM $$' && echo never & wait $!; echo rc=$?",
    "sh -c 'kill -HUP $$' && echo never & wait $!; echo rc=$?",
    "cd sub && sh -c 'pwd' && pwd & wait $!; echo rc=$?; pwd",
    "{ sh -c 'echo in; exit 2'; echo after; } & wait $!; echo rc=$?",
    "( sh -c 'read l; echo read=$?' && echo done ) & wait $!; echo rc=$?",
    "(sh -c 'echo b; echo a' | sort && echo sorted) & wait $!; echo rc=$?",
    "printf 'x\\ny\\n' > in.txt; <in.txt cat | sh -c 'cat; exit 4' & wait $!; echo rc=$?",
    "sh -c 'echo out' | cat > o.txt & wait $!; echo rc=$?; cat o.txt",
    "X=1 sh -c 'echo x=$X' && env | grep -c X=1 & wait; echo done",
    "sh -c 'exit 3' && echo never & wait $!; echo rc=$?; type sh; hash -t cat 2>&1",
]

# Lists that never reach their long runner.
NEVER_RUN = ("false && sh -c 'echo never'", "./job.sh fail && ./job.sh serve")


def _lines() -> list[str]:
    lines = [f"mkdir -p sub; {unit} & {tail}" for unit in UNITS for tail in TAILS]
    lines += [f"mkdir -p sub; {shape.format(u=unit)}" for shape in SHAPES for unit in UNITS[:8]]
    lines += [f"mkdir -p sub; {line}" for line in MULTI + EXTRA_SHAPES + HASHED_SHAPES]
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
    write_shims(d)  # as the hook does when it reserves the jobs
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


_PID = re.compile(rb"(: line \d+: ) *\d+ ")


def _masked(outcome: tuple[bytes, bytes, int]) -> tuple[bytes, bytes, int]:
    """bash's notice of a job killed by a signal, with its pid masked."""
    out, err, code = outcome
    return out, _PID.sub(rb"\1PID ", err), code


def _compare(shell: str, line: str, env: dict[str, str], prefix: str = "") -> str | None:
    """`line` run as written and as rewritten (`prefix` before each: what the agent's shell
    sourced first, its snapshot's functions)."""
    decision = _decide(line, "/nonexistent-cwd")  # folders only feed the job's record
    assert decision.rewritten is not None
    work = Path(tempfile.mkdtemp(prefix="corral-midline-"))
    try:
        direct = _run(shell, prefix + line, env, work)
        moved = _run(shell, prefix + decision.rewritten, env, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if _masked(direct) == _masked(moved):
        return None
    return f"{shell}: {line!r}\n  as written: {direct!r}\n  rewritten:  {moved!r}"


# Lists no function and no table of commands can lead to the supervisor: as written.
AS_WRITTEN = [
    "printf a && printf b & wait; echo",  # a builtin's name: no table holds it
    "false || sh -c 'exit 0' && sh -c 'grep ^SigIgn /proc/$$/status' & wait $!; echo rc=$?",
    "sh -c 'echo one' && sh -c 'echo two' | cat & wait $!; echo rc=$?",  # one name twice
    "export HOME=/tmp && sh -c 'grep ^SigIgn /proc/$$/status' & wait",  # HOME: the supervisor's
    # zsh's builtins and `=NAME` would name corral's program in the table, not the command's
    "which sh && sh -c 'echo x' && echo done & wait",
    "sh -c 'echo x' && whence -v sh & wait",
    "where sh && sh -c 'echo x' | cat & wait",
    "echo =sh && sh -c 'echo x' && echo done & wait",
    "sh -c 'echo x' && ls -l =sh & wait",
    # an argument the shell expands (`~`): what the program gets is not the text read
    "sh -c 'echo $0' ~/x && echo done & wait",
]


@pytest.mark.parametrize("line", AS_WRITTEN)
def test_a_list_nothing_can_lead_in_place_runs_as_written(line: str) -> None:
    """Its bytes run by the supervisor's new shell would not run the same: bash gives the
    commands of `a && CMD &` the shell's own signal dispositions (where the supervisor,
    in place of an async command, ignores SIGINT and SIGQUIT), zsh runs those before the
    last in the foreground. corral explain says why."""
    d = decide(line, background=False, cwd="/", home="/", wrapper=WRAPPER, extra_runners=EXTRA)
    assert d.action == "untouched" and d.rewritten is None, d
    assert d.notes and d.notes[0][1].startswith("it is a list or pipeline, which a new shell")


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
    # Some lines leave processes that end on their own after the shell (a keeper whose `$!`
    # was killed, an orphaned subshell): the teardown must find none of them.
    home = f"CORRAL_HOME={corral_home}".encode()
    wait_for(lambda: not pids_with_env(home), timeout=30, what="what the lines left to end")
    assert not problems, f"{len(problems)} of {len(lines)} differ:\n" + "\n".join(problems)
    # and they really were supervised: one ledger record per rewritten command at least
    # (a command a function leads to the supervisor starts one only if the list runs it)
    never = [line for line in lines if any(n in line for n in NEVER_RUN)]
    assert len(list((corral_home / "ledger").glob("*.json"))) >= len(lines) - len(never)


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
    write_shims(decision)
    notices = []
    mine = f"CORRAL_HOME={corral_home}".encode()
    for text in (line, decision.rewritten):
        out, err, _ = _run("/bin/bash", f"{text}; echo bang=$!", env, corral_home / "work")
        assert out.startswith(b"rc=129\n"), (out, err)
        bang = out.split(b"bang=")[1].strip()
        notices.append(re.sub(rb": +" + bang + rb" ", b": $! ", err))
        # the supervisor stops its job on the signal: let it finish before the next run and
        # the test's end (which reports a process still running)
        wait_for(lambda: not pids_with_env(mine), timeout=20, what="the job's end")
    return notices[0], notices[1], decision


_HUP = "& p=$!; sleep 0.5; kill -HUP $p; wait $p; echo rc=$?"
# Lines whose job keeps its text, each killed by SIGHUP.
KEPT_NOTICES = [
    f"sh -c 'exec sleep 5' > /dev/null {_HUP}",
    f"X=1 sh -c 'exec sleep 5' > /dev/null {_HUP}",
    f">/dev/null PATH=/usr/bin:/bin sh -c 'exec sleep 5' {_HUP}",
    f"'sh' -c 'exec sleep 5' > /dev/null {_HUP}",
    f"/bin/sh -c 'exec sleep 5' > /dev/null {_HUP}",
    # a command that runs after the runner: bash and zsh find corral's program in their
    # table of commands, which runs the supervisor
    f"sh -c 'exec sleep 5' > /dev/null && echo never {_HUP}",
    # the last command of a ( … ) group: bash `exec`s it in the process forked for `&`
    "( cd / && sh -c 'kill -HUP $$' ) & wait $!; echo rc=$?",
    "( X=1 sh -c 'kill -HUP $$' ) > /dev/null & wait $!; echo rc=$?",
]


@pytest.mark.parametrize("line", KEPT_NOTICES)
def test_bashs_signal_notice_is_the_lines_own(line: str, corral_home: Path) -> None:
    """bash reports a background job killed by a signal (other than TERM, INT or PIPE) with
    the job's command as it parsed it (`> /dev/null` moved to the end); a list's own
    process reports its command killed so (`Hangup`). A command a function of its name
    leads to the supervisor keeps its bytes, so the notice is the very one."""
    as_written, rewritten, decision = _notices(line, corral_home)
    assert decision.in_place[0].head is not None
    assert b"Hangup" in as_written
    assert rewritten == as_written


@pytest.mark.parametrize(
    "command",
    [
        "HOME=/ sh -c 'exec sleep 5' > /dev/null",  # would reach the supervisor's environment
    ],
)
def test_bashs_signal_notice_differs_only_by_the_command_text(
    command: str, corral_home: Path
) -> None:
    """A command no function can lead to the supervisor (heads.py says which) keeps the old
    rewrite: its notice has the supervisor's command line, ending with the command, quoted,
    in place of the command. Nothing run later can change the text the calling shell
    prints; the rest of the notice (line, `$!`, signal name) and the exit status are as
    without corral."""
    as_written, rewritten, decision = _notices(f"{command} {_HUP}", corral_home)
    moved = decision.in_place[0].text
    assert decision.in_place[0].head is None
    padded = b"/bin/bash: line 1: $! Hangup                  "
    assert as_written == padded + command.encode() + b"\n"
    span = command.removesuffix(" > /dev/null")
    if span != command:
        assert rewritten == padded + moved.encode() + b" > /dev/null\n"
    else:
        assert rewritten == padded + moved.encode() + b"\n"
    assert moved.endswith(" --async -- " + quote_for_wrapper(span))


LISTS = [
    ("true && sh -c 'kill -HUP $$' & wait $!; echo rc=$?", b""),
    ("{ sh >/dev/null -c 'kill -HUP $$'; } & wait $!; echo rc=$?", b" > /dev/null"),
    ("cd / && sh -c 'kill -KILL $$' & wait $!; echo rc=$?", b""),
]


@pytest.mark.parametrize(("line", "redirect"), LISTS)
def test_a_lists_own_process_names_the_command_in_its_notice(
    line: str, redirect: bytes, corral_home: Path
) -> None:
    """bash runs `a && CMD &` and `{ CMD; } &` in a process of its own that forks CMD and
    reports it killed by a signal, naming CMD as it parsed it. There bash finds corral's
    program for CMD's name (hashed: decision.through_function) and runs it as it would the
    real one, so the notice is the line's own, pid aside, and so is everything else."""
    env = line_environment({"CORRAL_HOME": str(corral_home)})
    decision = _decide(line, "/")
    assert decision.in_place[0].form == "child" and decision.in_place[0].shim
    rewritten = decision.rewritten
    assert rewritten is not None
    runs = [_run("/bin/bash", text, env, corral_home / "work") for text in (line, rewritten)]
    (out, err, code), (out2, err2, code2) = (_masked(run) for run in runs)
    assert (out, code) == (out2, code2) and out.startswith(b"rc=1")
    assert b"/bin/bash: line 1: PID " in err and redirect in err
    assert err2 == err
    assert any((corral_home / "ledger").glob("*.json"))  # and it was supervised


@pytest.mark.parametrize(
    "line",
    [
        "job.sh hup || job.sh serve & wait $!; echo rc=$?",
        "cd / && job.sh hup || job.sh serve & wait $!; echo rc=$?",
        "{ job.sh hup; job.sh serve; } & wait $!; echo rc=$?",
        "( job.sh hup || job.sh serve ) & wait $!; echo rc=$?",
    ],
)
def test_bashs_notice_of_an_earlier_command_of_that_name_is_the_lines_own(
    line: str, corral_home: Path
) -> None:
    """A command of the job's name that the list runs too, with other arguments, runs
    through corral's program as the real one would (supervisor/shim.py): killed by a
    signal, it is reported by bash as the line has it, not from inside a function."""
    folder = corral_home / "bin"
    folder.mkdir()
    script = folder / "job.sh"
    script.write_text('#!/bin/sh\n[ "$1" = hup ] && kill -HUP $$; echo "${0##*/} $*"\n')
    script.chmod(0o755)
    env = line_environment({"CORRAL_HOME": str(corral_home)})
    env["PATH"] = f"{folder}:{env['PATH']}"
    decision = _decide(line, "/")
    assert [wrap.head for wrap in decision.in_place if wrap.shim] == ["job.sh"]
    rewritten = decision.rewritten
    assert rewritten is not None
    runs = [_run("/bin/bash", t, env, corral_home / "work") for t in (line, rewritten)]
    first, second = (_masked(run) for run in runs)
    assert first == second
    assert b"job.sh serve\n" in first[0] and b"Hangup" in first[1], first
    assert any((corral_home / "ledger").glob("*.json"))


@pytest.mark.parametrize(
    ("prefix", "line"),
    [
        ("", "true && sh -c 'kill -HUP $$' & wait $!; echo rc=$?"),  # its program removed
        ("use() { :; }; ", "use 20 && sh -c 'kill -HUP $$' & wait $!; echo rc=$?"),
    ],
)
def test_where_a_function_stands_for_the_command_its_notice_names_the_supervisor(
    prefix: str, line: str, corral_home: Path
) -> None:
    """Where corral's function must lead the command (its program missing, or an earlier
    command of the list a function of the user's, which may change PATH and so empty bash's
    table: nvm's), the list's process forks the supervisor in the command's place, and its
    notice names the supervisor's command line, from inside a function ("environment").
    Everything else is as without corral."""
    env = line_environment({"CORRAL_HOME": str(corral_home)})
    decision = _decide(line, "/")
    wrap = decision.in_place[0]
    assert wrap.form == "child" and wrap.shim
    if not prefix:
        os.unlink(wrap.shim)
    rewritten = decision.rewritten
    assert rewritten is not None
    runs = [
        _run("/bin/bash", prefix + text, env, corral_home / "work") for text in (line, rewritten)
    ]
    (out, err, code), (out2, err2, code2) = (_masked(run) for run in runs)
    assert (out, code) == (out2, code2) == (b"rc=129\n", 0)
    padded = b": line 1: PID Hangup                  "
    assert err == b"/bin/bash" + padded + b"sh -c 'kill -HUP $$'\n"
    assert err2 == b"environment" + padded + wrap.text.encode() + b"\n"


@pytest.mark.parametrize(
    ("line", "supervised"),
    [
        ("./run.sh a & wait $!; echo rc=$?", False),  # no identifier: no function there
        ("sh -c 'echo plain; exit 3' & wait $!; echo rc=$?", True),
        ("true && sh -c 'echo listed' & wait $!; echo rc=$?", True),
    ],
)
def test_bash_in_posix_mode_runs_a_command_named_by_a_path_as_written(
    line: str, supervised: bool, corral_home: Path
) -> None:
    """bash's POSIX mode refuses a function named other than an identifier, and the refusal
    ends a non-interactive shell: there corral defines none, and such a command runs as
    written, unsupervised; a plain name is still led to the supervisor."""
    env = line_environment({"CORRAL_HOME": str(corral_home)})
    script = "printf '#!/bin/sh\\necho script $*\\n' > run.sh; chmod +x run.sh; "
    rewritten = _rewrite(line, "/")
    work = corral_home / "work"
    runs = [
        _run("/bin/bash", f"set -o posix; {script}{text}", env, work) for text in (line, rewritten)
    ]
    assert runs[0] == runs[1] and runs[0][1] == b"" and b"rc=" in runs[0][0], runs
    assert any((corral_home / "ledger").glob("*.json")) == supervised


# A function of the user's own (Claude Code sources the shell's functions before each call)
# that runs the runner's command word itself, as `nvm use` runs `npm --version` in a command
# substitution: corral's function must let that call through, not run the supervisor there.
USERS_FUNCTION = (
    "use() { echo \"using v$(sh -c 'echo 9.1')\"; }\n"
    'ver() { echo "version $(./job.sh --version)"; }\n'
    "tag() { cat; echo \"tagged v$(sh -c 'echo 9.1')\"; }\n"
)
CALLING_THE_RUNNER = [
    "use 20 && sh -c 'echo main' & wait $!; echo rc=$?",
    "use 20 || sh -c 'echo never' & wait $!; echo rc=$?",
    "cd sub && use 20 && sh -c 'pwd' & wait $!; echo rc=$?",
    "(use 20; sh -c 'echo in-group') & wait $!; echo rc=$?",
    "{ use 20 && sh -c 'echo in-braces'; } & wait $!; echo rc=$?",
    "(use 20 && sh -c 'echo in-subshell') & wait $!; echo rc=$?",
    "use 20 | sh -c 'cat; echo piped' & wait $!; echo rc=$?",
    "sh -c 'echo first' | tag | sort & wait $!; echo rc=$?",
    f"{JOB} ver && ./job.sh serve & wait $!; echo rc=$?",
    f"{JOB} ./job.sh build && ver && ./job.sh serve & wait $!; echo rc=$?",
    # no function can lead these: the shell's table, unless a function is in the list
    "use 20 && sh -c 'echo main' && echo after & wait $!; echo rc=$?",
    "sh -c 'echo a' | tag & wait $!; echo rc=$?",
]


@pytest.mark.parametrize(
    ("line", "supervised"),
    [
        ("use 20 && sh -c 'echo main' & wait $!; echo rc=$?", True),  # corral's function
        ("true && sh -c 'echo main' & wait $!; echo rc=$?", True),  # the shell's table
        ("true && sh -c 'echo main' && echo after & wait $!; echo rc=$?", True),
        ("use 20 && sh -c 'echo main' && echo after & wait $!; echo rc=$?", False),
    ],
)
def test_which_lists_with_a_users_function_are_supervised(
    line: str, supervised: bool, corral_home: Path
) -> None:
    """A function of the user's in the list may change PATH (nvm's does), which empties the
    shell's table of commands: corral's function leads the runner then where it can (the
    last command of the list), and elsewhere the list runs as written, unsupervised."""
    env = line_environment({"CORRAL_HOME": str(corral_home)})
    rewritten = _rewrite(line, "/")
    done = _run("/bin/bash", USERS_FUNCTION + rewritten, env, corral_home / "work")
    as_written = _run("/bin/bash", USERS_FUNCTION + line, env, corral_home / "work")
    assert done == as_written and done[0].endswith(b"rc=0\n"), done
    assert any((corral_home / "ledger").glob("*.json")) == supervised


@pytest.mark.parametrize("shell", ["/bin/bash", "zsh"])
@pytest.mark.parametrize(
    "line",
    [
        "true && sh -c 'echo $0 $1' ~/x ~ & wait $!; echo rc=$?",
        "(cd / && sh -c 'echo $0' ~) & wait $!; echo rc=$?",
    ],
)
def test_an_argument_the_shell_expands_still_reaches_the_supervisor(
    shell: str, line: str, corral_home: Path
) -> None:
    """`~` reaches the command as the shell expands it: corral's program in the shell's
    table, comparing the arguments it gets with the line's text, would let the job's own
    call run unsupervised; a function's guard compares the words as written."""
    found = zsh_or_skip() if shell == "zsh" else shutil.which(shell)
    assert found is not None
    env = line_environment({"CORRAL_HOME": str(corral_home), "SHELL": found})
    problem = _compare(found, line, env)
    assert problem is None, problem
    assert len(list((corral_home / "ledger").glob("*.json"))) == 1


@pytest.mark.parametrize("shell", ["/bin/bash", "zsh"])
def test_a_users_function_running_the_runners_name_runs_it_as_written(
    shell: str, corral_home: Path
) -> None:
    found = zsh_or_skip() if shell == "zsh" else shutil.which(shell)
    assert found is not None
    env = line_environment({"CORRAL_HOME": str(corral_home), "SHELL": found})
    lines = [f"mkdir -p sub; {line}" for line in CALLING_THE_RUNNER]
    with ThreadPoolExecutor(max_workers=4) as pool:
        compared = pool.map(lambda line: _compare(found, line, env, USERS_FUNCTION), lines)
        problems = [p for p in compared if p]
    assert not problems, f"{len(problems)} of {len(lines)} differ:\n" + "\n".join(problems)


@pytest.mark.parametrize("shell", ["/bin/bash", "zsh"])
def test_a_shell_exporting_every_variable_gives_the_job_none_of_corrals(
    shell: str, corral_home: Path
) -> None:
    """`set -a` (allexport, inherited: `bash -a`, SHELLOPTS) exports every variable the
    shell assigns: corral's own, set before the `&`, must not reach the job."""
    found = zsh_or_skip() if shell == "zsh" else shutil.which(shell)
    assert found is not None
    env = line_environment({"CORRAL_HOME": str(corral_home), "SHELL": found})
    lines = [
        "sh -c 'env | grep -c __corral' & wait $!; echo rc=$?",
        "mkdir -p sub; cd sub && sh -c 'env | grep -c __corral' & wait $!; echo rc=$?",
        # `wait` for all: `$!` is sort's, and the supervisor of the command before it may
        # still be writing its record when sort ends (the test would end with it running)
        "sh -c 'env | grep -c __corral' | sort & wait; echo rc=$?",
    ]
    problems = [p for line in lines if (p := _compare(found, line, env, "set -a\n"))]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("shell", ["/bin/bash", "zsh"])
def test_the_last_argument_after_the_amp_is_the_lines_own(shell: str, corral_home: Path) -> None:
    """`$_` right after `CMD &` is the last argument of the command before it (an async
    command sets none): corral's definition and removal of its function set it, so the
    removal is a call whose last argument is `$_` as it was."""
    found = zsh_or_skip() if shell == "zsh" else shutil.which(shell)
    assert found is not None
    env = line_environment({"CORRAL_HOME": str(corral_home), "SHELL": found})
    line = "sh -c 'exit 0' & echo \"last=$_\"; wait"
    problem = _compare(found, line, env, "echo before-the-line > /dev/null\n")
    assert problem is None, problem


@pytest.mark.xfail(
    strict=True,
    reason="the table's entry is put back (bash: `hash -p` from BASH_CMDS, its count of hits "
    "at 0) or dropped (zsh: `unhash`, a user's own `hash NAME=PATH` too), and while the list "
    "runs corral's program finds NAME on PATH, not where the user's entry points; neither "
    "shell can say without a fork whether and how NAME was in its table",
)
@pytest.mark.parametrize(
    ("shell", "prefix", "line"),
    [
        ("/bin/bash", "cat /dev/null\n", "cat /dev/null && echo x & wait; hash"),
        ("zsh", "hash cat=/bin/cat\n", "cat /dev/null && echo x & wait; whence -v cat"),
    ],
)
def test_a_name_in_the_shells_table_before_the_line_stays_as_it_was(
    shell: str, prefix: str, line: str, corral_home: Path
) -> None:
    found = zsh_or_skip() if shell == "zsh" else shutil.which(shell)
    assert found is not None
    env = line_environment({"CORRAL_HOME": str(corral_home), "SHELL": found})
    problem = _compare(found, line, env, prefix)
    assert problem is None, problem
