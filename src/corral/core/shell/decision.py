"""What the line reader decides for one line, as values: the action, the mode, each
in-place rewrite, the line as read before it meets the live jobs (`Reading`), and how a
supervisor's command line is written as shell text. Light: the reader itself is not loaded."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from enum import StrEnum

from corral.lowlevel.named import NamedTuple

_SAFE_WORD = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")


class JobSpec(NamedTuple):
    display: str  # redacted: assignments removed, secrets hidden
    identity: str  # short hex digest; equal identities in one folder are the same job
    cwd: str
    port: int | None


class Action(StrEnum):
    WRAP = "wrap"
    UNTOUCHED = "untouched"
    REFUSE = "refuse"


class Mode(StrEnum):
    TASK = "task"  # stopped when the launching shell goes away
    DETACHED = "detached"  # a trailing `&`: keeps running after the shell goes away
    IN_PLACE = "in-place"  # commands sent to the background mid-line, each rewritten alone


class InPlace(NamedTuple):
    """One backgrounded command run by a supervisor of its own (`token`), whose command line
    is `text` (`<supervisor> -- 'CMD'`, CMD being bytes start..end of the line). Without a
    `head`, bytes start..end become `text`. With one, the line keeps every byte: `before`
    (a function named `head` that runs `text`) goes in front of the backgrounded list at
    byte `opens` (the list, group or pipeline the command ends or is part of), and `after`
    (which removes that function) right behind its `&`, at byte `amp` + 1."""

    job: int  # its index in Decision.jobs
    token: str
    start: int
    end: int
    text: str
    head: str | None = None
    opens: int = -1
    amp: int = -1
    before: str = ""
    after: str = ""
    statement: str = ""  # with a head: the command as the rewritten line has it, `&` and all
    form: str = ""  # with a head: how bash runs it (heads.ASYNC, EXEC or CHILD)
    guard: tuple[str, ...] | None = None  # with a head: its arguments, checked (heads.Head)
    earlier: int = 0  # with a head: calls of its name and arguments let through first
    # with a head bash may find through its hash table: corral's program it finds there
    # (written by admission.write_shims before the line runs), and the arguments' values it checks
    shim: str = ""
    values: tuple[str, ...] | None = None


# Set while corral's function stands for a command word (none of the user's did); never
# exported, also where every assignment is (`set -a`): the job must not get it.
FUNCTION_FLAG = "__corral_fn"
# How many commands of that name the function has let through (`npm i && npm run dev &`).
FUNCTION_COUNT = "__corral_n"
# `$_` as it was before the list: `CMD &` leaves it alone, corral's own commands set it, and
# after a function call it is the call's last argument: the removal is such a call.
SAVED_LAST = "__corral_us"
# bash's own table entry for the command word, while corral's program stands in it.
HASH_SAVED = "__corral_h"
REMOVAL = "__corral_end"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# bash 4 or later (3.2 has no associative BASH_CMDS), with hashing on.
_BASH_HASHING = (
    '[ -n "${BASH_VERSION-}" ] && [ "${BASH_VERSINFO-0}" -ge 4 ]',
    "case $- in *h*) ;; *) false;; esac",
)


def _no_functions(words: Sequence[str]) -> str:
    """A condition: none of `words` names a function of the shell's."""
    functions = " || ".join(f"typeset -f {shell_word(word)}" for word in words)
    return f"! {{ {functions}; }} >/dev/null 2>&1"


def _hashed_in_bash(saved: str, name: str, place: str) -> str:
    """Keep bash's own entry for `name` in `saved`, and put corral's program there."""
    return f"{saved}=${{BASH_CMDS[{name}]-}}; typeset +x {saved}; hash -p {place} {name}"


def _put_back_in_bash(saved: str, name: str) -> str:
    return f'if [ -n "${saved}" ]; then hash -p "${saved}" {name}; else hash -d {name}; fi'


def _around(before: str, forget: str) -> tuple[str, str]:
    """`before` after saving `$_`, and a removal that runs `forget`, removes itself and
    puts `$_` back (called with it as its last argument: after a call, `$_` is that)."""
    removal = f"{forget} unset -f {REMOVAL}; unset {SAVED_LAST};"
    after = f' function {REMOVAL} {{ {removal} }}; {REMOVAL} "${SAVED_LAST}";'
    return f"{SAVED_LAST}=$_; typeset +x {SAVED_LAST}; {before}", after


def through_function(  # noqa: PLR0917 - each value shapes the text
    head: str,
    text: str,
    earlier: int = 0,
    form: str = "async",
    guard: Sequence[str] | None = None,
    shim: str = "",
    first: Sequence[str] = (),
) -> tuple[str, str]:
    """What goes before `HEAD … &` and right after its `&` so that the process that runs
    HEAD runs `text` instead (the supervisor), while the line keeps its text (the shell's
    job notices show it as written). The function exists only from there to the `&`, and
    only if the user has no function of that name (theirs then runs, as written).

    `form` (heads.py): how bash runs HEAD there. "async": the process forked for `&`, which
    `exec`s the supervisor (so it is `$!`); bash's `exec` puts back the SIGINT and SIGQUIT
    dispositions the shell started with, where `CMD &` of a shell without job control (no
    `m` in `$-`) runs CMD ignoring both, so the function ignores them again first, as the
    shell would have. "exec": bash runs HEAD with the shell's own dispositions (the last
    command of `( … ) &`, a command of a pipeline inside a list): `exec` alone. "child":
    bash's child for `a && HEAD &` or `{ HEAD; } &` forks HEAD and waits for it: the
    supervisor is run as a command, not `exec`ed. zsh runs every one as "async" does.

    `earlier`: commands of that name and arguments the list runs first (`npm run build &&
    npm run build &`); the function runs those as they are (`command NAME "$@"`), counting
    them. `guard`: HEAD's arguments as written, where the list runs anything else (`nvm
    use 20 && npm run dev &`: nvm's function runs `npm --version`); a call with other
    arguments runs as it is (`command NAME "$@"`), uncounted. A name that is no
    identifier (`http-server`, `./bin/serve`) is a fatal error to bash in POSIX mode: there
    no function is defined and the line runs as written.

    `shim`: corral's program for HEAD (`shim_script`), which bash finds instead of a
    function where it can: the process that runs HEAD then runs it as it would the real
    program, and every message bash prints about it (a list's process reporting it killed
    by a signal: `line 1: PID Hangup  HEAD …`) is the line's own, where one from inside a
    function names the place "environment". The line asks for it only under bash, with
    command hashing on, the program in place, HEAD found on PATH and none of `first` (the
    words of the commands the list runs first) a function, which could change PATH and so
    empty bash's table; otherwise the function stands for HEAD. The table's entry for HEAD
    is put back right after the `&`.

    `$_` right after the `&` is what it was before the list, as without corral: the removal
    is a function called with it as its last argument, and removes itself too."""
    ignore = "case $- in *m*) ;; *) trap '' INT QUIT;; esac;"
    body = f"{ignore} exec {text};"
    if form == "exec":
        body = f'[ -n "${{BASH_VERSION-}}" ] || {{ {ignore} }}; exec {text};'
    elif form == "child":
        body = f'if [ -n "${{BASH_VERSION-}}" ]; then {text}; return; fi; {body}'
    unset = FUNCTION_FLAG
    if earlier:
        count = f"${{{FUNCTION_COUNT}-0}}"
        body = (
            f'if [ "{count}" -lt {earlier} ]; then {FUNCTION_COUNT}=$(({count} + 1)); '
            f'command {head} "$@"; return; fi; {body}'
        )
        unset = f"{FUNCTION_FLAG} {FUNCTION_COUNT}"
    if guard is not None:
        checks = [f'[ "$#" -ne {len(guard)} ]']
        checks += [f'[ "${{{at}}}" != {word} ]' for at, word in enumerate(guard, 1)]
        body = f'if {" || ".join(checks)}; then command {head} "$@"; return; fi; {body}'
    function = f"function {head} {{ {body} }}; {FUNCTION_FLAG}=1"
    forget = f"unset -f {head}; unset {unset};"
    if shim:
        place = quote_for_wrapper(shim)
        in_bash, hashing = _BASH_HASHING
        hashed = f"{in_bash} && [ -x {place} ] && {hashing} && type -P {head} >/dev/null 2>&1"
        if first:
            hashed += f" && {_no_functions(first)}"
        function = (
            f"if {hashed}; then {_hashed_in_bash(HASH_SAVED, head, place)}; "
            f"{FUNCTION_FLAG}=h; else {function}; fi"
        )
        forget = (
            f'if [ "${FUNCTION_FLAG}" = h ]; then {_put_back_in_bash(HASH_SAVED, head)}; '
            f"unset {HASH_SAVED} {FUNCTION_FLAG}; else {forget} fi;"
        )
    define = f"typeset -f {head} >/dev/null 2>&1 || {{ {function}; typeset +x {FUNCTION_FLAG}; }}"
    if not _IDENTIFIER.fullmatch(head):
        define = f"case :${{SHELLOPTS-}}: in *:posix:*) ;; *) {define};; esac"
    return _around(define + "; ", f'[ -z "${{{FUNCTION_FLAG}-}}" ] || {{ {forget} }};')


class Decision(NamedTuple):
    readable: bool
    reason: str | None  # why the line is not readable
    action: str  # an Action
    mode: str | None  # a Mode when wrapped
    rewritten: str | None  # the command the agent's shell runs instead, when wrapped
    refusal: str | None
    jobs: tuple[JobSpec, ...]
    job_token: str | None = None  # the supervisor's --job token, when wrapped
    in_place: tuple[InPlace, ...] = ()  # Mode.IN_PLACE: each command rewritten
    notes: tuple[tuple[int, str], ...] = ()  # (index in jobs, why it runs as written)


class Reading(NamedTuple):
    """A line as the reader leaves it, before it meets the live jobs: the decision it gets
    when nothing runs (or a refusal the line alone gives: one server started twice in it),
    and for each of `decision.jobs` whether it is a known long runner (a job whose identity
    a running one shares is refused only then). `core.shell.check.check` meets it with the
    live jobs; `plan.decide` is both steps."""

    decision: Decision
    runners: tuple[bool, ...] = ()


def reservations(decision: Decision) -> list[tuple[JobSpec, str]]:
    """Each job corral starts for a wrapped decision, with its supervisor's token."""
    if decision.action != Action.WRAP:
        return []
    if decision.in_place:
        return [(decision.jobs[w.job], w.token) for w in decision.in_place]
    token = decision.job_token
    return [(job, token) for job in decision.jobs] if token is not None else []


def through_hash(names: Sequence[tuple[str, str]], first: Sequence[str]) -> tuple[str, str]:
    """What goes before a list sent to the background, and right after its `&`, so that
    bash or zsh run each of `names` (command word, corral's program for it: shim_script)
    through that program, found in its table of hashed commands, while no function could
    stand for it (heads.hashed_heads): every other byte and every text of the line stays.
    Only where the shell can be shown to find it when the list runs: bash with hashing on
    or zsh, every program in place, every name on PATH, and none of the names or of
    `first` (the list's other command words) a function, which could change PATH and so
    empty the table; otherwise the list runs as written. Each entry is put back (bash) or
    dropped (zsh, which finds it again) right after the `&`."""
    places = [(name, quote_for_wrapper(shim)) for name, shim in names]
    ready = " && ".join(f"[ -x {place} ]" for _, place in places)
    common = f"{ready} && {_no_functions([*(n for n, _ in names), *first])}"
    found_in_bash = " && ".join(f"type -P {name} >/dev/null 2>&1" for name, _ in names)
    found_in_zsh = " && ".join(f"whence -p {name} >/dev/null 2>&1" for name, _ in names)
    saved = [(f"{HASH_SAVED}{at}", name, place) for at, (name, place) in enumerate(places)]
    bash = "; ".join(_hashed_in_bash(*entry) for entry in saved)
    zsh = "; ".join(f"hash {name}={place}" for name, place in places)
    in_bash, hashing = _BASH_HASHING
    before = (
        f"if {in_bash} && {hashing} && {common} && {found_in_bash}; then {bash}; "
        f'{FUNCTION_FLAG}=b; typeset +x {FUNCTION_FLAG}; elif [ -n "${{ZSH_VERSION-}}" ] && '
        f"{common} && {found_in_zsh}; then {zsh}; "
        f"{FUNCTION_FLAG}=z; typeset +x {FUNCTION_FLAG}; fi; "
    )
    back = "; ".join(_put_back_in_bash(var, name) for var, name, _ in saved)
    forget = (
        f"case ${{{FUNCTION_FLAG}-}} in b) {back}; unset {' '.join(v for v, _, _ in saved)};; "
        f"z) unhash {' '.join(name for name, _ in names)};; esac; unset {FUNCTION_FLAG};"
    )
    return _around(before, forget)


def shim_script(wrap: InPlace) -> str:
    """The program bash finds for `wrap.head` (through_function's `shim`): it runs the
    supervisor (`wrap.text`) for the call with the command's own arguments, once the first
    `wrap.earlier` such calls have run as they are, and any other call as it is
    (supervisor/shim.py)."""
    import shlex
    import sys

    from corral.lowlevel.locations import PACKAGE

    argv = shlex.split(wrap.text)
    call = f"run({wrap.head!r}, {list(wrap.values or ())!r}, {wrap.earlier}, {argv!r})"
    return (
        f"#!{sys.executable} -IS\n"
        f"# corral: bash runs this for {wrap.head!r} in one line it ran (job {wrap.token})\n"
        f"import sys\nsys.path.insert(0, {os.path.dirname(PACKAGE)!r})\n"
        f"from corral.supervisor.shim import run\n{call}\n"
    )


def can_shim() -> bool:
    """This interpreter can lead a shim's first line (`#!PATH -IS`: no space in PATH, and
    short enough for every kernel)."""
    import sys

    return " " not in sys.executable and len(sys.executable) < 100


def quote_for_wrapper(line: str) -> str:
    """One shell word that bash, zsh and sh read back as exactly `line`."""
    return "'" + line.replace("'", "'\\''") + "'"


def shell_word(word: str) -> str:
    """`word` as one shell word: as it is when plain, else quoted."""
    return word if _SAFE_WORD.fullmatch(word) else quote_for_wrapper(word)


def shell_words(argv: Sequence[str]) -> str:
    """A supervisor's argv (from `locations.supervisor_argv`, ending in `-- LINE`) as shell
    text: plain words as they are, the others and the line itself quoted."""
    words = [shell_word(w) for w in argv[:-1]]
    words.append(quote_for_wrapper(argv[-1]))  # the line itself: always quoted
    return " ".join(words)


def same_dir(a: str, b: str) -> bool:
    return os.path.normpath(a) == os.path.normpath(b)
