"""Where corral's programs are, its state, config and ledger folders, and the one command line
that starts a supervisor: the single definition every program uses (the CLI through
`corral.paths`, the hook, the status line, the supervisor and the tmux backend).

Standard library only, and cheap: it imports only `posix` and `sys`, which every Python process
has loaded already (not even `os` unless a path needs normalizing).

Rules (README "State folders"): `$CORRAL_HOME` when set (a relative one is taken from the
current folder, once, by the program that reads it, and handed on as an absolute path), else
the platform's user state folder: `$XDG_STATE_HOME/corral` when that is an absolute path (a
relative one is ignored, as the XDG specification says), else `~/.local/state/corral`; on
macOS `~/Library/Application Support/corral`. corral creates its folders with mode 0700 and
never changes the mode of a folder it did not create (`ensure_private`).
"""

import posix
import sys

PACKAGE = __file__.rpartition("/")[0].rpartition("/")[0]  # the corral package's folder
SUPERVISOR = f"{PACKAGE}/supervisor/program.py"
LAUNCHER = f"{PACKAGE}/supervisor/launcher.py"  # starts the supervisor from its bytecode
TMUX_WRAPPER = f"{PACKAGE}/backends/tmux/tmux_wrapper.py"  # a program, like the supervisor
TMUX_PANE = f"{PACKAGE}/backends/tmux/tmux_pane.py"  # runs in the job's tmux window

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def runs_corral_program(command: str) -> bool:
    """The shell line already runs one of corral's programs (a line the hook rewrote)."""
    return any(program in command for program in (LAUNCHER, SUPERVISOR, TMUX_WRAPPER))


def _env(name: str) -> str:
    # os.environ once `os` is loaded (it follows changes made in this process), else the
    # environment the process started with.
    os = sys.modules.get("os")
    if os is not None:
        return str(os.environ.get(name, ""))
    value = posix.environ.get(name.encode())
    return value.decode("utf-8", "surrogateescape") if value is not None else ""


def absolute(path: str) -> str:
    """`path` made absolute (from the current folder) and normalized; the common case, an
    absolute path without `.`, `..` or `//`, costs no import."""
    if path.startswith("/") and "//" not in path and "/." not in path:
        return path.rstrip("/") or "/"
    import posixpath

    return posixpath.normpath(posixpath.join(posix.getcwd(), path))


def _user_home() -> str:
    home = _env("HOME")
    if home:
        return home.rstrip("/") or "/"
    import os  # no HOME: the password database, as os.path.expanduser does

    return os.path.expanduser("~")


def _explicit_home() -> str:
    """`$CORRAL_HOME` as an absolute path, or "" when it is unset or blank."""
    value = _env("CORRAL_HOME")
    return absolute(value) if value.strip() else ""


def home_dir() -> str:
    """The root of corral's state: `$CORRAL_HOME`, else the platform's user state folder."""
    return _explicit_home() or _platform("XDG_STATE_HOME", ".local/state")


def ledger_dir() -> str:
    """The ledger: one file per job, written by its supervisor."""
    return home_dir() + "/ledger"


def shims_dir() -> str:
    """Programs bash runs for a command word in one line (core.shell.decision.shim_script),
    one folder per job token."""
    return home_dir() + "/shims"


def shim_path(token: str, name: str) -> str:
    return f"{shims_dir()}/{token}/{name}"


def log_path() -> str:
    """corral's own log (one line per internal error of the hook, status line, supervisor)."""
    return home_dir() + "/corral.log"


def config_path() -> str:
    """The user's TOML configuration (next to the state when CORRAL_HOME is set)."""
    explicit = _explicit_home()
    if explicit:
        return explicit.rstrip("/") + "/config.toml"
    return _platform("XDG_CONFIG_HOME", ".config") + "/config.toml"


def _platform(variable: str, linux_default: str) -> str:
    if sys.platform == "darwin":
        return f"{_user_home()}/Library/Application Support/corral".replace("//", "/")
    base = _env(variable).strip()
    if not base.startswith("/"):
        base = f"{_user_home()}/{linux_default}".replace("//", "/")
    return base.rstrip("/") + "/corral"


# -- private folders ---------------------------------------------------------------------


class UnsafeFolder(PermissionError):
    """A folder corral would keep its state in is not private to this user, and is not
    corral's own to change."""


def ensure_private(path: str) -> str:
    """Create `path` and the folders between corral's home and it, each with mode 0700, and
    check the ones that exist. The home folder itself is corral's own when corral chose it
    (the platform's state folder) or created it; an existing `$CORRAL_HOME` that another
    user owns, or that group or others may read or write, is never changed: UnsafeFolder
    (an OSError) says which folder and what to do. Folders below the home are corral's:
    one left with a wider mode (by an older corral) is set to 0700."""
    home = home_dir()
    path = absolute(path)
    explicit = bool(_explicit_home())
    if path == home or path.startswith(home.rstrip("/") + "/"):
        chain = [home]
        for part in path[len(home) :].strip("/").split("/"):
            if part:
                chain.append(chain[-1].rstrip("/") + "/" + part)
    else:  # a folder given outright (the supervisor's --ledger elsewhere): treated as a home
        chain, explicit = [path], True
    for index, folder in enumerate(chain):
        _private(folder, ours=index > 0 or not explicit)
    return path


def _private(folder: str, ours: bool) -> None:
    try:
        posix.mkdir(folder, 0o700)
        return  # made by us: 0700 (a umask only removes bits)
    except FileExistsError:
        pass
    except FileNotFoundError:
        import os

        os.makedirs(folder.rpartition("/")[0] or "/", exist_ok=True)  # above corral's home
        try:
            posix.mkdir(folder, 0o700)
            return
        except FileExistsError:
            pass
    st = posix.stat(folder)
    if (st.st_mode & 0o170000) != 0o040000:
        raise UnsafeFolder(20, "not a folder", folder)  # ENOTDIR
    if st.st_uid != posix.getuid():
        raise UnsafeFolder(
            1, "corral's state folder belongs to another user; set CORRAL_HOME to a folder "
            "of your own", folder,
        )  # fmt: skip
    if st.st_mode & 0o077:
        if not ours:
            raise UnsafeFolder(
                1, f"CORRAL_HOME is an existing folder with mode {st.st_mode & 0o7777:04o}, "
                "open to other users, and corral does not change a folder it did not create; "
                "set CORRAL_HOME to a new folder (corral creates it with mode 0700) or "
                "`chmod 700` this one", folder,
            )  # fmt: skip
        posix.chmod(folder, 0o700)


# -- the supervisor's command line --------------------------------------------------------


def supervisor_argv(
    line: "str | None",
    *,
    launcher: "Sequence[str] | None" = None,
    program: str = LAUNCHER,
    token: "str | None" = None,
    mode: "str | None" = None,
    ledger: "str | None" = None,
    session: "str | None" = None,
    grace: "float | None" = None,
    identity: "str | None" = None,
    port: "int | None" = None,
    job_cwd: "str | None" = None,
    ready_fd: "int | None" = None,
    options: "Sequence[str]" = (),
) -> "list[str]":
    """The one command line that starts a supervisor (program: the launcher, or the tmux
    wrapper, which takes the same options): an absolute interpreter in isolated mode and an
    absolute program, so nothing on PATH or in PYTHON* variables can stand in for them.

    `launcher`: the words that start the program, with options common to every job (the
    hook's, from `service.claude.wrapper`); default: this interpreter and `program`. `mode`:
    "task" or "detached". `options`: further supervisor options, passed on as given (the
    tmux wrapper's own). `line` None: the words without `-- LINE`."""
    argv = list(launcher) if launcher is not None else [sys.executable, "-I", "-S", program]
    if token is not None:
        argv += ["--job", token]
    if mode is not None:
        argv.append(f"--{mode}")
    if ledger is not None:
        argv += ["--ledger", ledger]
    if session:
        argv += ["--session", session]
    if grace is not None:
        argv += ["--grace", f"{grace:g}"]
    if identity:
        argv += ["--identity", identity]
    if port is not None:
        argv += ["--port", str(port)]
    if job_cwd:
        argv += ["--meta", f"job_cwd={job_cwd}"]
    if ready_fd is not None:
        argv += ["--ready-fd", str(ready_fd)]
    argv += options
    return argv if line is None else [*argv, "--", line]
