"""Hypothesis: for any foreground line, the in-place rewrite leaves the line byte for byte
as it is, or changes only the spans of commands sent to the background. A backgrounded
command's span runs from its first byte through its `&`; within it, either the command's
bytes (less the redirections after a simple command) become one supervisor command line
whose last word is exactly those bytes, or every byte stays and text is inserted only at
the span's two ends (a function before the list, its removal right after the `&`), the
supervisor then running the list's last command (after `cd DIR &&` steps at most)."""

from __future__ import annotations

import re
import shlex

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.core.shell.plan import decide
from tests.core.shell.test_midline_table import through_function

CWD = "/w/proj"
HOME = "/home/u"
PIECES = [
    "npm run dev", "vite", "vite --port 4000", "next dev -p 3001", "python3 -m http.server 8123",
    "yarn dev", "sleep 1", "echo hi", "curl -s localhost:5173", "wait", "wait $!", "cd web",
    "nohup vite", "setsid vite", "env X=1 vite", "X=1 vite", "vite > log 2>&1", "vite | tee l",
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
# What may come before the command a function leads to the supervisor: `cd DIR && ` steps.
_CDS = re.compile(r"(?:(?:cd|pushd)(?:\s+[^\s;&|()<>]+)*\s*&&\s*)*")


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
        assert opens >= at
        kept = source[at:opens]
        assert rebuilt[out : out + len(kept)] == kept  # bytes before the span: unchanged
        out += len(kept)
        span = source[wrap.start : wrap.end].decode("utf-8")
        argv = shlex.split(wrap.text)
        assert argv[0] == "S" and argv[-2] == "--" and argv[-1] == span
        assert "--async" in argv and "--detached" in argv
        assert _TO_AMP.match(line.encode("utf-8")[wrap.end :].decode("utf-8")), (line, span)
        if wrap.head is None:  # the span becomes the supervisor's command line
            text = wrap.text.encode("utf-8")
            assert rebuilt[out : out + len(text)] == text
            out += len(text)
            back.append(kept + source[wrap.start : wrap.end])
            at = wrap.end
            continue
        # the list keeps its bytes, `&` included: text goes in front of it and behind its
        # `&`, nowhere else; the command the function leads to ends the list (after
        # `cd DIR &&` at most)
        assert opens <= wrap.start < wrap.end <= wrap.amp
        assert _CDS.fullmatch(source[opens : wrap.start].decode("utf-8")), line
        assert span.split()[0] == wrap.head
        before, after = (s.encode("utf-8") for s in through_function(wrap.head, wrap.text))
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
