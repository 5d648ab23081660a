"""corral as Claude Code's `CLAUDE_CODE_SHELL_PREFIX`: supervision at execution time.

Claude Code runs `<prefix> '<string>'` for every Bash tool call, hook, status line and stdio
MCP server start-up, after its permission system (rules, mode, classifier, other hooks) has
judged the model's command untouched. So whatever corral does here cannot change a
permission decision, in any permission mode.

The prefix is a small POSIX sh program that `corral install claude` writes (`launcher()`):
a string that is not a Bash tool call, or whose command holds no `&` and no word that can
start a long runner, is run at once exactly as Claude Code runs it without a prefix (`exec`
of `/bin/sh -c` for hooks and the status line, of the user's bash or zsh for Bash calls, or
of the user's own prefix, which stays chained). Only a candidate string reaches `main()` here:

- a Bash call whose command starts a long runner, or that runs as a background task (the
  PreToolUse hook left a note, `note_background`), runs whole under corral's supervisor in
  task mode: the job is exactly the string Claude Code built, run by the same shell (bash,
  or zsh reading its start-up files as `zsh -c` does), so its output, exit status and cwd
  file are the same, and the record shows the model's command;
- what the command starts (display, identity, folder, port, the shape of the rewrite) is
  what the PreToolUse hook's line reader found, from the note it left on this very call
  (`notes.take_reading`): the prefix then only checks it against the live jobs, without
  loading the line reader; with no note it can trust, it reads the line itself;
- a trailing `server &` (or a command sent to the background mid-line) is rewritten inside
  the string as the hook used to rewrite it (a supervisor of its own, in the background),
  since a supervisor in the foreground would hold the call until the server ends;
- a duplicate or a held port is refused before anything starts: the refusal on stderr,
  exit status 1 (the model reads it as the command's result);
- anything else, and any internal error, runs the string as it came.
"""

from __future__ import annotations

import os
import sys

from corral.surfaces.claude.notes import (
    CHAINED,
    NAME,
    PREFIX,
    active,
    note_background,
    notes_dir,
    nothing_to_supervise,
    reading_of,
    take_note,
    take_reading,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from corral.core.claude.shell_string import Embedded
    from corral.core.shell.decision import Decision

__all__ = ["CHAINED", "NAME", "PREFIX", "active", "note_background", "take_note"]
_TAIL = "' < /dev/null && pwd -P >| /"
# The hook's separators (hook._SEPARATORS) plus whitespace and `/` (a program's folder), as
# the sh fast path's IFS: the words left are compared with the trigger words.
_SH_IFS = " \t\n;|&<>()'\"`=/"


def launcher(python: str, runner: str, words: frozenset[str], notes: str) -> str:
    """The sh program Claude Code runs as its shell prefix (`notes`: the folder where the
    hook notes background calls; any note sends a Bash call to python). The user's own
    prefix comes in CHAINED (set beside ours in the settings' env) and is taken out of the
    environment before anything runs."""
    import shlex

    q = shlex.quote
    patterns = "|".join(q(w) for w in sorted(words)) + "|python*"
    ifs = '"' + _SH_IFS.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`") + '"'
    return rf"""#!/bin/sh
# corral's CLAUDE_CODE_SHELL_PREFIX, written by `corral install claude` (run it again after
# moving or upgrading corral; `corral install claude --uninstall` takes it out). Claude Code
# runs `<this> '<string>'` for every Bash call, hook, status line and MCP server start-up.
# Only a Bash call whose command may start a long runner reaches python; the rest runs at
# once, exactly as Claude Code runs it without this prefix.
_corral_next=${{{CHAINED}-}}
unset {CHAINED}
_corral_notes=${{CORRAL_HOME:+$CORRAL_HOME/prefix-notes}}
_corral_notes=${{_corral_notes:-{q(notes)}}}
_corral_s=$1
case $_corral_s in
*{q(_TAIL)}*) ;;
*)
  if [ -n "$_corral_next" ]; then exec "$_corral_next" "$_corral_s"; fi
  exec /bin/sh -c "$_corral_s" ;;
esac
_corral_c=${{_corral_s#*"&& eval '"}}
_corral_c=${{_corral_c%{q(_TAIL)}*}}
_corral_go=
# a lone `&` (not && >& &> <& |&): something may go to the background
case " $_corral_c " in
*[!\&\>\<\|]\&[!\&\>]*) _corral_go=1 ;;
esac
if [ -z "$_corral_go" ]; then
  set -f
  IFS={ifs}
  for _corral_w in $_corral_c; do
    case $_corral_w in
    {patterns}) _corral_go=1; break ;;
    esac
  done
  set +f
fi
if [ -z "$_corral_go" ]; then
  for _corral_w in "$_corral_notes"/*; do [ -e "$_corral_w" ] && _corral_go=1; break; done
fi
if [ -n "$_corral_go" ]; then
  exec {q(python)} -I -S {q(runner)} "$_corral_next" "$_corral_s"
fi
if [ -n "$_corral_next" ]; then exec "$_corral_next" "$_corral_s"; fi
case $SHELL in
*/bash | */zsh) if [ -x "$SHELL" ]; then exec "$SHELL" -c "$_corral_s"; fi ;;
esac
exec bash -c "$_corral_s"
"""


def bash_shell(environ: dict[bytes, bytes]) -> str:
    """The shell Claude Code runs a Bash call with: $SHELL when it is bash or zsh."""
    shell = environ.get(b"SHELL", b"").decode("utf-8", "surrogateescape")
    if shell.endswith(("/bash", "/zsh")) and os.access(shell, os.X_OK):
        return shell
    import shutil

    return shutil.which("bash") or "/bin/bash"


class Plan:
    """What the prefix runs: an argv for execve, or a refusal to print (exit 1)."""

    def __init__(self, argv: list[str] | None = None, refusal: str | None = None) -> None:
        self.argv = argv
        self.refusal = refusal


def as_it_came(string: str, chained: str, environ: dict[bytes, bytes]) -> list[str]:
    """The argv Claude Code would run for `string` without corral's prefix."""
    from corral.core.claude.shell_string import read

    if chained:
        import shutil

        return [chained if "/" in chained else shutil.which(chained) or chained, string]
    if read(string) is None:
        return ["/bin/sh", "-c", string]
    shell = bash_shell(environ)
    return [shell, "-c", string]


def plan(string: str, chained: str, environ: dict[bytes, bytes], home: str) -> Plan:
    """How to run `string`: the line read (what the PreToolUse hook's reader found, from its
    note, or the line reader here), then checked against the live jobs (admission), then
    launched."""
    from corral.core.claude.shell_string import read

    found = read(string)
    if found is None:
        return Plan(as_it_came(string, chained, environ))
    session_bytes = environ.get(b"CLAUDE_CODE_SESSION_ID")
    session = found.session or (session_bytes.decode() if session_bytes else None)
    background = bool(session) and take_note(home, session or "", found.command)
    cwd = os.getcwd()
    noted = (
        take_reading(home, session, cwd, found.command, background=background) if session else None
    )
    if noted is not None and nothing_to_supervise(noted):
        return Plan(as_it_came(string, chained, environ))  # the hook's reader found nothing

    from corral.lowlevel import locations
    from corral.surfaces.claude import hook

    extra = hook.extra_words(home, locations.config_path())
    if not hook.may_need_supervision(found.command, background, extra):
        return Plan(as_it_came(string, chained, environ))
    from corral import config
    from corral.service import claude
    from corral.service.admission import admit_reading

    settings = config.load()
    wrapper = claude.wrapper(settings)
    reading = None if noted is None else reading_of(noted, wrapper)
    if reading is None or not os.path.exists("/proc/self/stat"):
        # the grammar is in site-packages, and psutil, which answers where /proc does not
        hook._site()
    if reading is None:  # no note to trust: the line reader, here
        from corral.service.admission import read as read_line

        reading = read_line(
            found.command,
            background=background,
            cwd=cwd,
            wrapper=wrapper,
            extra_runners=config.extra_runners(settings),
        )
    decision = admit_reading(reading)  # against the jobs that run now, with reservations
    return launch(decision, found, string, chained, environ, session, config.grace(settings))


def launch(  # noqa: PLR0917 - one call site (plan), every value is needed
    decision: Decision,
    found: Embedded,
    string: str,
    chained: str,
    environ: dict[bytes, bytes],
    session: str | None,
    grace: float | None,
) -> Plan:
    """The argv that starts what `decision` admitted, or its refusal."""
    from corral.core.claude.shell_string import compose
    from corral.lowlevel import locations

    if decision.action == "refuse" and decision.refusal:
        return Plan(refusal=decision.refusal)
    if decision.action != "wrap" or decision.job_token is None:
        return Plan(as_it_came(string, chained, environ))
    if decision.mode != "task" and decision.rewritten:  # `server &`, `a & b`: in the string
        inner = compose(decision.rewritten, found.head, found.cwd_file, found.style)
        return Plan(as_it_came(inner, chained, environ))
    spec = decision.jobs[0] if decision.jobs else None
    import shlex

    line = f"{shlex.quote(chained)} {shlex.quote(string)}" if chained else string
    argv = locations.supervisor_argv(
        line,
        token=decision.job_token,
        mode="task",
        ledger=locations.ledger_dir(),
        session=session,
        grace=grace,
        identity=spec.identity if spec else None,
        port=next((s.port for s in decision.jobs if s.port is not None), None),
        job_cwd=spec.cwd if spec and os.path.normpath(spec.cwd) != os.getcwd() else None,
        # The record shows the model's command. The shell reads its start-up files (zsh's
        # .zshenv) as Claude Code's `zsh -c` does, unless it only starts the user's prefix.
        # Claude Code's shell runs it, even where SHELL does not name that shell (unset: bash).
        options=[
            *("--meta", f"command={found.command}"),
            *("--shell", bash_shell(environ)),
            *([] if chained else ["--shell-startup"]),
        ],
    )
    return Plan(argv)


def main(argv: list[str]) -> int:
    """`run_prefix.py CHAINED STRING`: run STRING as planned (never returns on success)."""
    from corral.lowlevel import locations
    from corral.lowlevel.shells import caller_environment

    chained, string = ("", argv[-1] if argv else "") if len(argv) < 2 else argv[-2:]
    environ = caller_environment()
    home = locations.home_dir()
    try:
        chosen = plan(string, chained, environ, home)
    except BaseException as exc:  # noqa: BLE001 - the prefix fails open, whatever went wrong
        from corral.surfaces.claude.hook import log

        log(home, f"shell prefix: {type(exc).__name__}: {exc}")
        chosen = Plan(as_it_came(string, chained, environ))
    if chosen.refusal is not None:
        sys.stderr.write(chosen.refusal.rstrip("\n") + "\n")
        sys.stderr.flush()
        return 1
    argv_out = chosen.argv or as_it_came(string, chained, environ)
    try:
        os.execve(argv_out[0], argv_out, environ)
    except OSError as exc:  # what a shell says when it cannot run a program
        sys.stderr.write(f"{argv_out[0]}: {exc.strerror}\n")
    return 127


def launcher_path(home: str) -> str:
    """Where `corral install claude` writes the prefix: in corral's state, unless that path
    holds a character Claude Code's hook runner would split (it joins the prefix into sh
    text unquoted), e.g. macOS's "Application Support"."""
    path = os.path.join(home, "bin", NAME)
    import shlex

    if shlex.quote(path) == path:
        return path
    return os.path.join(os.path.expanduser("~"), ".local", "bin", NAME)


def write_launcher(path: str) -> bool:
    """Write the prefix program for this interpreter's corral; True when it changed."""
    from corral import config
    from corral.lowlevel import locations
    from corral.surfaces.claude.triggers import WORDS

    extra = {p.split()[0].rpartition("/")[2] for p in config.extra_runners()}
    runner = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_prefix.py")
    notes = notes_dir(locations.home_dir())
    text = launcher(sys.executable, runner, WORDS | extra, notes)
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return False
    except OSError:
        pass
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    temp = f"{path}.{os.getpid()}.tmp"
    with open(temp, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(temp, 0o755)  # noqa: S103 - a program Claude Code runs; no secret in it
    os.replace(temp, path)
    return True
