"""What bash runs for a command word while corral's program stands in its table of hashed
commands (core.shell.decision.through_function, shim_script): for one line sent to the
background mid-line, `hash -p <this program> NAME` makes the process that runs `NAME …`
run this program as it would the real one, so the shell's own texts about that command
stay the line's (a list's process reporting it killed by a signal).

The call whose arguments are the job's, once the first `earlier` such calls have run as
they are, becomes the supervisor (its command line: `supervisor`, which `exec`s into the
same process, so the pid the shell waits for is the supervisor's). Any other call of NAME
in that process (a user's function running `npm --version`, `npm i` before `npm run dev`)
runs the real program exactly as bash would have: found on PATH, with `NAME` as its
`argv[0]`, `_` naming its path, the environment and open files untouched, and the signal
dispositions bash gave this process (Python ignores SIGPIPE and SIGXFSZ when it starts;
bash's own mask says whether they stay so). A file the kernel cannot run (no `#!`), the
shell runs as a script: bash with a new bash of its own, zsh with /bin/sh.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
from collections.abc import Sequence

from corral.lowlevel.procfs import executable, ignored_signals


def run(name: str, values: Sequence[str], earlier: int, supervisor: Sequence[str]) -> None:
    args = sys.argv[1:]
    if args == list(values) and not _let_through(os.path.abspath(sys.argv[0]), earlier):
        # `_` names the program the shell would have run, not this one (a supervisor's
        # shell that sets none passes it on to the job)
        env = dict(os.environ)
        found = _on_path(name, env)
        if found is not None:
            env["_"] = found
        os.execve(supervisor[0], list(supervisor), env)
    _as_written(name, args)


def _let_through(program: str, earlier: int) -> bool:
    """Whether this call of the job's own words is one of the `earlier` ones the line runs
    first (`npm run build && npm run build &`): each claims a mark, in call order."""
    for number in range(1, earlier + 1):
        try:
            os.mkdir(f"{program}.{number}", 0o700)
        except FileExistsError:
            continue
        except OSError:
            return True  # its folder swept while the line runs: the call runs as it is
        return True
    return False


def _as_written(name: str, args: list[str]) -> None:
    """`exec` NAME as bash would: the first executable file called NAME on PATH."""
    ignored = ignored_signals(os.getppid())
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_IGN if sig in ignored else signal.SIG_DFL)
    env = dict(os.environ)
    path = _on_path(name, env)
    if path is None:
        sys.stderr.write(f"{name}: command not found\n")
        os._exit(127)
    env["_"] = path
    try:
        os.execve(path, [name, *args], env)
    except OSError as exc:
        if exc.errno == errno.ENOEXEC:
            _as_script(path, args, env)
        sys.stderr.write(f"{name}: {exc.strerror}\n")
        os._exit(126)


def _on_path(name: str, env: dict[str, str]) -> str | None:
    """The first executable file called NAME on PATH, as bash and zsh find it."""
    for folder in env.get("PATH", "").split(":"):
        path = f"{folder or '.'}/{name}"
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _as_script(path: str, args: list[str], env: dict[str, str]) -> None:
    """`exec` a file without `#!` as the shell that ran us would run it: bash checks that it
    is no binary file (an ELF header, or a NUL in its first line) and runs it in a subshell
    that resets itself as a new bash would (`$0` the file); zsh checks for a NUL in its first
    128 bytes and runs `/bin/sh FILE`. Returns when it is a binary file."""
    try:
        with open(path, "rb") as f:
            sample = f.read(128)
    except OSError:
        return
    shell = executable(os.getppid())
    if os.path.basename(shell).startswith("zsh"):
        if b"\0" not in sample:
            os.execve("/bin/sh", ["sh", path, *args], env)
        return
    end = -1
    for _ in range(2 if sample.startswith(b"#!") else 1):
        end = sample.find(b"\n", end + 1, 80)
        if end < 0:
            break
    if sample.startswith(b"\x7fELF") or b"\0" in sample[: end if end >= 0 else 80]:
        return
    if not os.path.basename(shell).startswith("bash"):
        shell = "/bin/bash"  # (our shell gone: only bash leads the list's commands here)
    os.execve(shell, [shell, path, *args], env)
