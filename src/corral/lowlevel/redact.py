"""How corral shows and stores a command line: environment assignments removed, secret-looking
values hidden (`display_command`), and the digest the duplicate check keeps (`command_digest`).

Standard library only, and cheap: the supervisor runs this for every job it starts, so `re` is
imported only when a line needs it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

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
    "zip -p",
    "7z -p",
    "htpasswd -",
    "lftp -u",
    "% -u|--user",
    "az login -p",
    "ldap -w",
    "sqlcmd|bcp|osql|isql -p",
    "mongo -p",
    "openssl -k",
    "ssh-keygen -n|-p",
    "ssh-keygen -n|-p",  # twice: `-P OLD -N NEW` (each pass hides the first value left)
    "mysqladmin password",
    "redis-cli auth",
    "\"|' : S",  # "password": "value" in JSON or a dictionary
    "password|identified '|\"|$$",  # SQL's PASSWORD '…', IDENTIFIED BY '…', SET PASSWORD = '…'
    "machine|login|account password",  # .netrc: machine h login u password p
    "chpasswd :",
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
            (r"(?:zip|unzip|zipcloak|funzip)", r"\s-P\s*", _VALUE),
            (r"7z[ar]?", r"\s-p", _VALUE),  # glued: -pSECRET
            (  # -b[other letters] FILE USER PASSWORD, or -nb USER PASSWORD (no file)
                r"htpasswd",
                r"\s-(?=[a-zA-Z]*b)(?:(?=[a-zA-Z]*n)[a-zA-Z]+|[a-zA-Z]+\s+\S+)\s+\S+\s+",
                _VALUE,
            ),
            (r"lftp", r"\s-u\s*", _VALUE),  # -u USER,PASSWORD: the whole word
            (
                r"(?:smbclient|rpcclient|smbmap|smbcacls|smbget|net)",
                r"""\s(?:-U|--user)(?:\s+|=)['"]?[^\s%'"]*%""",
                r"""[^\s'"]+""",
            ),
            (r"az\s+login", r"\s-p\s*", _VALUE),
            (r"ldap[\w-]*", r"\s-w\s*", _VALUE),
            (r"(?:sqlcmd|bcp|osql|isql)", r"\s-P\s*", _VALUE),
            (r"mongo[\w-]*", r"\s-p\s+", _VALUE),
            (r"openssl", r"\s-k\s+", _VALUE),
            (r"ssh-keygen", r"\s-[NP]\s*(?!\*\*\*)", _VALUE),
            (r"ssh-keygen", r"\s-[NP]\s*(?!\*\*\*)", _VALUE),
            (r"mysqladmin", r"\spassword\s+", _VALUE),
            (r"redis-cli", r"\s(?i:auth)\s+", _VALUE),
        ]
        quoted_name = (
            r"(?![\w-]*?" + _NOT_SECRET_WORDS + r")(?=[\w-]*?" + _SECRET_WORD + r")[\w-]++"
        )
        gap = r"(?:\s|\\[nt])+"  # white space, or \n and \t written in a printf or echo
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
            # "password": "value" (JSON, a dictionary; quotes escaped inside a shell string)
            (
                r"""(?i)((\\?["'])""" + quoted_name + r"""\2\s*:\s*(\\?["']))(?:(?!\3)[^\n])*""",
                r"\1***",
            ),
            # A quoted value after the word password (SQL's WITH [ENCRYPTED] PASSWORD '…',
            # mysqladmin password '…'), IDENTIFIED [WITH plugin] BY '…', SET PASSWORD = '…'
            (
                r"""(?i)((?:(?<![\w'"-])password(?!\\?["']\s*:)|\bidentified(?:\s+with\s+\S+)?"""
                r"\s+by(?:\s+password)?|\bset\s+password(?:\s+for\s+\S+)?\s*=)\s*\(?\s*)"
                r"""(?:'[^'\n]*'?|"[^"\n]*"?|\$\$[^$\n]*(?:\$\$)?)""",
                r"\1***",
            ),
            # .netrc: machine HOST [login USER] [account A] password PASSWORD
            (
                r"(?i)(\b(?:machine|login|account)"
                + gap
                + r"""[^\s\\'"]+"""
                + gap
                + r"(?:(?:login|account)"
                + gap
                + r"""[^\s\\'"]+"""
                + gap
                + r")*password"
                + gap
                + r""")[^\s\\'"]+""",
                r"\1***",
            ),
            # chpasswd <<< 'user:password' and echo 'user:password' | chpasswd
            (
                r"""(\bchpasswd\s*<<<\s*['"]?[^\s:'"]+:)[^\s'"]+"""
                r"""|(\becho\s+(?:-\w+\s+)*['"]?[^\s:'"]+:)[^\s'"]+(?=['"]?\s*\|\s*(?:sudo\s+)?chpasswd)""",
                r"\1\2***",
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
