"""Hypothesis: for any foreground line, the in-place rewrite leaves the line byte for byte
as it is, or changes only the spans of commands sent to the background. A backgrounded
list's span runs from its first byte through its `&`; within it, either the list's bytes
(less the redirections after a simple command) become one supervisor command line whose
last word is exactly those bytes, or every byte stays and text is inserted only at the
span's two ends (a function before the list, its removal right after the `&`), the
supervisor then running one command of the list: its words and assignments as the line
has them, only blanks and redirections left out between them."""

from __future__ import annotations

import re
import shlex

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.core.shell.plan import decide
from corral.lowlevel.locations import shim_path
from tests.core.shell.test_midline_table import through_function, through_hash

CWD = "/w/proj"
HOME = "/home/u"
PIECES = [
    "npm run dev", "vite", "vite --port 4000", "next dev -p 3001", "python3 -m http.server 8123",
    "yarn dev", "sleep 1", "echo hi", "curl -s localhost:5173", "wait", "wait $!", "cd web",
    "nohup vite", "setsid vite", "env X=1 vite", "X=1 vite", "vite > log 2>&1", "vite | tee l",
    "HOME=/x vite", "npm i && npm run dev", "(cd web && vite)", "{ vite; }", ">log vite",
    "vite >log --port 3", "'vite'", "./node_modules/.bin/vite", "vite 2>&1 |& tee l",
    "cd web && vite", "(vite &)", "{ vite & }", "( cd a && npm start )", "set -e", "true",
    "vite --port $P", "npm run dev -- *.js", "kill $!", "p=$!", "exit 3", "'it''s'", "'a b'",
    '"x $y"', "é", "日本", "#", "\\", "$(date)", "`date`", "for i in 1; do vite; done",
    "if true; then vite; fi", "vite <<< x", "cat <<EOF\nx\nEOF", "!", "{", "}", "(", ")",
]  # fmt: skip
SEPARATORS = [" & ", "&", " && ", " || ", "; ", "\n", " | ", " & wait; ", " &\n", " "]
composed = st.lists(
    st.tuples(st.sampled_from(PIECES), st.sampled_from(SEPARATORS)), min_size=1, max_size=6
).map(lambda parts: "".join(p + s for p, s in parts))
UNITS = [
    "npm run dev", "vite --port 4000", "next dev -p 3001", "python3 -m http.server 8123",
    "yarn dev:api", "cd web && npm start", "nohup uvicorn a:app", "setsid hugo server",
    "env X=1 flask run", "X='a b' tsc -w", "docker compose up > up.log 2>&1", "vite | tee 'l g'",
    "npm run dev -- --name 'it''s'", "sleep 1", "echo é", "vite --port $P", "(nodemon s.js)",
    "( cd api && go run . &)", "{ ng serve & }", "gunicorn w:app 2> 'e r'", "cat <<< x",
    "npm ci && npm run dev", "(cd web && vite)", "{ npm start; }", "( npm i && npm run dev )",
    "LD_PRELOAD=x vite", "PORT=1 >l vite 2>&1 --host h", "cat x | vite | tee l",
    "\"./node_modules/.bin/next\" dev", "http-server -p 8141", "vite && echo done",
    "{ vite; echo done; }", "npm i || npm ci && npm run dev", "npm run dev | npm run log",
]  # fmt: skip
backgrounded = st.tuples(
    st.sampled_from(["", "cd web; ", "set -e; ", "export A=1; ", "pushd x && ", "(", "{ "]),
    st.lists(st.sampled_from(UNITS), min_size=1, max_size=4, unique=True),
    st.sampled_from([" & ", "& ", " &\n", " &  "]),
    st.sampled_from(["sleep 1", "wait", "curl -s x", "echo $!", "wait $!; echo $?", ""]),
).map(lambda t: t[0] + t[2].join(t[1]) + t[2] + t[3] + {"(": ")", "{ ": "; }"}.get(t[0], ""))
lines = st.one_of(
    composed, backgrounded, backgrounded, st.text(max_size=60), composed.map(lambda t: t + " &")
)

# What may stand between a backgrounded command's span and its `&`: redirections kept
# outside the supervisor's text, and blanks.
_REDIRECT = r"""\s*(?:\d*(?:>>|>\||>&|<&|<>|>|<)|&>>?)\s*(?:'[^']*'|"[^"]*"|[^\s;&|()<>'"]+)"""
_TO_AMP = re.compile(rf"(?:{_REDIRECT})*\s*&(?![&>])")
# An assignment before a command word.
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _between_words(span: str, text: str) -> bool:
    """`text`'s words stand in `span` in order, only blanks and redirections between them."""
    at = 0
    for word in _WORD.findall(text):
        found = span.find(word, at)
        if found < 0 or not _GAP.fullmatch(span[at:found]):
            return False
        at = found + len(word)
    return bool(_GAP.fullmatch(span[at:]))


_WORD = re.compile(r"""(?:'[^']*'|"[^"]*"|[^\s'"])+""")
_GAP = re.compile(rf"(?:{_REDIRECT}|\s)*")


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(lines)
def test_only_backgrounded_spans_change(line: str) -> None:
    d = decide(line, background=False, cwd=CWD, home=HOME, wrapper=("S",), token="0" * 32)
    if d.action != "wrap":
        assert d.rewritten is None  # the line runs byte for byte as written
        return
    assert d.rewritten is not None
    if d.mode != "in-place":
        return  # a whole-line wrap: pinned by test_properties.py
    source = line.encode("utf-8")
    rebuilt = d.rewritten.encode("utf-8")
    back: list[bytes] = []
    at = 0  # in the original
    out = 0  # in the rewrite
    for wrap in sorted(d.in_place, key=lambda w: w.start if w.head is None else w.opens):
        opens = wrap.start if wrap.head is None else wrap.opens
        if wrap.head is not None and opens < at:  # another command of a list already kept
            assert wrap.form == "hash" and not wrap.before and not wrap.after
            assert opens <= wrap.start < wrap.end <= wrap.amp < at
            continue
        assert opens >= at
        kept = source[at:opens]
        assert rebuilt[out : out + len(kept)] == kept  # bytes before the span: unchanged
        out += len(kept)
        span = source[wrap.start : wrap.end].decode("utf-8")
        argv = shlex.split(wrap.text)
        assert argv[0] == "S" and argv[-2] == "--"
        assert "--async" in argv and "--detached" in argv
        if wrap.head is None:  # the span becomes the supervisor's command line
            assert argv[-1] == span
            assert _TO_AMP.match(source[wrap.end :].decode("utf-8")), (line, span)
            text = wrap.text.encode("utf-8")
            assert rebuilt[out : out + len(text)] == text
            out += len(text)
            back.append(kept + source[wrap.start : wrap.end])
            at = wrap.end
            continue
        # the list keeps its bytes, `&` included: text goes in front of it and behind its
        # `&`, nowhere else; the supervisor runs one of its commands, as the line has it
        assert opens <= wrap.start < wrap.end <= wrap.amp
        assert _between_words(span, argv[-1]), (line, span, argv[-1])
        words = shlex.split(argv[-1])
        at_name = next(at for at, w in enumerate(words) if not _ASSIGNMENT.match(w))
        assert words[at_name] == wrap.head
        if wrap.guard is not None:  # the arguments the function checks: the command's own
            assert [shlex.split(w) for w in wrap.guard] == [[w] for w in words[at_name + 1 :]]
        if wrap.shim:
            assert wrap.shim == shim_path(wrap.token, wrap.head)
        if wrap.form == "hash":  # every runner of the list found through the shell's table
            group = [w for w in d.in_place if w.head is not None and w.opens == wrap.opens]
            pairs = [(w.head or "", w.shim) for w in group]
            named = re.search(r"&& ! \{ (.*?); \} >/dev/null 2>&1 &&", wrap.before)
            assert named is not None, wrap.before
            words = [shlex.split(w.removeprefix("typeset -f "))[0]
                     for w in named.group(1).split(" || ")]  # fmt: skip
            assert words[: len(pairs)] == [n for n, _ in pairs]
            assert (wrap.before, wrap.after) == through_hash(pairs, words[len(pairs) :])
            forms = [(wrap.before, wrap.after)]
        first: tuple[str, ...] = ()
        if wrap.shim and wrap.form != "hash":  # bash may find corral's program for the name
            assert wrap.shim == shim_path(wrap.token, wrap.head)
            assert wrap.values is not None and len(wrap.values) == len(words) - at_name - 1
            checked = re.search(r"&& ! \{ (.*?); \} >/dev/null 2>&1; then", wrap.before)
            if checked:
                first = tuple(shlex.split(w.removeprefix("typeset -f "))[0]
                              for w in checked.group(1).split(" || "))  # fmt: skip
        if wrap.form != "hash":
            forms = [
                through_function(wrap.head, wrap.text, n, form, wrap.guard, wrap.shim, first)
                for n in range(8)
                for form in ("async", "exec", "child")
            ]
        assert (wrap.before, wrap.after) in forms, line
        before, after = wrap.before.encode("utf-8"), wrap.after.encode("utf-8")
        behind = wrap.amp + 1
        assert source[wrap.amp : behind] == b"&"
        assert rebuilt[out : out + len(before)] == before
        out += len(before)
        whole = source[opens:behind]
        assert rebuilt[out : out + len(whole)] == whole
        out += len(whole)
        assert rebuilt[out : out + len(after)] == after
        out += len(after)
        back.append(kept + whole)
        at = behind
    assert rebuilt[out:] == source[at:]  # bytes after the last span: unchanged
    assert b"".join(back) + source[at:] == source


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(lines)
def test_a_background_call_never_rewrites_in_place(line: str) -> None:
    d = decide(line, background=True, cwd=CWD, home=HOME, wrapper=("S",), token="0" * 32)
    assert d.mode != "in-place" and not d.in_place
