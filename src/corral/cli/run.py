"""corral run: run a command under corral's supervisor, transparently.

Task mode (default) replaces this process with the supervisor (or, with the tmux backend, the
tmux wrapper): stdout, stderr and the exit status are the command's own. `-d` starts the job
detached and returns at once; with the tmux backend it runs in a window of its own.

Like the Claude Code hook, it refuses to start a second copy of a job already running in
the same folder, or a job that asks for a port something already holds, and says what to
reuse (exit 1, nothing started); `--force` starts it anyway. The job's identity and port
are recorded, so later starts (through the hook or the CLI) see it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import Any

from corral.errors import EXIT_FAILURE, CorralError, UsageError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.usage = (
        "corral run [-d [--ready SPEC] [--ready-timeout S]] [--name NAME] [--force] "
        "[--session S] [--grace SECONDS] [--backend group|tmux] [--allow-unsupervised] [--json] "
        "(-c LINE | -- CMD ...)"
    )
    parser.add_argument("-c", dest="line", metavar="LINE", help="a shell line to run")
    parser.add_argument(
        "-d",
        "--detached",
        action="store_true",
        help="start the job and return at once; it keeps running",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="start it even if the same job already runs in this folder or its port is held "
        "(by default corral refuses and names what to reuse)",
    )
    parser.add_argument(
        "--ready",
        metavar="SPEC",
        help="with -d: wait until the job is ready: port (any port it opens), port:N, "
        "http://... (2xx/3xx), log:REGEX, or none (default: port for a known server, else "
        "none: a 0.5 s check that it did not exit at once)",
    )
    parser.add_argument(
        "--ready-timeout",
        type=float,
        metavar="S",
        help="with -d: seconds to wait for readiness (default 30)",
    )
    parser.add_argument(
        "--name", help="a name for the job, unique among this project's running jobs"
    )
    parser.add_argument("--session", help="the agent session that owns the job")
    parser.add_argument(
        "--grace",
        type=float,
        metavar="SECONDS",
        help="time between SIGTERM and SIGKILL when stopping (default 3)",
    )
    parser.add_argument("--json", action="store_true", help="with -d: print the job as JSON")
    parser.add_argument(
        "--allow-unsupervised",
        action="store_true",
        help="with -d: if corral cannot record the job (its ledger folder is full or "
        "unwritable), run it untracked instead of starting nothing",
    )
    parser.add_argument(
        "--backend",
        choices=("group", "tmux"),
        help="tmux: run the job in a tmux window a person can attach to (default: config)",
    )
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="the command, after --")


def main(args: argparse.Namespace) -> int:
    from corral.service import runner

    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if (args.line is None) == (not cmd):
        raise UsageError("give either -c LINE or -- CMD [ARGS...]")
    line = args.line if args.line is not None else shlex.join(cmd)
    if args.grace is not None and not 0 <= args.grace <= 3600:
        raise UsageError("--grace takes seconds from 0 to 3600")
    from corral.lowlevel.record import session_from

    session = args.session or session_from(os.environ)
    backend = args.backend
    if backend is None:
        from corral import config

        backend = config.backend()
    if not args.detached and (args.ready is not None or args.ready_timeout is not None):
        raise UsageError("--ready and --ready-timeout go with -d")
    if args.detached:
        return _detached(line, args, session, backend)
    if args.name is not None:
        from corral.service.names import check_name, ensure_free

        ensure_free(check_name(args.name), os.getcwd())
    admitted = runner.admit(line, cwd=os.getcwd(), force=args.force)
    if admitted.refusal is not None:
        return _refused(admitted.refusal, json_out=args.json and args.detached)
    if not args.detached and backend == "tmux":
        from corral.backends.tmux import tmux_wrapper

        options = ["--session", session] if session else []
        options += ["--grace", f"{args.grace:g}"] if args.grace is not None else []
        options += ["--identity", admitted.identity] if admitted.identity else []
        options += ["--port", str(admitted.port)] if admitted.port is not None else []
        options += ["--meta", f"job_cwd={admitted.job_cwd}"] if admitted.job_cwd else []
        options += ["--meta", f"name={args.name}"] if args.name else []
        argv = tmux_wrapper.wrapper_argv(line, token=admitted.token, options=options)
        _flush_stdout()
        os.execve(argv[0], argv, runner.caller_environment())
    if not args.detached:
        argv = runner.supervisor_argv(
            line,
            token=admitted.token,
            session=session,
            grace=args.grace,
            identity=admitted.identity,
            port=admitted.port,
            job_cwd=admitted.job_cwd,
            name=args.name,
        )
        _flush_stdout()
        os.execve(argv[0], argv, runner.caller_environment())
    return _detached(line, args, session, backend)


def _detached(line: str, args: argparse.Namespace, session: str | None, backend: str) -> int:
    from corral.core.text import printable
    from corral.service import starting
    from corral.service.readiness import DEFAULT_TIMEOUT, parse_spec

    spec = parse_spec(args.ready) if args.ready is not None else None
    timeout = DEFAULT_TIMEOUT if args.ready_timeout is None else args.ready_timeout
    if not 0 < timeout <= 3600:
        raise UsageError("--ready-timeout takes seconds from 0 to 3600")
    result = starting.start(
        line,
        cwd=os.getcwd(),
        session=session,
        name=args.name,
        ready=spec,
        ready_timeout=timeout,
        force=args.force,
        grace=args.grace,
        backend=backend,
        fallback=args.allow_unsupervised,
    )
    if result.refusal is not None:
        return _refused(result.refusal, json_out=args.json)
    started = result.started
    if started is None:  # not refused, so started: the service promises one or the other
        raise CorralError("the job was neither started nor refused")
    if started.error:
        if args.json:
            from corral.core.envelope import dumps

            print(dumps(None, [started.error]))
        else:
            print(f"corral run: {printable(started.error)}", file=sys.stderr)
        return EXIT_FAILURE
    if started.warning:
        print(printable(started.warning), file=sys.stderr)
    if args.json:
        from corral.core.envelope import dumps

        print(dumps(result.to_json()))
        return 0 if result.ok else EXIT_FAILURE
    print_started(started)
    if result.readiness is not None:
        return report_readiness(started.id, result.readiness, started.log)
    return 0


def print_started(started: Any) -> None:
    """What `corral run -d` says about a job it started."""
    from corral.service.starting import started_line

    print(started_line(started))
    if started.supervised:
        short = started.id[:8]
        print(f"  output: {started.log}")
        if started.tmux:
            session, _, window = started.tmux.partition(":")
            print(f"  watch: tmux attach -t {session}  (window {window}), or corral attach {short}")
        print(f"  list: corral ls    logs: corral logs {short}    stop: corral stop {short}")


def report_readiness(job_id: str, readiness: Any, log: Any) -> int:
    """`ready: URL` (exit 0), or why it is not ready and the last lines of its log (exit 1)."""
    from corral.core.text import printable
    from corral.service.starting import readiness_line

    if readiness.ready:
        said = readiness_line(readiness)
        if said:
            print(said)
        sys.stdout.flush()
        return 0
    short = job_id[:8]
    sys.stdout.flush()
    err = sys.stderr
    if readiness.ended:
        err.write(f"corral run: job {short} failed: {readiness.reason}\n")
    else:
        err.write(
            f"corral run: job {short} is {readiness.reason} ({printable(readiness.spec)}); it is "
            f"still running: `corral logs {short}`, `corral stop {short}`\n"
        )
    if readiness.tail:
        err.write(f"last {len(readiness.tail)} line(s) of {log}:\n")
        for text in readiness.tail:
            err.write(f"  {printable(text)}\n")
    else:
        err.write("it wrote nothing\n")
    return EXIT_FAILURE


def _flush_stdout() -> None:
    """Before exec: stdout may be closed (`corral run -c LINE >&-`), as bash allows; the
    job then gets it closed too."""
    if sys.stdout is not None:
        sys.stdout.flush()


def _refused(refusal: str, *, json_out: bool) -> int:
    """Nothing was started: say why (in the envelope's errors with --json)."""
    if json_out:
        from corral.core.envelope import dumps

        print(dumps(None, [refusal]))
    else:
        from corral.core.text import printable

        print(printable(refusal), file=sys.stderr)
        print("(to start it anyway: corral run --force ...)", file=sys.stderr)
    return EXIT_FAILURE
