"""corral's job supervisor: runs one shell line as the leader of a new process group.

usage: python3 -I -S supervisor.py [--job TOKEN] [--task | --detached] [--session ID]
           [--grace SECONDS] [--ledger DIR] [--identity DIGEST] [--port N]
           [--ready-fd FD] [--meta KEY=VALUE ...] [--no-fallback] -- LINE

Runs LINE unchanged with the user's shell ($SHELL if bash or zsh, else /bin/sh) in a new
process group that this program leads, records the job in the ledger folder
(<ledger>/<token>.json, written atomically), and stays alive until every process of the
job is gone; then it records how the job ended and exits with the line's exit status.

  --job TOKEN      the job's 128-bit id as 32 hex digits (made up when absent)
  --task           stop the job when the launching shell goes away (default)
  --detached       keep running when the launching shell goes away
  --session ID     the agent session that owns the job (default: $CORRAL_SESSION,
                   then $CLAUDE_CODE_SESSION_ID)
  --grace SECONDS  time between SIGTERM and SIGKILL when stopping (default 3)
  --ledger DIR     the ledger folder (default: $CORRAL_HOME/ledger, else the user's
                   state folder)
  --identity D     the job's identity digest for duplicate checks (from the line reader)
  --port N         the port the line asks for (from the line reader)
  --ready-fd FD    write "ok" to FD once the job is started, then close it
  --meta KEY=VALUE add a text field to the job's record (repeatable; may set `backend`)
  --no-fallback    if the job cannot be supervised, run nothing: write "fail REASON" to
                   the ready fd and exit 1 (`corral run -d`)

Stop it by writing "stop" to <ledger>/<token>.stop, or with SIGTERM or SIGINT: the
whole job is stopped (SIGTERM to the group and every descendant, SIGKILL after the grace
period). SIGHUP is ignored by the supervisor itself. If the group cannot be led or the
ledger cannot be written, LINE runs exactly as written, unsupervised (or, with
--no-fallback, not at all).

This module is standalone: it imports only the standard library, nothing from corral.
The rest of corral imports its record format and its display redaction from here.
"""

from __future__ import annotations

import errno
import os
import select
import sys
import time

# Start-up is this program's budget: typing, json and re cost milliseconds to import, so
# they are imported for type checking only, or only when a line needs them; `signal` is the
# C module underneath, without the enum wrappers (same functions, plain int signals).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    import signal
    from typing import Any
else:
    import _signal as signal

LEDGER_VERSION = 1
DEFAULT_GRACE = 3.0
STATES_FINAL = ("exited", "stopped", "killed")
_PLATFORM_LINUX = sys.platform.startswith("linux")
_SCRIPT = __file__  # CPython removes __file__ from a script's globals once its top level ends
_PR_SET_CHILD_SUBREAPER = 36
_CLEARED_ENV = (b"SHELLOPTS", b"BASHOPTS", b"BASH_ENV", b"ENV", b"CORRAL_JOB")
# Signals whose default action dumps core: re-raised only once our core limit is 0.
_CORE_SIGNALS = (
    signal.SIGQUIT, signal.SIGILL, signal.SIGTRAP, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE,
    signal.SIGSEGV, signal.SIGSYS, signal.SIGXCPU, signal.SIGXFSZ,
)  # fmt: skip


# -- display text: no secret ever reaches the ledger ------------------------------------

_MASK = "***"
_SECRET_WORD = r"(?:token|secret|passw(?:or)?d|pass|pwd|api[-_]?key|apikey|auth|credential|private[-_]?key|access[-_]?key|key|cookie|session[-_]?id|signature|dsn)"  # noqa: E501
# Names that hold a secret word but no secret (`git log --author=`, `--max-tokens 256`).
_NOT_SECRET_WORDS = r"(?:author(?!i)|tokens\b|tokenizer|keyword|keyboard|keymap|monkey|bypass|passes|passthrough|compass)"  # noqa: E501
# A shell word: quoted parts, escapes and plain characters glued together; an unclosed
# quote runs to the end of the line (the shell would reject it, but it may hold a secret).
# Every alternative starts with a different character and can end in one place only, so
# a word that fails to match is given up in linear time (no exponential backtracking).
_VALUE = (
    r"""(?:'[^']*(?:'|\Z)"""  # single-quoted
    r"""|"(?:[^"\\]|\\(?:[\s\S]|\Z))*(?:"|\Z)"""  # double-quoted
    r"""|\\(?:[\s\S]|\Z)|[^\s;&|'"\\])+"""  # an escaped or a plain character
)
_ASSIGN = r"[A-Za-z_][A-Za-z0-9_]*=" + _VALUE + "?"
_SHOWN_MAX = 4096
_ASSIGNMENTS: re.Pattern[str] | None = None
_COMPILED: dict[str, re.Pattern[str]] = {}

# Each rule runs only when its trigger is in the text, so most lines never load `re` and
# a line compiles only the rules it may need. A trigger is a necessary condition: a tuple
# of groups of words, and every group must have one of its words in the text (in the
# lowered text for a case-insensitive rule). Substitutions only put "***" in place of a
# span, so a word with no "*" cannot appear in the text that a later rule reads unless it
# was already there: the triggers are tested once, on the text with assignments dropped.
# A non-ASCII line runs every rule: a case-insensitive regex folds some letters onto ASCII
# ones (the long s onto s, the Kelvin sign onto k), and lower() does not.
# A trigger: groups separated by spaces, each a choice of words separated by |; every group
# must have one of its words in the text. S stands for the secret words.
_SECRET_WORDS = "token|secret|pass|pwd|key|auth|credential|cookie|session|signature|dsn"
_RULE_TRIGGERS = (
    ":// @",  # scheme://user:password@host
    ":// @",  # scheme://token@host
    "hooks.slack.com/",
    "/api/webhooks/",
    "sig=",
    "bearer",
    ": basic|token|digest",
    ": S",  # header-like `Name: value`
    "- = S",  # --flag=value
    "- S",  # --flag value
    "config set S",
    "= S",  # NAME=value
    "mysql|mariadb -p",
    "sshpass -p",
    "redis-cli -a",
    "login -p",
    "curl -u :",  # -u, -U, --user, --proxy-user (lowered)
    "http|xh -a :",
    "secret set -b",
)
_TRIGGER_GROUPS = tuple(
    tuple(tuple((_SECRET_WORDS if g == "S" else g).split("|")) for g in spec.split())
    for spec in _RULE_TRIGGERS
)
# Provider key shapes, each with the literal text (case as written) it cannot match without.
_KEY_SHAPES = (
    ("AKIA|ASIA|ABIA|ACCA", r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}"),
    ("ghp_|gho_|ghu_|ghs_|ghr_", r"gh[pousr]_[A-Za-z0-9]{20,}"),
    ("github_pat_", r"github_pat_[A-Za-z0-9_]{20,}"),
    ("glpat-|glptt-|gldt-|glrt-|glft-|glimt-|glsoat-|glagent-",
     r"gl(?:pat|ptt|dt|rt|ft|imt|soat|agent)-[A-Za-z0-9_-]{16,}"),
    ("xox", r"xox[abposre]-[A-Za-z0-9-]{10,}"),
    ("xapp-", r"xapp-[A-Za-z0-9-]{10,}"),
    ("_live_|_test_", r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}"),
    ("whsec_", r"whsec_[A-Za-z0-9+/=]{20,}"),
    ("sk-ant-", r"sk-ant-[A-Za-z0-9_-]{10,}"),
    ("sk-", r"sk-(?:proj-)?[A-Za-z0-9_-]{20,}"),
    ("AIza", r"AIza[0-9A-Za-z_-]{30,}"),
    ("ya29.", r"ya29\.[0-9A-Za-z_-]{20,}"),
    ("npm_", r"npm_[A-Za-z0-9]{30,}"),
    ("pypi-", r"pypi-[A-Za-z0-9_-]{30,}"),
    ("hf_", r"hf_[A-Za-z0-9]{30,}"),
    ("dop_v1_", r"dop_v1_[a-f0-9]{40,}"),
    ("shp", r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{20,}"),
    ("SG.", r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),
    ("sq0", r"sq0(?:atp|csp)-[A-Za-z0-9_-]{20,}"),
    ("SK", r"SK[0-9a-fA-F]{32}"),
    ("key-", r"key-[0-9a-zA-Z]{32}"),
    ("hvs.|hvb.|hvr.", r"hv[sbr]\.[A-Za-z0-9_-]{20,}"),
    ("lin_", r"lin_(?:api|oauth)_[A-Za-z0-9]{30,}"),
    ("PMAK-", r"PMAK-[0-9a-fA-F]{24}-[0-9a-fA-F]{30,}"),
    ("glsa_", r"glsa_[A-Za-z0-9_]{30,}"),
    ("glc_", r"glc_[A-Za-z0-9+/=]{30,}"),
    ("sntry", r"sntry[su]_[A-Za-z0-9+/=_]{30,}"),
    ("dapi", r"dapi[a-f0-9]{32}"),
    ("figd_", r"figd_[A-Za-z0-9_-]{30,}"),
    ("dp.", r"dp\.(?:st|ct|sa|scim|audit)\.[A-Za-z0-9_.-]{30,}"),
    ("AGE-SECRET-KEY-1", r"AGE-SECRET-KEY-1[0-9A-Z]{50,}"),
    ("eyJ", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    (":AA", r"\d{8,10}:AA[A-Za-z0-9_-]{30,}"),
    ("-----BEGIN",
     r"-----BEGIN[A-Z ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
     r"(?:-----END[A-Z ]*PRIVATE KEY(?: BLOCK)?-----|$)"),
)  # fmt: skip
_SHAPE_WORDS = tuple(tuple(words.split("|")) for words, _ in _KEY_SHAPES)
_RULES: list[tuple[str, str]] | None = None


def _rules() -> list[tuple[str, str]]:
    """(pattern, replacement) of every rule but the key shapes, in _RULE_TRIGGERS order."""
    global _RULES
    if _RULES is None:
        # A name holding a secret word (the lookahead finds it, then the name is taken whole
        # and never given back: linear time however long the word).
        flag_name = r"(?![\w-]*?" + _NOT_SECRET_WORDS + r")(?=[\w-]*?" + _SECRET_WORD + r")[\w-]++"
        plain_name = r"(?!\w*?" + _NOT_SECRET_WORDS + r")(?=\w*?" + _SECRET_WORD + r")\w++"
        # Programs whose short option takes a password: (program, option before the value),
        # looked for within a bounded stretch of the same command.
        start = r"((?:^|[\s;&|(])"
        program_passwords = [
            (r"(?:mysql|mariadb)[\w-]*", r"\s-p", r"\S+"),  # glued: -pSECRET
            (r"sshpass", r"\s-p\s*", _VALUE),
            (r"redis-cli", r"\s-a\s+", _VALUE),
            (r"(?:docker|podman|nerdctl|buildah|skopeo|oras)\s+login", r"\s-p\s*", _VALUE),
            (
                r"curl",
                r"""\s(?:-u|--user|-U|--proxy-user)(?:\s+|=)?['"]?[^\s:'"]*:""",
                r"""[^\s'"]+""",
            ),
            (
                r"(?:http|https|xh)",
                r"""\s(?:-a|--auth)(?:\s+|=)?['"]?[^\s:'"]*:""",
                r"""[^\s'"]+""",
            ),
            (r"\S*secret\s+set", r"\s(?:-b|--body)(?:\s+|=)", _VALUE),
        ]
        _RULES = [
            # URL credentials: scheme://user:password@host (a raw @ may sit in the password),
            # scheme://token@host, and webhook URLs whose path is the secret
            (r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@'\"]*:)[^\s/'\"]+(@)", r"\1***\2"),
            (r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://)[A-Za-z0-9_.~-]{16,}(@)", r"\1***\2"),
            (r"(hooks\.slack\.com/(?:services|workflows|triggers)/)[^\s'\"]+", r"\1***"),
            (r"(discord(?:app)?\.com/api/webhooks/\d+/)[^\s'\"/?]+", r"\1***"),
            (r"([?&;]sig=)[^\s&'\"#]+", r"\1***"),
            # Authorization schemes and secret-looking header values
            (r"(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=-]{6,}", r"\1\2***"),
            (r"(?i)(:\s*)(basic|token|digest)(\s+)[A-Za-z0-9._~+/=-]{6,}", r"\1\2\3***"),
            (
                r"(?i)((?<![\w/-])(?=[\w-]*?"
                + _SECRET_WORD
                + r")[\w-]++\s*:\s*(?:(?:bearer|basic|token|digest)\s+)?)[^\s'\"]+",
                r"\1***",
            ),
            # --flag=value and --flag value for secret-looking flags
            (r"(?i)((?:^|\s)--?" + flag_name + r"=)" + _VALUE, r"\1***"),
            (r"(?i)((?:^|\s)--?" + flag_name + r"\s+)(?!-)" + _VALUE, r"\1***"),
            # `aws configure set aws_secret_access_key VALUE`, `npm config set _authToken V`
            (
                r"(?i)(\bconfig(?:ure)?\s+set\s+(?:--?[\w-]+\s+){0,8}['\"]?(?=[\w.:/@-]*?"
                + _SECRET_WORD
                + r")[\w.:/@-]++['\"]?\s+)(?!-)"
                + _VALUE,
                r"\1***",
            ),
            # NAME=value arguments whose name looks secret (make TOKEN=..., docker -e KEY=...)
            (r"(?i)(\b" + plain_name + r"=)" + _VALUE, r"\1***"),
            *(
                (start + program + r"\b[^\n;&|]{0,400}?" + option + ")" + value, r"\1***")
                for program, option, value in program_passwords
            ),
        ]
    return _RULES


def _compiled(pattern: str) -> re.Pattern[str]:
    found = _COMPILED.get(pattern)
    if found is None:
        import re

        if len(_COMPILED) > 200:  # a long-lived reader sees many subsets of key shapes
            _COMPILED.clear()
        found = _COMPILED[pattern] = re.compile(pattern)
    return found


def _holds(text: str, groups: tuple[tuple[str, ...], ...]) -> bool:
    return all(any(word in text for word in group) for group in groups)


def _redact(text: str, every_rule: bool) -> str:
    lowered = text.lower()
    rules = [i for i, groups in enumerate(_TRIGGER_GROUPS) if every_rule or _holds(lowered, groups)]
    if (
        rules
        and not every_rule
        and set(rules) <= _SCANNED_RULES
        and not any(mark in text for mark in ("'", '"', "\\"))
        and not any(_holds(text, (words,)) for words in _SHAPE_WORDS)
    ):
        # Secret-looking flags and NAME=value on a plain line: scanners, not `re`.
        if _FLAG_GLUED in rules:
            text = _hide_flag_values(text, glued=True)
        if _FLAG_SPACED in rules:
            text = _hide_flag_values(text, glued=False)
        if _NAME_VALUE in rules:
            text = _hide_named_values(text)
        return text
    sources = _rules() if rules else []
    for i in rules:
        pattern, replacement = sources[i]
        text = _compiled(pattern).sub(replacement, text)
    # One alternation of the key shapes that may be present: a shape whose literal text is
    # absent matches nowhere, so leaving it out changes no match of the others.
    shapes = [
        shape
        for words, (_, shape) in zip(_SHAPE_WORDS, _KEY_SHAPES, strict=True)
        if every_rule or _holds(text, (words,))
    ]
    if shapes:
        text = _compiled("|".join(f"(?:{shape})" for shape in shapes)).sub(_MASK, text)
    return text


# The rules `--flag=value`, `--flag value` and `NAME=value` (indexes in _RULE_TRIGGERS) as
# scanners that give what their regexes give on an ASCII line with no quote or backslash
# (property-tested against them), so that the commonest secret-looking lines load no `re`.
_FLAG_GLUED, _FLAG_SPACED, _NAME_VALUE = 8, 9, 11
_SCANNED_RULES = frozenset((_FLAG_GLUED, _FLAG_SPACED, _NAME_VALUE))
# _SECRET_WORD and _NOT_SECRET_WORDS as words to look for in a lowered name
_SECRET_IN_NAME = _SECRET_WORDS.replace("session", "sessionid|session_id|session-id").split("|")
_NOT_SECRET_IN_NAME = (
    "tokenizer", "keyword", "keyboard", "keymap", "monkey", "bypass", "passes", "passthrough",
    "compass",
)  # fmt: skip
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789")
_FLAG_WORD = _WORD | {"-"}


def _secret_name(name: str) -> bool:
    r"""The lookaheads of the name rules, for a lowered name that is a whole [\w-] run."""
    if not any(word in name for word in _SECRET_IN_NAME):
        return False
    if any(word in name for word in _NOT_SECRET_IN_NAME):
        return False
    for word, allowed_after in (
        ("author", "i"),
        ("tokens", "abcdefghijklmnopqrstuvwxyz0123456789_"),
    ):
        at = name.find(word)
        while at >= 0:
            after = name[at + len(word) : at + len(word) + 1]
            if not after or after not in allowed_after:  # author(?!i), tokens\b
                return False
            at = name.find(word, at + 1)
    return True


def _value_end(text: str, start: int) -> int:
    end = start
    while end < len(text) and not text[end].isspace() and text[end] not in ";&|":
        end += 1
    return end


def _hide_flag_values(text: str, glued: bool) -> str:
    r"""`(?:^|\s)--?NAME=VALUE` (glued) or `(?:^|\s)--?NAME\s+(?!-)VALUE`: VALUE -> ***."""
    lowered, n = text.lower(), len(text)
    out: list[str] = []
    kept = 0
    dash = text.find("-")
    while dash >= 0:
        if dash == 0 or (dash > kept and text[dash - 1].isspace()):
            end = dash + 1
            while end < n and text[end] in _FLAG_WORD:
                end += 1
            if glued:
                start = end + 1 if text[end : end + 1] == "=" else n
            else:
                start = end
                while start < n and text[start].isspace():
                    start += 1
                if start == end or text[start : start + 1] == "-":
                    start = n
            stop = _value_end(text, start)
            if stop > start and _secret_name(lowered[dash + 1 : end]):
                out += (text[kept:start], _MASK)
                kept = stop
                dash = text.find("-", stop)
                continue
        dash = text.find("-", dash + 1)
    out.append(text[kept:])
    return "".join(out)


def _hide_named_values(text: str) -> str:
    r"""`\bNAME=VALUE` with a secret-looking NAME: VALUE -> ***."""
    lowered, n = text.lower(), len(text)
    out: list[str] = []
    kept = i = 0
    while i < n:
        if text[i] not in _WORD:
            i += 1
            continue
        end = i + 1  # a whole word: \b at i, and \w++ takes it to its end
        while end < n and text[end] in _WORD:
            end += 1
        if text[end : end + 1] == "=":
            stop = _value_end(text, end + 1)
            if stop > end + 1 and _secret_name(lowered[i:end]):
                out += (text[kept : end + 1], _MASK)
                kept = i = stop
                continue
        i = end
    out.append(text[kept:])
    return "".join(out)


_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_CHARS = _NAME_START | frozenset("0123456789")


def _assignments_end(line: str, i: int, stop: list[int]) -> int:
    """Where the run of `NAME=value ` words at i ends (i: none); a line with no quotes.

    stop is [a, b]: no whitespace or ;&| in line[a:b], and line[b] is one (or b is the end).
    Scans share it, so a line of many `(A=b(A=b…` starts is read once, not once a start."""
    n = len(line)
    while i < n and line[i] in _NAME_START:
        j = i + 1
        while j < n and line[j] in _NAME_CHARS:
            j += 1
        if j == n or line[j] != "=":
            break
        j += 1
        if not stop[0] <= j <= stop[1]:
            k = j
            while k < n and not line[k].isspace() and line[k] not in ";&|":
                k += 1
            stop[:] = [j, k]
        k = stop[1]
        if k in (j, n) or not line[k].isspace():
            break  # no value, or the value runs into an operator or the end of the line
        while k < n and line[k].isspace():
            k += 1
        i = k
    return i


def _drop_plain_assignments(line: str) -> str:
    """_ASSIGNMENTS.sub without `re`, for an ASCII line with no quote, escape, env or sudo."""
    out: list[str] = []
    stop = [-1, -1]
    kept = 0  # line[kept:pos] is still to be copied
    pos, n = 0, len(line)
    end = _assignments_end(line, 0, stop)
    if end > 0:
        kept = pos = end
    while pos < n:
        if line[pos] in ";&|(\n":
            words = pos + 1
            while words < n and line[words].isspace():
                words += 1
            end = _assignments_end(line, words, stop)
            if end > words:
                out.append(line[kept:words])
                kept = pos = end
                continue
        pos += 1
    out.append(line[kept:])
    return "".join(out)


def _assignments_pattern() -> re.Pattern[str]:
    global _ASSIGNMENTS
    if _ASSIGNMENTS is None:
        import re

        options = (
            r"(?:(?:-u|--unset|-C|--chdir|-S|--split-string)\s+\S+\s+"
            r"|-[a-zA-Z-]+(?:=\S*)?\s+){0,8}"
        )
        starts = r"(^|[;&|(\n]\s*|\b(?:env|sudo)\s+" + options + ")"
        _ASSIGNMENTS = re.compile(starts + r"((?:" + _ASSIGN + r"\s+)++)")
    return _ASSIGNMENTS


def _drop_assignments(line: str) -> str:
    """Remove `NAME=value` words where they set a command's environment."""
    if "=" not in line:
        return line
    plain = line.isascii() and not any(c in line for c in ("'", '"', "\\", "env", "sudo"))
    previous = None
    while previous != line:
        previous = line
        if plain:
            line = _drop_plain_assignments(line)
        else:
            line = _assignments_pattern().sub(lambda m: m.group(1), line)
    return line


def _display_all_rules(line: str) -> str:
    """display_command without the triggers: every rule runs."""
    return _redact(_drop_assignments(line), every_rule=True).strip()


def _shorten(line: str) -> str:
    """The first _SHOWN_MAX characters, cut between words so no secret is shown in part."""
    cut = line[:_SHOWN_MAX]
    if not line[_SHOWN_MAX].isspace():
        cut = cut[: max(cut.rfind(" "), cut.rfind("\t"), cut.rfind("\n"), 0)]
    return cut.rstrip() + " …"


def display_command(line: str) -> str:
    """The line as corral shows and stores it: assignments removed, secrets hidden."""
    if len(line) > _SHOWN_MAX:  # the rules take time that grows faster than the line
        line = _shorten(line)
    return _redact(_drop_assignments(line), every_rule=not line.isascii()).strip()


def command_digest(line: str) -> str:
    try:  # the bare C module: a third of hashlib's import time
        from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ImportError:
            from hashlib import sha256  # type: ignore[assignment,unused-ignore]
    return str(sha256(line.encode("utf-8", "surrogateescape")).hexdigest())


# -- identity -----------------------------------------------------------------------------


def boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return "noboot"


def _decimal(digits: bytes) -> int:
    """int(digits) for ASCII digits, without int(): CPython's first conversion of a decimal
    string calls libm's log(), which maps about 230 kB of libm into a supervisor for life."""
    value = 0
    for digit in digits:
        value = value * 10 + digit - 48
    return value


def start_ticks(pid: int) -> int | None:
    """Linux: the process's start time in clock ticks since boot, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2 :].split()
    return _decimal(fields[19])


def _proc_stat(pid: int) -> tuple[int, int, int] | None:
    """(ppid, pgid, start ticks) of a Linux process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2 :].split()
    if fields[0] == b"Z":
        return None
    return _decimal(fields[1]), _decimal(fields[2]), _decimal(fields[19])


def self_identity() -> str | None:
    if not _PLATFORM_LINUX:
        return None  # readers fill it from psutil's create time
    ticks = start_ticks(os.getpid())
    return None if ticks is None else f"{boot_id()}:{ticks}"


# -- ledger -------------------------------------------------------------------------------


def default_ledger_dir() -> str:
    home = os.environ.get("CORRAL_HOME")
    if home:
        return os.path.join(home, "ledger")
    if sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Application Support")
    else:
        base = os.environ.get("XDG_STATE_HOME", "").strip() or os.path.expanduser("~/.local/state")
    return os.path.join(base, "corral", "ledger")


def _json_value(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if abs(value) < float("inf") else "null"  # NaN compares False
    out = ['"']
    for char in str(value):
        code = ord(char)
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def encode_record(record: dict[str, Any]) -> bytes:
    """JSON for a flat record (the json module costs milliseconds of start-up to import)."""
    body = ", ".join(f"{_json_value(k)}: {_json_value(v)}" for k, v in record.items())
    return ("{" + body + "}").encode("utf-8")


def write_record(ledger: str, record: dict[str, Any]) -> None:
    """Atomically replace <ledger>/<id>.json with `record` (temp file + rename, mode 0600)."""
    final = os.path.join(ledger, record["id"] + ".json")
    temp = os.path.join(ledger, f".{record['id']}.{os.getpid()}.tmp")
    data = encode_record(record)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        try:
            if os.write(fd, data) != len(data):
                raise OSError(errno.ENOSPC, "short write", temp)
        finally:
            os.close(fd)
        os.replace(temp, final)
    except OSError:
        try:  # a full disk must not keep the empty temp file as litter
            os.unlink(temp)
        except OSError:
            pass
        raise


def _log(ledger: str, message: str) -> None:
    try:
        with open(os.path.join(os.path.dirname(ledger), "corral.log"), "a") as f:
            f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} supervisor[{os.getpid()}] {message}\n")
    except OSError:
        pass


def _libc_call(name: str, *args: int) -> tuple[int, int]:
    """Call a C library function of int arguments: (its int result, errno after it).

    The bare `_ctypes` module, not the `ctypes` package: a sixth of its start-up time and
    half of its memory (no struct, no types, no Python-level wrappers)."""
    import _ctypes

    c: Any = _ctypes  # the stubs type these for the ctypes package's wrappers only

    class CInt(c._SimpleCData):  # type: ignore[misc]
        _type_ = "i"

    class Function(c.CFuncPtr):  # type: ignore[misc]
        _flags_ = c.FUNCFLAG_CDECL | c.FUNCFLAG_USE_ERRNO
        _restype_ = CInt

    class Libc:
        _handle = c.dlopen(None, getattr(os, "RTLD_LOCAL", 0))

    result = Function((name, Libc))(*args)
    return int(result), int(_ctypes.get_errno())


# -- the supervisor -----------------------------------------------------------------------


class _Usage(Exception):
    pass


def _parse(argv: list[str]) -> dict[str, Any]:
    opts: dict[str, Any] = {
        "job": None,
        "mode": "task",
        "session": None,
        "grace": DEFAULT_GRACE,
        "ledger": None,
        "identity": None,
        "port": None,
        "ready_fd": None,
        "meta": [],
        "fallback": True,
    }
    valued = {"--job", "--session", "--grace", "--ledger", "--identity", "--port", "--ready-fd"}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            if len(argv) != i + 2:
                raise _Usage("give the line as exactly one argument after --")
            opts["line"] = argv[i + 1]
            break
        if arg in ("--task", "--detached"):
            opts["mode"] = arg[2:]
        elif arg == "--no-fallback":
            opts["fallback"] = False
        elif arg == "--meta" and i + 1 < len(argv) and "=" in argv[i + 1][1:]:
            key, _, value = argv[i + 1].partition("=")
            if not key.replace("_", "a").isalnum() or not key.isascii():
                raise _Usage(f"--meta takes KEY=VALUE with a plain key, not {key!r}")
            opts["meta"].append((key, value))
            i += 1
        elif arg in valued and i + 1 < len(argv):
            opts[arg[2:].replace("-", "_")] = argv[i + 1]
            i += 1
        else:
            raise _Usage(f"unknown or incomplete option {arg!r}")
        i += 1
    if "line" not in opts:
        raise _Usage("missing -- LINE")
    try:
        opts["grace"] = float(opts["grace"])
        for key in ("port", "ready_fd"):
            text = opts[key]
            if text is not None:
                if not (text.isascii() and text.isdigit()):
                    raise ValueError(f"--{key.replace('_', '-')} takes a number, not {text!r}")
                opts[key] = _decimal(text.encode())
    except ValueError as exc:
        raise _Usage(str(exc)) from None
    if not 0 <= opts["grace"] <= 3600:
        raise _Usage("--grace takes seconds from 0 to 3600")
    job = opts["job"]
    if job is not None and (len(job) != 32 or not set(job) <= set("0123456789abcdef")):
        raise _Usage("--job takes 32 lowercase hex digits")
    return opts


def user_shell() -> tuple[str, list[str]]:
    """The shell that runs the line and the options that go before `-c`."""
    shell = os.environ.get("SHELL", "")
    name = os.path.basename(shell)
    if os.path.isabs(shell) and os.access(shell, os.X_OK):
        if name == "bash":
            return shell, ["+m"]
        if name == "zsh":
            return shell, ["-f", "+m"]
    return "/bin/sh", ["+m"]


def caller_environment() -> dict[bytes, bytes]:
    """The environment this program was really given.

    os.environ is not it: Python's PEP 538 locale coercion adds LC_CTYPE=C.UTF-8 to it when
    the caller's locale is C or unset, even in isolated mode, and the line must not see a
    variable its caller never set. Linux keeps the original in /proc/self/environ; elsewhere
    os.environ is the best there is."""
    try:
        with open("/proc/self/environ", "rb") as f:
            entries = f.read().split(b"\0")
    except OSError:
        return dict(os.environb)
    env: dict[bytes, bytes] = {}
    for entry in entries:
        key, sep, value = entry.partition(b"=")
        if sep and key and key not in env:  # the first one wins, as in os.environ
            env[key] = value
    return env


def job_environment(token: str, session: str | None) -> dict[bytes, bytes]:
    env = {
        k: v
        for k, v in caller_environment().items()
        if k not in _CLEARED_ENV and not k.startswith(b"BASH_FUNC_")
    }
    env[b"CORRAL_JOB"] = token.encode()
    if session:
        env[b"CORRAL_SESSION"] = os.fsencode(session)
    return env


class Supervisor:
    def __init__(self, opts: dict[str, Any], inherited_hup: Any) -> None:
        self.opts = opts
        self.inherited_hup = inherited_hup
        self.token: str = opts["job"]
        self.ledger: str = opts["ledger"] or default_ledger_dir()
        self.grace: float = opts["grace"]
        self.pid = os.getpid()
        self.child = 0
        self.child_status: int | None = None
        self.stop_signal: int | None = None
        self.kill_at: float | None = None
        self.killed = False
        self.tty_fd: int | None = None
        self.tty_restore_pgrp: int | None = None
        self.original_pgrp = os.getpgrp()
        self.parent_gone_early = False
        self.record: dict[str, Any] = {}
        self.fifo_path = os.path.join(self.ledger, self.token + ".stop")

    # set-up ------------------------------------------------------------------------------
    def lead_group(self) -> None:
        original = self.original_pgrp
        if original != self.pid:
            os.setpgid(0, 0)
        try:
            if os.isatty(0) and os.tcgetpgrp(0) == original and original != self.pid:
                # We were the terminal's foreground job: our new group takes that place, so
                # Ctrl-C and reads from the terminal reach the job as they would have.
                self.tty_fd = os.dup(0)
                self._set_foreground(self.pid)
                self.tty_restore_pgrp = original
        except OSError:
            self.tty_fd = None

    def _set_foreground(self, pgrp: int) -> None:
        if self.tty_fd is None:
            return
        old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        try:
            os.tcsetpgrp(self.tty_fd, pgrp)
        except OSError:
            pass
        finally:
            signal.signal(signal.SIGTTOU, old)

    def become_subreaper(self) -> None:
        if not _PLATFORM_LINUX:
            return
        try:
            result, err = _libc_call("prctl", _PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (ImportError, OSError, AttributeError) as exc:
            _log(self.ledger, f"prctl(PR_SET_CHILD_SUBREAPER) unavailable: {exc}")
            return
        if result != 0:
            _log(self.ledger, f"prctl(PR_SET_CHILD_SUBREAPER) failed: errno {err}")

    def give_back_memory(self) -> None:
        """Return the freed start-up memory (the script's syntax tree) to the system."""
        if _PLATFORM_LINUX:
            try:
                _libc_call("malloc_trim", 0)
            except (ImportError, OSError, AttributeError):
                pass  # not glibc: the memory stays ours, nothing else changes

    def open_ledger(self) -> int:
        os.makedirs(self.ledger, mode=0o700, exist_ok=True)
        if os.stat(self.ledger).st_uid != os.getuid():
            raise OSError(errno.EPERM, "ledger folder belongs to another user", self.ledger)
        os.chmod(self.ledger, 0o700)
        os.mkfifo(self.fifo_path, 0o600)
        # O_RDWR: we hold a writer ourselves, so the FIFO never reports hang-up between stops.
        return os.open(self.fifo_path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)

    def watch_parent(self) -> int | None:
        parent = os.getppid()
        if parent <= 1:
            return None
        fd: int | None = None
        if hasattr(os, "pidfd_open"):
            fd = os.pidfd_open(parent)
        elif hasattr(select, "kqueue"):  # macOS: a kqueue fd is pollable
            sel: Any = select
            kq = sel.kqueue()
            kq.control([sel.kevent(parent, sel.KQ_FILTER_PROC, sel.KQ_EV_ADD, sel.KQ_NOTE_EXIT)], 0)
            self._kq = kq  # keep it open
            fd = kq.fileno()
        self.parent_gone_early = os.getppid() != parent  # it went away before we watched it
        return fd

    def start_record(self) -> None:
        line: str = self.opts["line"]
        shell, _ = user_shell()
        self.record = {
            "version": LEDGER_VERSION,
            "id": self.token,
            "pid": self.pid,
            "started_at": self_identity(),
            "pgid": self.pid,
            "mode": self.opts["mode"],
            "backend": "group",
            "session": self.opts["session"],
            "cwd": os.getcwd(),
            "command": display_command(line),
            "digest": command_digest(line),
            "identity": self.opts["identity"],
            "port": self.opts["port"],
            "shell": shell,
            "parent_pid": os.getppid(),
            "grace": self.grace,
            "created_at": time.time(),
            "state": "running",
            "exit_code": None,
            "signal": None,
            "stop_requested_at": None,
            "ended_at": None,
        }
        for key, value in self.opts["meta"]:  # extra fields; of the known ones, only backend
            if key == "backend" or key not in self.record:
                self.record[key] = value
        write_record(self.ledger, self.record)

    def spawn(self) -> None:
        shell, shell_opts = user_shell()
        env = job_environment(self.token, self.opts["session"])
        argv = [shell, *shell_opts, "-c", self.opts["line"]]
        # The job gets default dispositions (issue 2: even for SIGINT and SIGQUIT when we
        # started ignoring them), SIGHUP as we were given it, and every signal unblocked.
        # Not posix_spawn: glibc's leaves its two internal signals ignored in the job.
        defaults = [signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGCHLD]
        defaults += [signal.SIGPIPE, signal.SIGXFSZ]
        inherited_hup = self.inherited_hup
        pid = os.fork()
        if pid == 0:  # the job
            try:
                for sig in defaults:
                    signal.signal(sig, signal.SIG_DFL)
                signal.signal(signal.SIGHUP, inherited_hup)
                signal.set_wakeup_fd(-1)
                signal.pthread_sigmask(signal.SIG_SETMASK, [])
                os.execve(shell, argv, env)
            except BaseException as exc:  # noqa: BLE001 - the child must never return into our code
                os.write(2, f"corral: cannot run {shell}: {exc}\n".encode())
            finally:
                os._exit(127)
        self.child = pid

    # the event loop ---------------------------------------------------------------------
    def request_stop(self, sig: int) -> None:
        if self.stop_signal is not None:
            return
        self.stop_signal = sig
        self.kill_at = time.monotonic() + self.grace
        self.record["state"] = "stopping"
        self.record["stop_requested_at"] = time.time()
        try:
            write_record(self.ledger, self.record)
        except OSError as exc:
            _log(self.ledger, f"cannot record stopping: {exc}")
        foreground = self.tty_fd is not None and sig == signal.SIGINT
        if not foreground:  # a terminal's Ctrl-C already reached the whole group
            self._signal_group(sig)
        self._signal_descendants(sig, outside_group_only=True)
        self._signal_group(signal.SIGCONT)

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except OSError:
            pass

    def _descendants(self) -> dict[int, tuple[int, int, int]]:
        """Linux: every live descendant of ours and every member of our group."""
        table: dict[int, tuple[int, int, int]] = {}
        for name in os.listdir(b"/proc"):
            if name.isdigit():
                pid = _decimal(name)
                info = _proc_stat(pid)
                if info is not None:
                    table[pid] = info
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in table.items():
            children.setdefault(ppid, []).append(pid)
        found: dict[int, tuple[int, int, int]] = {}
        todo = list(children.get(self.pid, []))
        todo += [pid for pid, (_, pgid, _) in table.items() if pgid == self.pid]
        while todo:
            pid = todo.pop()
            if pid in found or pid == self.pid:
                continue
            found[pid] = table[pid]
            todo.extend(children.get(pid, []))
        return found

    def _signal_descendants(self, sig: int, outside_group_only: bool) -> int:
        if not _PLATFORM_LINUX:
            if not outside_group_only:
                for pid in self._group_members_fallback():
                    try:
                        os.kill(pid, sig)
                    except OSError:
                        pass
            return 0
        sent = 0
        for pid, (_, pgid, ticks) in self._descendants().items():
            if outside_group_only and pgid == self.pid:
                continue
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue
            try:
                if start_ticks(pid) == ticks:  # still the process we found
                    signal.pidfd_send_signal(fd, sig)
                    sent += 1
            except OSError:
                pass
            finally:
                os.close(fd)
        return sent

    def _group_members_fallback(self) -> list[int]:
        return [self.child] if self.child and self.child_status is None else []

    def kill_everything(self) -> None:
        self.kill_at = None
        if self._signal_descendants(signal.SIGKILL, outside_group_only=False):
            self.killed = True
        if not _PLATFORM_LINUX:
            self.killed = True

    def reap(self) -> bool:
        """Collect exited children; True once none is left (the job is entirely gone)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid == 0:
                return False
            if pid == self.child:
                self.child_status = status

    def undo_group(self) -> None:
        """Give back the group and the terminal before running the line unsupervised."""
        if self.tty_restore_pgrp is not None:
            self._set_foreground(self.tty_restore_pgrp)
        if self.original_pgrp != self.pid:
            try:
                os.setpgid(0, self.original_pgrp)
            except OSError:
                pass

    def loop(self, rfd: int, fifo: int, parent_fd: int | None) -> None:
        poller = select.poll()
        poller.register(rfd, select.POLLIN)
        poller.register(fifo, select.POLLIN)
        if parent_fd is not None:
            poller.register(parent_fd, select.POLLIN)
        if self.reap():
            return
        while True:
            timeout = None
            if self.kill_at is not None:
                timeout = max(0, int((self.kill_at - time.monotonic()) * 1000) + 1)
            events = poller.poll(timeout)
            for fd, _ in events:
                if fd == rfd:
                    for byte in os.read(rfd, 512):
                        if byte in (signal.SIGTERM, signal.SIGINT):
                            self.request_stop(byte)
                elif fd == fifo:
                    try:
                        data = os.read(fifo, 512)
                    except BlockingIOError:
                        data = b""
                    if b"stop" in data:
                        self.request_stop(signal.SIGTERM)
                elif fd == parent_fd:
                    poller.unregister(parent_fd)
                    if self.opts["mode"] == "task":
                        self.request_stop(signal.SIGTERM)
            if self.kill_at is not None and time.monotonic() >= self.kill_at:
                self.kill_everything()
            if self.reap():
                return
            if self.stop_signal is not None and self.kill_at is None:
                # Past the grace period: anything that shows up now is killed at once.
                self.kill_everything()

    def finish(self) -> int:
        status = self.child_status if self.child_status is not None else 0
        code = os.waitstatus_to_exitcode(status)
        if self.stop_signal is not None:
            state = "killed" if self.killed else "stopped"
        else:
            state = "exited"
        self.record.update(
            state=state,
            exit_code=code if code >= 0 else 128 - code,
            signal=-code if code < 0 else None,
            ended_at=time.time(),
        )
        try:
            write_record(self.ledger, self.record)
        except OSError as exc:
            _log(self.ledger, f"cannot record the end: {exc}")
        # Removing the stop channel needs no space: with it gone, readers know that the
        # supervisor saw the job end (a killed supervisor leaves it), even on a full disk.
        try:
            os.unlink(self.fifo_path)
        except OSError:
            pass
        if self.tty_restore_pgrp is not None:
            self._set_foreground(self.tty_restore_pgrp)
        return code


def _release_stdio() -> None:
    """Let go of the caller's stdin/stdout/stderr: the job keeps its own copies."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _run_unsupervised(line: str, why: str, ledger: str, inherited_hup: Any) -> int:
    _log(ledger, f"running unsupervised: {why}")
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGHUP, inherited_hup)
    shell, _ = user_shell()
    os.execve(shell, [shell, "-c", line], caller_environment())


def _exit_like(code: int) -> int:
    """Our exit status for the job's: a job killed by a signal kills us by the same one,
    so the caller sees what it would have seen without corral (except "core dumped": we
    dump no core of our own, which would only hide the job's)."""
    if code >= 0:
        return code
    sig = -code
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    except (ImportError, OSError, ValueError):
        if sig in _CORE_SIGNALS:
            return 128 + sig  # never dump a core of ours in place of the job's
    if sig != signal.SIGKILL:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
    os.kill(os.getpid(), sig)
    return 128 + sig  # a signal whose default is to do nothing (SIGCHLD, SIGWINCH, ...)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        opts = _parse(args)
    except _Usage as exc:
        sys.stderr.write(f"corral supervisor: {exc}\n{__doc__}")
        return 2
    if opts["job"] is None:
        # Readers verify a supervisor by the token in its command line: put it there.
        token = os.urandom(16).hex()
        argv = [sys.executable, "-I", "-S", _SCRIPT, "--job", token, *args]
        os.execve(sys.executable, argv, caller_environment())
    if opts["session"] is None:
        opts["session"] = os.environ.get("CORRAL_SESSION") or os.environ.get(
            "CLAUDE_CODE_SESSION_ID"
        )
    inherited_hup = signal.getsignal(signal.SIGHUP)
    sup = Supervisor(opts, inherited_hup)
    ready_fd: int | None = opts["ready_fd"]
    if ready_fd is not None:
        os.set_inheritable(ready_fd, False)  # the job must not hold the caller's wait open
    # Every signal we handle lands in the wakeup pipe from now on, so none is lost before
    # the event loop starts reading it.
    rfd, wfd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wfd, warn_on_full_buffer=False)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD, signal.SIGQUIT):
        signal.signal(sig, lambda *_: None)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        sup.lead_group()
        fifo = sup.open_ledger()
        sup.start_record()
    except OSError as exc:
        sup.undo_group()
        try:  # the stop channel of a job that has no record is litter
            os.unlink(sup.fifo_path)
        except OSError:
            pass
        if not opts["fallback"]:
            _log(sup.ledger, f"not started: cannot supervise: {exc}")
            if ready_fd is not None:
                os.write(ready_fd, f"fail {exc}\n".encode("utf-8", "replace"))
                os.close(ready_fd)
            return 1
        if ready_fd is not None:
            os.close(ready_fd)
        return _run_unsupervised(opts["line"], str(exc), sup.ledger, inherited_hup)
    sup.become_subreaper()
    parent_fd = sup.watch_parent() if opts["mode"] == "task" else None
    sup.spawn()
    if sup.parent_gone_early:
        sup.request_stop(signal.SIGTERM)
    if ready_fd is not None:
        try:
            os.write(ready_fd, f"ok {sup.token}\n".encode())
        finally:
            os.close(ready_fd)
    _release_stdio()
    sup.give_back_memory()
    sup.loop(rfd, fifo, parent_fd)
    return _exit_like(sup.finish())


def run_as_program() -> None:
    """Run the supervisor with sys.argv and exit with its status (the program's entry)."""
    try:
        status = main()
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - reported as Python would, with its status
        sys.excepthook(*sys.exc_info())
        status = 1
    sys.stderr.flush()
    os._exit(status)  # nothing is left to clean up: skip the interpreter's teardown


if __name__ == "__main__":
    # CPython frees a script's syntax tree (and a bytes object per source token) only once
    # the script's top level returns: for this file, over 2 MB that a supervisor would hold
    # for its whole life. So the top level returns at once, and the supervisor runs from
    # the exit handlers, without them (give_back_memory then returns the pages).
    import atexit

    atexit.register(run_as_program)
