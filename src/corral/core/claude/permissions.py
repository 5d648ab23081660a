"""Permission parity: what Claude Code's own Bash rules would do with the ORIGINAL line.

    verdict("cd web && npm run dev", rules, "default", rewritten="corral-run ...")

Claude Code matches its rules against the command it finally runs, so a rewrite would slip
past a deny or ask rule written for the original line. The hook asks this module first:

- DENY: a deny rule matches a subcommand (or an ask rule, in dontAsk mode): leave the line
  untouched and let Claude deny it as usual.
- ASK: an ask rule matches a subcommand: rewrite with permissionDecision "ask".
- ALLOW: corral is certain Claude would run the original without a prompt: rewrite with
  permissionDecision "allow".
- NONE: no rule applies, and none can match the rewrite either: rewrite with no decision.
- UNSURE: corral cannot be certain (unreadable line or settings, unknown rule syntax or
  mode, a rule that might match): leave the line untouched.

Subshells, { …; } groups and a leading `setsid` are read with the mid-line reader: their
simple commands are matched as any line's, so deny and ask rules are followed exactly as
elsewhere; an allow rule other than `Bash`/`Bash(*)` never allows such a line (how Claude
reads those constructs for allowing was not checked), which then asks as it would have.

Two matchers: a precise one (a subset of Claude's matching: only forms checked against the
real CLI) decides DENY, ASK and ALLOW; a broad one (a superset: every literal piece of the
rule appears in the line at a word boundary) turns a possible deny or ask into UNSURE.
Pure: the caller reads the settings and says which folders `cd` may enter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from enum import StrEnum
from functools import cache

from corral.core.shell.parse import Command, Pipeline, Script, Statement, Unreadable, read
from corral.lowlevel.named import NamedTuple


class Verdict(StrEnum):
    DENY = "deny"
    ASK = "ask"
    ALLOW = "allow"
    NONE = "none"
    UNSURE = "unsure"


class Kind(StrEnum):
    ALL = "all"  # `Bash`, `Bash(*)`
    EXACT = "exact"  # `Bash(npm run dev)`
    PREFIX = "prefix"  # `Bash(npm run dev:*)`
    WILDCARD = "wildcard"  # `Bash(npm run dev *)`, `Bash(git * main)`
    UNKNOWN = "unknown"  # looks like a Bash rule, but corral cannot tell how Claude reads it


class Token(NamedTuple):
    text: str  # ASCII-lowercased, quotes and backslashes removed
    open_left: bool  # a `*` touches it on the left in the rule: no word boundary needed
    open_right: bool


class Rule(NamedTuple):
    written: str
    kind: Kind
    body: str  # the pattern for EXACT / PREFIX / WILDCARD, whitespace runs collapsed
    tokens: tuple[Token, ...]  # literal pieces, for the broad matcher


class Rules(NamedTuple):
    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    unsure: str | None = None  # why the settings could not be read with certainty


# permission_mode values of the hook input (2.1.332); others are unknown, hence UNSURE.
MODES = frozenset({"default", "acceptEdits", "bypassPermissions", "dontAsk", "plan", "auto"})
# In these modes a line no rule decides goes to a classifier or is refused: only rule
# verdicts are certain there.
_RULES_ONLY_MODES = frozenset({"plan", "auto", "dontAsk"})
# Commands whose path arguments Claude checks even when a specific allow rule matches
# (its table in 2.1.332), plus wrappers and shells it reads specially.
_PATH_CHECKED = frozenset(
    (
        "cd", "ls", "find", "mkdir", "touch", "rm", "rmdir", "mv", "cp", "cat", "head", "tail",
        "sort", "uniq", "wc", "cut", "paste", "column", "tr", "file", "stat", "diff", "awk",
        "gawk", "mawk", "nawk", "strings", "hexdump", "od", "base64", "nl", "tac", "man", "rev",
        "fold", "expand", "unexpand", "fmt", "comm", "cmp", "pr", "numfmt", "tsort", "grep",
        "egrep", "fgrep", "rg", "sed", "git", "jq", "sha256sum", "sha1sum", "md5sum", "tee",
        "ln", "chmod", "chown", "chgrp", "dd", "truncate", "install", "rsync", "shred", "unlink",
        "xargs", "sudo", "doas", "env", "timeout", "nice", "stdbuf", "command", "builtin",
        "noglob", "exec", "eval", "source", ".", "sh", "bash", "zsh", "dash", "ksh", "fish",
    )
)  # fmt: skip
# Writes under these folders are asked for even with `Bash` allowed.
_PROTECTED = (".git", ".claude", ".vscode", ".idea")
_STRIPPED_WRAPPERS = frozenset({"nohup", "time"})  # checked: an allow rule sees through them
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


# Compiled on first use: most serve rules or redirects a line may not have, and the hook
# imports this module afresh for every line it wraps.
@cache
def _harmless_redirect() -> re.Pattern[str]:
    return re.compile(r"(?:>>?|<)[ \t]*/dev/null(?![^\s;&|])|>&[012](?![^\s;&|])")


@cache
def _word_char() -> re.Pattern[str]:
    return re.compile(r"[a-z0-9_]")


@cache
def _spaces() -> re.Pattern[str]:
    return re.compile(r"[ \t]+")


@cache
def _rule() -> re.Pattern[str]:
    return re.compile(r"Bash\((.*)\)", re.DOTALL)


@cache
def _looks_bash() -> re.Pattern[str]:
    return re.compile(r"\s*bash\b", re.IGNORECASE)


def parse_rule(written: str) -> Rule | None:
    """A Bash rule as Claude Code would read it; None for rules of other tools."""
    if written == "Bash":
        return Rule(written, Kind.ALL, "", ())
    match = _rule().fullmatch(written)
    if match is None:
        if _looks_bash().match(written):  # `bash(x)`, `Bash (x)`: ignored by 2.1.332, but
            inner = written.strip()[4:].strip()  # corral keeps their words, to be safe
            inner = inner[1:] if inner.startswith("(") else inner
            inner = inner[:-1] if inner.endswith(")") else inner
            return Rule(written, Kind.UNKNOWN, "", _tokens(inner))
        return None
    content = match.group(1)
    if content == "*":
        return Rule(written, Kind.ALL, "", ())
    plain = content == content.strip() and "\\" not in content and content.strip(" *:") != ""
    if content.endswith(":*"):
        prefix = content[:-2]
        kind = Kind.PREFIX if plain and "*" not in prefix else Kind.UNKNOWN
        return Rule(written, kind, _spaces().sub(" ", prefix), _tokens(prefix))
    if "*" in content:
        kind = Kind.WILDCARD if plain and "**" not in content else Kind.UNKNOWN
        return Rule(written, kind, _spaces().sub(" ", content), _tokens(content))
    return Rule(written, Kind.EXACT if plain else Kind.UNKNOWN, content, _tokens(content))


def parse_rules(allow: Iterable[str], ask: Iterable[str], deny: Iterable[str]) -> Rules:
    """The Bash rules among the settings' `permissions.allow/ask/deny` entries."""

    def bash(entries: Iterable[str]) -> tuple[Rule, ...]:
        return tuple(rule for rule in map(parse_rule, entries) if rule is not None)

    return Rules(bash(allow), bash(ask), bash(deny))


def verdict(
    line: str,
    rules: Rules,
    permission_mode: str | None,
    *,
    rewritten: str,
    cd_inside: Callable[[str], bool] | None = None,
) -> Verdict:
    """What Claude Code's rules would do with `line`, and so how the hook may rewrite it.

    `rewritten` is the command the hook would send instead (an allow rule that matches it
    but not the line makes the rewrite more permissive: UNSURE). `cd_inside(target)` says
    whether `cd target`, the line's first subcommand, stays inside the session's working
    folders (Claude runs such a `cd` without a rule); without it, `cd` needs a rule.
    """
    try:
        return _verdict(line, rules, permission_mode, rewritten, cd_inside)
    # A total function: whatever was not foreseen (a grammar error, a bad rule) means
    # "do not rewrite", which is always safe.
    except Exception:  # noqa: BLE001
        return Verdict.UNSURE


class _Sub(NamedTuple):
    command: Command
    text: str  # the words as Claude matches them: quotes removed, single spaces
    plain: bool  # every word literal and unquoted, written with single spaces
    name: str  # the command's basename ("" for bare assignments)


def _verdict(
    line: str,
    rules: Rules,
    mode: str | None,
    rewritten: str,
    cd_inside: Callable[[str], bool] | None,
) -> Verdict:
    if rules.unsure is not None or mode not in MODES:
        return Verdict.UNSURE
    script: Script | Unreadable | None = read(line)
    grouped = isinstance(script, Unreadable)
    if grouped:
        script = _grouped(line)
    if not isinstance(script, Script):
        return Verdict.UNSURE
    source = line.encode("utf-8")
    subs = [_sub(c, source) for s in script.statements for p in s.pipelines for c in p.commands]
    if not subs:
        return Verdict.UNSURE
    folded = _fold(line)
    if any(_precise(rule, sub, strict=False) for rule in rules.deny for sub in subs):
        return Verdict.DENY
    asked = any(_precise(rule, sub, strict=True) for rule in rules.ask for sub in subs)
    if any(_possible(rule, folded) for rule in rules.deny):
        # Claude denies it or asks about it; dontAsk turns the ask into a deny too.
        return Verdict.DENY if asked and mode == "dontAsk" else Verdict.UNSURE
    if asked:
        return Verdict.DENY if mode == "dontAsk" else Verdict.ASK
    if any(_possible(rule, folded) for rule in rules.ask):
        return Verdict.UNSURE
    allow = tuple(r for r in rules.allow if r.kind is Kind.ALL) if grouped else rules.allow
    if _all_allowed(script, subs, source, allow, cd_inside):
        # In plan mode an allow rule runs the line, but a hook's "allow" does not (checked):
        # the rewrite would go to the classifier instead.
        return Verdict.UNSURE if mode == "plan" else Verdict.ALLOW
    if mode in _RULES_ONLY_MODES:
        return Verdict.UNSURE
    if mode != "bypassPermissions" and any(_may_allow(r, rewritten) for r in rules.allow):
        return Verdict.UNSURE
    return Verdict.NONE


def _grouped(line: str) -> Script | None:
    """The line's simple commands when it holds subshells, groups or `setsid` (the mid-line
    reader's subset), one statement each; None when it cannot be read with certainty."""
    from corral.core.shell.midline import read_background

    found = read_background(line, "/", "/")  # folders do not matter to rules
    if isinstance(found, Unreadable):
        return None
    statements = tuple(
        Statement((Pipeline((p.command,)),), p.background, None) for p in found.placed
    )
    return Script(statements, len(line.encode("utf-8")))


def _sub(command: Command, source: bytes) -> _Sub:
    words = [w.value for w in command.words]
    while len(words) > 1 and words[0] in _STRIPPED_WRAPPERS:
        words = words[2:] if words[1] == "--" else words[1:]
    if not command.words:  # `X=1`, `export X=1`: Claude matches the text as written
        raw = source[command.start : command.end].decode("utf-8")
        return _Sub(command, raw, _spaces().sub(" ", raw) == raw and "'" not in raw, "")
    first, last = command.words[0], command.words[-1]
    raw = source[first.start : last.end].decode("utf-8")
    text = " ".join(words)
    plain = all(w.literal and not w.quote for w in command.words)
    plain = plain and raw == " ".join(w.value for w in command.words)
    return _Sub(command, text, plain, words[0].rsplit("/", 1)[-1] if words else "")


def _precise(rule: Rule, sub: _Sub, *, strict: bool) -> bool:
    """Whether Claude certainly matches `rule` against this subcommand (checked forms only).

    A deny rule sees through assignments and quotes (checked); `strict` (ask, allow) needs
    a plain subcommand with no assignments and a single trailing `*` at most."""
    if rule.kind is Kind.ALL:
        return True
    if rule.kind is Kind.UNKNOWN or not (sub.plain or not strict):
        return False
    if strict and sub.command.assignments:
        return False
    text = sub.text
    if rule.kind is Kind.EXACT:  # only the line as written: no wrapper seen through
        written = " ".join(w.value for w in sub.command.words) if sub.command.words else text
        return sub.plain and not sub.command.assignments and written == rule.body
    if rule.kind is Kind.PREFIX:
        return text == rule.body or text.startswith(rule.body + " ")
    stars = rule.body.count("*")
    if strict and (stars != 1 or not rule.body.endswith("*")):
        return False
    pieces = rule.body.split("*")
    pattern = ".*".join(re.escape(piece) for piece in pieces)
    if stars == 1 and rule.body.endswith(" *") and text == rule.body[:-2]:
        return True  # `npm run dev *` also matches `npm run dev` (checked)
    return re.fullmatch(pattern, text, re.DOTALL) is not None


def _all_allowed(
    script: Script,
    subs: Sequence[_Sub],
    source: bytes,
    allow: Sequence[Rule],
    cd_inside: Callable[[str], bool] | None,
) -> bool:
    """Whether Claude would run every subcommand without a prompt (checked forms only)."""
    if any(p in source.decode("utf-8") for p in _PROTECTED):
        return False
    if any(rule.kind is Kind.ALL for rule in allow):
        return True  # `Bash` / `Bash(*)` let `&`, redirects and variables through (checked)
    if any(s.background for s in script.statements) or not _harmless_redirects(script, source):
        return False
    cds = sum(sub.name == "cd" for sub in subs)
    for index, sub in enumerate(subs):
        if sub.name == "cd":  # Claude runs `cd` into its working folders without a rule
            target = _cd_target(sub)
            inside = index == 0 and cds == 1 and target is not None and cd_inside is not None
            if inside and cd_inside is not None and target is not None and cd_inside(target):
                continue
            return False
        if not sub.plain or sub.command.assignments or sub.name in _PATH_CHECKED:
            return False
        if not any(_precise(rule, sub, strict=True) for rule in allow):
            return False
    return True


def _cd_target(sub: _Sub) -> str | None:
    words = sub.command.words
    if sub.name != "cd" or len(words) != 2 or not sub.plain or sub.command.assignments:
        return None
    target = words[1].value
    if target.startswith(("-", "~")) or any(c in target for c in "*?[$"):
        return None
    return target


def _harmless_redirects(script: Script, source: bytes) -> bool:
    """Only `> /dev/null`, `< /dev/null` and `2>&1`-style redirects (checked: no prompt)."""
    spans = [
        (w.start, w.end)
        for s in script.statements
        for p in s.pipelines
        for c in p.commands
        for w in (*c.words, *(v for _, v in c.assignments if v is not None))
    ]
    text = source.decode("latin-1")  # one character per byte: offsets stay aligned
    at = 0
    while at < len(text):
        if text[at] in "<>" and not any(a <= at < b for a, b in spans):
            match = _harmless_redirect().match(text, at)
            if match is None:
                return False
            at = match.end()
            continue
        at += 1
    return True


def _fold(text: str) -> str:
    """The text the broad matcher searches: no quotes or backslashes, ASCII lowercase."""
    return text.translate(_ASCII_LOWER).replace("'", "").replace('"', "").replace("\\", "")


def _tokens(pattern: str) -> tuple[Token, ...]:
    if pattern.endswith(":*"):
        pattern = pattern[:-2]
    tokens: list[Token] = []
    pieces = _fold(pattern).split("*")
    for index, piece in enumerate(pieces):
        words = piece.split()
        for at, word in enumerate(words):
            open_left = at == 0 and index > 0 and not piece[:1].isspace()
            open_right = at == len(words) - 1 and index < len(pieces) - 1
            open_right = open_right and not piece[-1:].isspace()
            tokens.append(Token(word, open_left, open_right))
    return tuple(tokens)


def _possible(rule: Rule, folded: str) -> bool:
    """Whether Claude could match `rule` anywhere in the line: every literal piece of the
    rule appears at a word boundary (a superset of Claude's forms: stripped assignments,
    wrappers and paths, quotes, `bash -c '…'`, any order)."""
    return rule.kind is Kind.ALL or all(_occurs(token, folded) for token in rule.tokens)


def _occurs(token: Token, folded: str) -> bool:
    at = folded.find(token.text)
    while at != -1:
        end = at + len(token.text)
        left_ok = token.open_left or at == 0 or not _word_char().match(folded[at - 1])
        right_ok = token.open_right or end == len(folded) or not _word_char().match(folded[end])
        if left_ok and right_ok:
            return True
        at = folded.find(token.text, at + 1)
    return False


def _may_allow(rule: Rule, rewritten: str) -> bool:
    """Whether an allow rule could match the rewrite (its literal head starts it)."""
    if rule.kind in (Kind.ALL, Kind.UNKNOWN):
        return True
    head = rule.body.split("*", 1)[0].translate(_ASCII_LOWER)
    text = _spaces().sub(" ", _fold(rewritten).strip())
    first, _, rest = text.partition(" ")
    forms = (text, f"{first.rsplit('/', 1)[-1]} {rest}".strip())
    return any(form.startswith(head.strip()) or head.startswith(form) for form in forms)
