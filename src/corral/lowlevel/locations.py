"""Where corral's programs are, and its state and config folders, from the standard library
alone, for the entry points
started with `python -I -S` (the Claude hook, the status line). It imports only `posix` and
`sys`, which every Python process has loaded already: not even `os`. `corral.paths` gives the
same answers through platformdirs; tests/test_paths.py pins that they agree."""

import posix
import sys

PACKAGE = __file__.rpartition("/")[0].rpartition("/")[0]  # the corral package's folder
SUPERVISOR = f"{PACKAGE}/supervisor/program.py"
LAUNCHER = f"{PACKAGE}/supervisor/launcher.py"  # starts the supervisor from its bytecode
TMUX_WRAPPER = f"{PACKAGE}/backends/tmux/tmux_wrapper.py"  # a program, like the supervisor
TMUX_PANE = f"{PACKAGE}/backends/tmux/tmux_pane.py"  # runs in the job's tmux window


def _env(name: str) -> str:
    value = posix.environ.get(name.encode())
    return value.decode("utf-8", "surrogateescape") if value is not None else ""


def _user_home() -> str:
    home = _env("HOME")
    if home:
        return home.rstrip("/") or "/"
    import os  # no HOME: the password database, as os.path.expanduser does

    return os.path.expanduser("~")


def home_dir() -> str:
    """The root of corral's state: `$CORRAL_HOME`, else the platform's user state folder."""
    return _env("CORRAL_HOME") or _platform("XDG_STATE_HOME", ".local/state")


def config_path() -> str:
    """The user's TOML configuration (next to the state when CORRAL_HOME is set)."""
    explicit = _env("CORRAL_HOME")
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


def default_ledger_dir() -> str:
    import os

    home = os.environ.get("CORRAL_HOME")
    if home:
        return os.path.join(home, "ledger")
    if sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Application Support")
    else:
        base = os.environ.get("XDG_STATE_HOME", "").strip() or os.path.expanduser("~/.local/state")
    return os.path.join(base, "corral", "ledger")
