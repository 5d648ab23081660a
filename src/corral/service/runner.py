"""Starting jobs: the supervisor's command line, and detached starts that report back."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from corral import paths
from corral.lowlevel import locations


def caller_environment() -> dict[str, str]:
    """The environment to hand a job: ours, without Python's locale coercion.

    When the caller's locale is C or unset, Python (PEP 538) puts LC_CTYPE=C.UTF-8 into
    os.environ at start-up, and a job given it would count `é` as one character where its
    caller counts two bytes. Linux keeps the environment from before the coercion in
    /proc/self/environ: LC_CTYPE is taken from there (or dropped when it was not set)."""
    env = dict(os.environ)
    if "LC_CTYPE" not in env:
        return env
    try:
        with open("/proc/self/environ", "rb") as f:
            entries = f.read().split(b"\0")
    except OSError:  # macOS: no record of the original; os.environ is the best there is
        return env
    for entry in entries:
        if entry.startswith(b"LC_CTYPE="):
            env["LC_CTYPE"] = os.fsdecode(entry[len(b"LC_CTYPE=") :])
            break
    else:
        del env["LC_CTYPE"]
    return env


def new_token() -> str:
    return os.urandom(16).hex()


@dataclass(frozen=True)
class Admitted:
    """How `corral run` may start a line: the job token (a reservation's, when one is held),
    the identity and port the ledger records for duplicate checks, or why it is refused."""

    token: str
    identity: str | None = None
    port: int | None = None
    refusal: str | None = None
    job_cwd: str | None = None  # where the job runs, when the line changes folder first


def admit(line: str, *, cwd: str, force: bool = False) -> Admitted:
    """Judge `line` as the Claude Code hook judges the same line typed in the foreground:
    refused if a long runner it starts already runs in the same folder, or a port it asks
    for is held. A line that starts no long runner and sends nothing to the background is
    never refused (nor does it load the grammar). `force` skips the refusal and reserves
    nothing, but the identity and port are still recorded, so later starts see this job."""
    from corral import config
    from corral.core.shell.plain import may_start_runner

    extra_runners = config.extra_runners()
    if "&" not in line and not may_start_runner(line, extra_runners):
        # the line reader's own first rule: no job to check or record. Deciding it here
        # spares `corral run -c` the admission imports (half its start-up cost)
        return Admitted(new_token())
    from corral.service.admission import admit as decide

    try:
        decision = decide(
            line,
            background=False,
            cwd=cwd,
            wrapper=("corral", "run"),
            extra_runners=extra_runners,
            reserve=not force,
            holder=os.getpid(),  # execs the supervisor, or waits until it records the job
        )
    except OSError:  # corral's state folder is unusable: the supervisor will say so and run it
        return Admitted(new_token())
    identity = decision.jobs[0].identity if decision.jobs else None
    port = next((job.port for job in decision.jobs if job.port is not None), None)
    job_cwd = decision.jobs[0].cwd if decision.jobs else None
    job_cwd = (
        None if job_cwd is None or os.path.normpath(job_cwd) == os.path.normpath(cwd) else job_cwd
    )
    if decision.action == "refuse" and not force:
        return Admitted(new_token(), identity, port, decision.refusal, job_cwd)
    return Admitted(decision.job_token or new_token(), identity, port, None, job_cwd)


def supervisor_argv(
    line: str,
    *,
    token: str,
    mode: str = "task",
    session: str | None = None,
    grace: float | None = None,
    identity: str | None = None,
    port: int | None = None,
    job_cwd: str | None = None,
    name: str | None = None,
) -> list[str]:
    """The absolute, isolated command that runs `line` under a supervisor recording it in
    corral's ledger (built by `locations.supervisor_argv`, as every such command is)."""
    return locations.supervisor_argv(
        line,
        token=token,
        mode=mode,
        ledger=locations.ledger_dir(),
        session=session,
        grace=grace,
        identity=identity,
        port=port,
        job_cwd=job_cwd,
        options=["--meta", f"name={name}"] if name else (),
    )


@dataclass(frozen=True)
class Started:
    id: str
    pid: int
    supervised: bool
    log: Path
    backend: str = "group"
    tmux: str | None = None  # `session:window` of a tmux-backend job
    warning: str | None = None  # the tmux backend was asked for but could not be used
    error: str | None = None  # nothing was started: why (only when fallback=False)


def start_detached(
    line: str,
    *,
    session: str | None = None,
    grace: float | None = None,
    cwd: str | None = None,
    backend: str = "group",
    token: str | None = None,
    identity: str | None = None,
    port: int | None = None,
    job_cwd: str | None = None,
    name: str | None = None,
    fallback: bool = True,
) -> Started:
    """Start `line` detached; its output goes to a log file (and, with the tmux backend, to
    its window). Returns once it is recorded. If the tmux backend cannot be used, the job
    starts with the default backend and `warning` says why. `token` (default: a new one),
    `identity` and `port` are recorded in the ledger, for later duplicate checks.

    If the job cannot be supervised (its record cannot be written), it runs unsupervised
    (`supervised` is False) or, with fallback=False, not at all (`error` says why)."""
    import subprocess

    token = token or new_token()
    log_path = paths.home() / "logs" / f"{token}.log"
    try:
        paths.ensure_private_dir(log_path.parent)
        os.close(os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    except locations.UnsafeFolder:
        raise  # its own clear line: which folder, why, what to do (never chmod'ed for it)
    except OSError as exc:
        if not fallback:
            why = exc.strerror or str(exc)
            return Started(token, 0, False, log_path, error=_unsupervisable(why, log_path.parent))
        log_path = Path(os.devnull)  # it runs anyway, as asked, with its output dropped
    argv = supervisor_argv(
        line,
        token=token,
        mode="detached",
        session=session,
        grace=grace,
        identity=identity,
        port=port,
        job_cwd=job_cwd,
        name=name,
    )
    warning = None
    if backend == "tmux":
        options = argv[argv.index("--job") :]  # the supervisor's options, then -- LINE
        if not fallback:
            options[-2:-2] = ["--no-fallback"]  # before `-- LINE`
        wrapper = locations.supervisor_argv(
            None, program=locations.TMUX_WRAPPER, options=["--detached", str(log_path), *options]
        )
        started = _start_in_tmux(wrapper, token, log_path, cwd)
        if isinstance(started, Started) and not started.supervised and not fallback:
            # the supervisor in the window ran nothing: it could not record the job
            why = "its record could not be written"
            return Started(
                token, 0, False, log_path, "tmux", started.tmux, error=_unsupervisable(why)
            )
        if isinstance(started, Started):
            return started
        warning = started
    read_end, write_end = os.pipe()
    from corral import config

    options = ["--ready-fd", str(write_end), "--log-cap", str(config.log_max_bytes())]
    options += [] if fallback else ["--no-fallback"]
    argv[-2:-2] = options  # before `-- LINE`
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            pass_fds=(write_end,),
            cwd=cwd,
            env=caller_environment(),
        )
    finally:
        os.close(fd)
        os.close(write_end)
    with os.fdopen(read_end, "rb") as ready:
        answer = ready.read()  # EOF once the supervisor wrote "ok" or fell back to plain exec
    if answer.startswith(b"fail"):
        proc.wait()
        why = answer[4:].decode("utf-8", "replace").strip()
        return Started(
            token, proc.pid, False, log_path, warning=warning, error=_unsupervisable(why)
        )
    return Started(token, proc.pid, answer.startswith(b"ok"), log_path, warning=warning)


def _unsupervisable(why: str, folder: Path | None = None) -> str:
    """The one line for a detached start that could not be supervised: what failed (the
    ledger folder, or the log folder when given), where, what to do."""
    if "No space" in why or "Disk quota" in why:
        todo = "free space on its disk"
    elif "Read-only" in why:
        todo = "remount it writable or set CORRAL_HOME to a writable folder"
    else:
        todo = "see `corral doctor`"
    what = (
        f"cannot write its log in {folder}"
        if folder is not None
        else f"cannot record it in the ledger folder {paths.ledger_dir()}"
    )
    return (
        f"cannot supervise the job, nothing was started: {what} ({why}); {todo}, or pass "
        "--allow-unsupervised to run it untracked"
    )


def _start_in_tmux(
    wrapper: list[str], token: str, log: Path, cwd: str | None
) -> Started | str | None:
    """Start the job in a tmux window (the wrapper waits until it is recorded); a warning
    (or None) when it has to use the default backend instead."""
    import subprocess

    os.close(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    result = subprocess.run(
        wrapper,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=caller_environment(),
        check=False,
    )
    words = result.stdout.split()
    if len(words) == 4 and words[0] == "tmux" and words[1].isdigit():
        return Started(token, int(words[1]), words[2] == "ok", log, "tmux", words[3])
    return result.stderr.strip() or None
