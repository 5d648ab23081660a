"""Table: commands sent to the background mid-line, and exactly how each line is rewritten.

In a case's line, `{{…}}` or `[[…]]` marks the span a supervisor runs (the markers are not
part of the line), whose command line is `S --job T --detached --identity ID [--port N]
[--meta job_cwd=DIR] --async -- 'TEXT'` (TEXT: the span, less the redirections marked
`«…»` inside it; ID: the identity the whole-line reader gives the same runner). The
expected rewrite is built here, independently of the code:

- `{{…}}`, a command a function named after its command word can lead to the supervisor in
  the process the shell forks for it (`^` marks where the backgrounded list starts when
  something comes before the command): every byte stays; `typeset -f W … || { function W {
  … exec <command line>; }; … }; ` goes right before the list and its removal right after
  its `&` (W: the command word, quotes removed), so the job notice bash prints names the
  command as written. Such a command is the list's last one, after any commands joined by
  `&&` or `||` (`npm i && vite`), last in a ( … ) or { …; } group or not, or one command
  of the list's last pipeline (`vite | tee log`); assignments (`PORT=3000 npm run dev`),
  redirections anywhere among its words, a quoted word or a path are all kept. Where the
  list runs anything else, the function checks its arguments: any other call of that name
  (`npm i && npm run dev`, or one a user's function makes, `nvm use` running `npm
  --version`) runs as it is (`command npm "$@"`); a name that is no identifier
  (`./bin/vite`, `python3.11`) is defined only outside bash's POSIX mode, which refuses it;
- `<<…>>`, where no function can (something runs after the runner in its process:
  `vite && echo done`, `{ vite; echo done; }`; several long runners in one list: `vite |
  next dev`): every byte stays, and bash or zsh find a program of corral's for each
  runner's word in their table of hashed commands (`hash -p P NAME`, `hash NAME=P`) set
  just before the list and put back right after its `&`, when the line runs in one of
  them, each name on PATH and none of the list's words a function (else it runs as
  written). The runners are simple commands named by a word with no `/`, no builtin, no
  other command of the list sharing it; nothing in the list names PATH or sets variables
  (`export`, `read`, …);
- `[[…]]`, a single command no function can stand for: the span's bytes become the
  command line. Which and why: an assignment to a variable that changes the supervisor or
  its shell rather than the job (heads.SUPERVISOR_VARIABLES: `HOME=/x vite`,
  `CORRAL_HOME=…`, `LD_PRELOAD=…`), a reserved word (`time vite`). A list or pipeline
  that neither can lead (several long runners of one name, an `export` of such a variable
  earlier in it, an earlier command of the runner's name that may not run first) stays
  as written: a new shell would run it otherwise (signal dispositions; zsh runs the
  commands before the last in the foreground).
- a ( … ) or { …; } group with no such command stays as written: only a function or the
  shell's table can lead part of a group to the supervisor.

Lines without markers stay byte for byte untouched: `note` names why a long runner stays
as written, `reason` why the line cannot be read at all.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

import pytest

from corral.core.shell.plan import Decision, LiveJob, decide, quote_for_wrapper
from corral.lowlevel import locations

CWD = "/w/proj"
HOME = "/home/u"
TOKEN = "cd" * 16
WRAPPER = ("S",)
_MARK = re.compile(r"\[\[(.*?)\]\]|\{\{(.*?)\}\}|<<(.*?)>>", re.DOTALL)
# What stands between a span and its `&`: redirections, pipes (not `&&`, `&>`, `>&`, `|&`).
_TO_AMP = re.compile(r".*?(?<![<>&|])&(?![&>])", re.DOTALL)


def through_function(  # noqa: PLR0917
    head: str,
    text: str,
    earlier: int = 0,
    form: str = "async",
    guard: tuple[str, ...] | None = None,
    shim: str = "",
    first: tuple[str, ...] = (),
) -> tuple[str, str]:
    """What goes right before a `{{…}}` list and right after its `&`."""
    ignore = "case $- in *m*) ;; *) trap '' INT QUIT;; esac;"
    body = f"{ignore} exec {text};"
    if form == "exec":  # bash runs it with its own dispositions: `exec` restores them
        body = f'[ -n "${{BASH_VERSION-}}" ] || {{ {ignore} }}; exec {text};'
    elif form == "child":  # bash forks it from the list's process and waits for it
        body = f'if [ -n "${{BASH_VERSION-}}" ]; then {text}; return; fi; {body}'
    unset = "__corral_fn"
    if earlier:
        count = "${__corral_n-0}"
        body = (
            f'if [ "{count}" -lt {earlier} ]; then __corral_n=$(({count} + 1)); '
            f'command {head} "$@"; return; fi; ' + body
        )
        unset = "__corral_fn __corral_n"
    if guard is not None:  # other arguments: a call the list makes otherwise (`nvm use`)
        checks = [f'[ "$#" -ne {len(guard)} ]']
        checks += [f'[ "${{{at}}}" != {word} ]' for at, word in enumerate(guard, 1)]
        body = f'if {" || ".join(checks)}; then command {head} "$@"; return; fi; ' + body
    function = f"function {head} {{ {body} }}; __corral_fn=1"
    forget = f"unset -f {head}; unset {unset};"
    if shim:  # bash runs corral's program for the name, found in its hash table
        hashed = (
            f'[ -n "${{BASH_VERSION-}}" ] && [ "${{BASH_VERSINFO-0}}" -ge 4 ] && '
            f"[ -x {quote_for_wrapper(shim)} ] && "
            f"case $- in *h*) ;; *) false;; esac && type -P {head} >/dev/null 2>&1"
        )
        if first:  # none of the commands run before it may be a function (nvm's)
            functions = " || ".join(f"typeset -f {w}" for w in first)
            hashed += f" && ! {{ {functions}; }} >/dev/null 2>&1"
        function = (
            f"if {hashed}; then __corral_h=${{BASH_CMDS[{head}]-}}; typeset +x __corral_h; "
            f"hash -p {quote_for_wrapper(shim)} {head}; __corral_fn=h; else {function}; fi"
        )
        forget = (
            f'if [ "$__corral_fn" = h ]; then if [ -n "$__corral_h" ]; then hash -p '
            f'"$__corral_h" {head}; else hash -d {head}; fi; unset __corral_h __corral_fn; '
            f"else {forget} fi;"
        )
    flag = "typeset +x __corral_fn"  # never exported, `set -a` or not
    define = f"typeset -f {head} >/dev/null 2>&1 || {{ {function}; {flag}; }}"
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", head):
        define = f"case :${{SHELLOPTS-}}: in *:posix:*) ;; *) {define};; esac"
    saved = "__corral_us=$_; typeset +x __corral_us; "  # `$_` as before the list
    removal = (
        f'[ -z "${{__corral_fn-}}" ] || {{ {forget} }}; '
        "unset -f __corral_end; unset __corral_us;"
    )  # called with `$_` as it was: after the call, `$_` is its last argument
    after = f' function __corral_end {{ {removal} }}; __corral_end "$__corral_us";'
    return saved + define + "; ", after


# Builtins that may set PATH, source a file or change how bash finds a command.
_UNSAFE = {".", "alias", "builtin", "command", "declare", "enable", "eval", "exec", "export",
           "getopts", "hash", "let", "local", "mapfile", "printf", "read", "readarray",
           "readonly", "set", "shopt", "source", "typeset", "unalias", "unset"}  # fmt: skip


def _shim(
    name: str, form: str, guard: object, before: str, command: str
) -> tuple[str, tuple[str, ...]]:
    """The program bash finds for the name in its hash table (and the words of the commands
    the list runs first, each checked to be no function when it runs): for any shape but
    `CMD &` alone, a name without `/`, where every earlier command is a plain one, none of
    _UNSAFE, and PATH is named nowhere in them or the command; else ("", ())."""
    if (form == "async" and guard is None) or "/" in name:
        return "", ()
    *earlier, _ = re.split(r"&&|\|\||[;\n(){}]", before.replace("^", ""))
    first: list[str] = []
    for part in [p for chunk in earlier for p in re.split(r"(?<!\|)\|(?!\|)", chunk)]:
        if not part.strip():
            continue
        if "PATH" in part:
            return "", ()
        words = [w for w in shlex.split(part) if not re.match(r"[A-Za-z_][A-Za-z0-9_]*=", w)]
        if not words or words[0] in _UNSAFE:
            return "", ()
        if words[0] != name and words[0] not in first:
            first.append(words[0])
    if "PATH" in command:
        return "", ()
    return locations.shim_path(TOKEN, name), tuple(first)


def _function_name(text: str) -> str:
    """The command word of TEXT (quotes removed), after its assignments."""
    return next(w for w in shlex.split(text) if not re.match(r"[A-Za-z_][A-Za-z0-9_]*=", w))


def _earlier(before: str, words: list[str]) -> int:
    """Commands with the command's `words` between the list's start and the command."""
    commands = re.split(r"&&|\|\||[|(){}]", before.replace("^", ""))
    return sum(1 for c in commands if shlex.split(c) == words)


_WORD = re.compile(r"(?:'[^']*'|\"[^\"]*\"|[^\s'\"])+")


def _guard(before: str, behind: str, text: str) -> tuple[str, ...] | None:
    """The arguments the function checks (as written): where the list runs anything but the
    command (`cd web &&`, `x |`, a group's earlier statement), which may run its name."""
    before = before.replace("^", "").strip().lstrip("({ \n")
    if not before and not re.search(r"(?<!\|)\|(?!\|)", behind):
        return None
    words = _WORD.findall(text)
    while re.match(r"[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]
    return tuple(words[1:])


def _form(before: str, behind: str) -> str:
    """How bash runs the command: `before`, the list up to it; `behind`, the text from it
    to its `&`. The process forked for `&` (`CMD &`, `CMD | x &`): "async"; the last
    command of a ( … ) group or a command of a pipeline inside a list or a group: "exec";
    the last command of a list or a { …; } group, forked by the list's process: "child"."""
    before = before.replace("^", "").lstrip()
    group = before[:1] if before[:1] in "({" else ""
    statement = re.split(r"[;\n]", before)[-1]  # the group's last statement, up to it
    earlier = bool(re.search(r"&&|\|\|", statement))
    piped = bool(re.search(r"(?<!\|)\|(?!\|)", re.split(r"&&|\|\|", before)[-1] + behind))
    if not group and not earlier:
        return "async"
    if piped or (group == "(" and not (earlier and statement != before)):
        return "exec"  # bash `exec`s the last command of `( a && CMD )`, not `( a; b && CMD )`
    return "child"


_DROPPED = re.compile(r"«[^»]*»")


def _inner(m: re.Match[str]) -> str:
    return str(m.group(1) or m.group(2) or m.group(3) or "")


def _bare(marked: str) -> str:
    bare = _MARK.sub(_inner, marked).replace("^", "")
    return bare.replace("«", "").replace("»", "")


@dataclass(frozen=True)
class Case:
    marked: str
    ports: tuple[int | None, ...] = ()  # per marked span, when it names a port
    cwds: tuple[str, ...] = ()  # per marked span, when the job runs elsewhere than CWD
    note: str | None = None  # a long runner stays as written, because…
    reason: str | None = None  # the line is unreadable, because…
    refused: bool = False

    @property
    def line(self) -> str:
        return _bare(self.marked)


def M(marked: str, *ports: int | None, cwds: tuple[str, ...] = ()) -> Case:
    return Case(marked, ports, cwds)


def N(line: str, note: str | None = None) -> Case:  # stays as written (note: why)
    return Case(line, note=note)


def X(line: str, reason: str) -> Case:  # unreadable
    return Case(line, reason=reason)


def R(line: str) -> Case:
    return Case(line, refused=True)


SHAPES = [
    # one server, then something in the foreground
    M("{{npm run dev}} & sleep 2; curl -s localhost:5173"),
    M("{{npm run dev}} & sleep 2 && curl -s localhost:5173"),
    M("{{npm run dev}} &sleep 2"),
    M("{{npm run dev}}   &   sleep 2"),
    M("{{npm start}} & sleep 3; curl localhost:3000"),
    M("{{yarn dev}} & sleep 1"),
    M("{{pnpm dev --host 0.0.0.0}} & sleep 1"),
    M("{{bun run dev}} & sleep 1"),
    M("{{vite}} & sleep 1", 5173),
    M("{{vite --port 4000}} & sleep 1; curl localhost:4000", 4000),
    M("{{npx vite --port=4001}} & sleep 1", 4001),
    M("{{next dev -p 3001}} & sleep 1", 3001),
    M("{{python3 -m http.server 8123}} & sleep 1; curl -s localhost:8123", 8123),
    M("{{python -m http.server 8000 --bind 127.0.0.1}} & sleep 1", 8000),
    M("{{uvicorn app:app --port 8010}} & sleep 1", 8010),
    M("{{flask run -p 5001}} & sleep 1", 5001),
    M("{{python manage.py runserver 8002}} & sleep 1", 8002),
    M("{{hugo server}} & sleep 1", 1313),
    M("{{docker compose up}} & sleep 5"),
    M("{{go run ./cmd/api}} & sleep 1"),
    M("{{tsc -w}} & sleep 1"),
    M("{{nodemon server.js}} & sleep 1"),
    M("{{PORT=3005 npm run dev}} & sleep 1", 3005),
    # several servers
    M("{{npm run dev:api}} & {{npm run dev:web}} & wait"),
    M("{{vite --port 4100}} & {{next dev -p 4101}} & wait", 4100, 4101),
    M(
        "{{uvicorn api:app --port 8100}} & {{vite --port 5100}} & sleep 2; curl localhost:8100",
        8100,
        5100,
    ),
    M("{{vite --port 4200}} & sleep 1 & wait", 4200),
    M("sleep 1 & {{vite --port 4300}} & wait", 4300),
    M("{{vite --port 4400}} & echo started; {{next dev -p 4401}} & wait", 4400, 4401),
    # `cd dir &&`, pushd, folders
    M("^cd web && {{npm run dev}} & sleep 2", cwds=(f"{CWD}/web",)),
    M("^cd web && {{npm run dev}} > dev.log 2>&1 & sleep 2", cwds=(f"{CWD}/web",)),
    M("^cd /srv/app && {{vite}} & sleep 1", 5173, cwds=("/srv/app",)),
    M("^cd ~/site && {{vite}} & sleep 1", 5173, cwds=(f"{HOME}/site",)),
    M("^pushd web && {{vite}} & sleep 1", 5173, cwds=(f"{CWD}/web",)),
    M("cd web; {{vite}} & sleep 1", 5173, cwds=(f"={CWD}/web",)),
    M("^cd web && {{vite}} & sleep 1", cwds=(f"{CWD}/web",)),
    M("^cd a && {{vite}} & ^cd b && {{next dev}} & wait", cwds=(f"{CWD}/a", f"{CWD}/b")),
    M("{{env -C web vite}} & sleep 1", cwds=(f"{CWD}/web",)),
    M("{{npm --prefix web run dev}} & sleep 1", cwds=(f"{CWD}/web",)),
    # nohup, setsid, env, redirections around it
    M("{{nohup npm run dev}} > dev.log 2>&1 & sleep 2; tail dev.log"),
    M("{{nohup vite}} & sleep 1", 5173),
    M("{{setsid npm run dev}} & sleep 1"),
    M("{{setsid nohup vite --port 4500}} & sleep 1", 4500),
    M("{{nohup setsid vite --port 4501}} & sleep 1", 4501),
    M("{{env PORT=3006 npm run dev}} & sleep 1", 3006),
    M("{{env X=1 Y=2 vite --port 4600}} & sleep 1", 4600),
    M("{{X=1 vite --port 4601}} & sleep 1", 4601),
    M("{{vite --port 4602}} > vite.log & sleep 1", 4602),
    M("{{vite --port 4603}} 2>/dev/null & sleep 1", 4603),
    M("{{vite --port 4604}} &>vite.log & sleep 1", 4604),
    M("{{vite --port 4605}} < /dev/null & sleep 1", 4605),
    M("{{vite --port 4606}} >> 'my log.txt' 2>&1 & sleep 1", 4606),
    M("{{vite --port 4607« > a.log» --host 0.0.0.0}} & sleep 1", 4607),
    M("^cd web && {{vite}} > vite.log 2>&1 & sleep 1", 5173, cwds=(f"{CWD}/web",)),
    # pipelines and lists as the backgrounded command
    M("{{vite --port 4700}} | tee vite.log & sleep 1", 4700),
    M("{{vite --port 4701}} 2>&1 | grep -v debug & sleep 1", 4701),
    M("^npm install && {{npm run dev}} & sleep 5"),
    M("^npm run build || {{npm run dev}} & sleep 5"),
    M("{{npm run dev}} & PID=$!; sleep 2; kill $PID"),
    M("{{npm run dev}} & sleep 2; wait $!"),
    # subshells and brace groups
    M("({{npm run dev}} &) ; sleep 1"),
    M("(^cd web && {{vite}} &); sleep 1", cwds=(f"{CWD}/web",)),
    M("{ {{vite --port 4800}} & } ; sleep 1", 4800),
    M("{ ^cd web && {{vite}} & }; sleep 1", cwds=(f"{CWD}/web",)),
    M("{ cd web; {{vite}} & }; sleep 1", cwds=(f"={CWD}/web",)),
    M("(^cd web && {{vite}} & sleep 1); ls", cwds=(f"{CWD}/web",)),
    M("(cd web; {{vite}} & sleep 1); ls", cwds=(f"={CWD}/web",)),
    M("( {{vite --port 4801}} & {{next dev -p 4802}} & wait )", 4801, 4802),
    # the trailing `&` of a line that also has one mid-line
    M("{{vite --port 4900}} & {{next dev -p 4901}} &", 4900, 4901),
    M("{{vite --port 4902}} & sleep 100 &", 4902),
    M("sleep 1 & {{vite --port 4903}} &", 4903),
    # quoting inside the span survives: single quotes, double quotes, `'` itself
    M("{{npm run dev -- --name 'my app'}} & sleep 1"),
    M('{{npm run dev -- --name "my app"}} & sleep 1'),
    M('{{npm run dev -- --name "it\'s"}} & sleep 1'),
    M("^cd 'my app' && {{npm run dev}} & sleep 1", cwds=(f"{CWD}/my app",)),
    M("{{vite --port 5000}} & sleep 1\nwait", 5000),
    # quoted words, paths, names that are no identifiers: a function stands for them too
    M("{{'vite' --port 4950}} & sleep 1", 4950),
    M("{{/usr/bin/python3 -m http.server 8130}} & sleep 1", 8130),
    M("{{./node_modules/.bin/vite --port 4955}} & sleep 1", 4955),
    M("{{python3.11 -m http.server 8131}} & sleep 1", 8131),
    M("[[time vite --port 4951]] & sleep 1", 4951),
    M("{{«2>/dev/null »vite --port 4954}} & sleep 1", 4954),
    M("{{nice vite --port 4953}} & sleep 1", 4953),
    # lists: the runner last, after other commands joined by && or || (or the old form)
    M("^cd web && {{vite --port 4990}} | tee l & sleep 1", 4990, cwds=(f"{CWD}/web",)),
    M("^cd web && {{PORT=3007 npm run dev}} & sleep 1", 3007, cwds=(f"{CWD}/web",)),
    M("^cd web > /dev/null && {{vite --port 4991}} & sleep 1", 4991, cwds=(f"{CWD}/web",)),
    M("^cd web && <<vite --port 4992>> && echo done & sleep 1", 4992, cwds=(f"{CWD}/web",)),
    M("^cd a && cd b && {{vite --port 4993}} & sleep 1", 4993, cwds=(f"{CWD}/a/b",)),
    M("{{npm run dev}} 2>&1 > log & sleep 1"),
    # assignments before the command word: kept, unless one changes the supervisor
    M("{{NODE_ENV=dev FOO=1 npm start}} & sleep 1"),
    M("{{PATH=/opt/node/bin:/usr/bin vite --port 4610}} & sleep 1", 4610),
    M("[[HOME=/tmp/h vite --port 4611]] & sleep 1", 4611),
    M("[[CORRAL_HOME=/tmp/c vite --port 4612]] & sleep 1", 4612),
    M("[[SHELL=/bin/sh vite --port 4613]] & sleep 1", 4613),
    M("[[XDG_STATE_HOME=/tmp/s vite --port 4614]] & sleep 1", 4614),
    M("[[LD_PRELOAD=/tmp/x.so vite --port 4615]] & sleep 1", 4615),
    M("[[PYTHONPATH=. vite --port 4616]] & sleep 1", 4616),
    M("[[LC_ALL=C vite --port 4617]] & sleep 1", 4617),
    M("[[TMPDIR=/tmp/t vite --port 4618]] & sleep 1", 4618),
    M("[[BASH_ENV=/tmp/rc vite --port 4619]] & sleep 1", 4619),
    M("[[CLAUDE_CODE_SESSION_ID=other vite --port 4620]] & sleep 1", 4620),
    M("[[X=1 TZ=UTC vite --port 4621]] & sleep 1", 4621),
    M("[[POSIXLY_CORRECT=1 vite --port 4622]] & sleep 1", 4622),
    N("export HOME=/tmp/h && vite --port 4623 & sleep 1", "it is a list or pipeline"),
    M("^export NODE_ENV=dev && {{vite --port 4624}} & sleep 1", 4624),
    # bash finds corral's program for the name unless something before it may change PATH
    M("^read -r v && {{vite --port 4625}} & sleep 1", 4625),
    M("^true && {{PATH=/opt/bin:/usr/bin vite --port 4626}} & sleep 1", 4626),
    M("^nvm use 20 && cd web && {{npm run dev}} & sleep 1", cwds=(f"{CWD}/web",)),
    M("^cd web && {{NODE_ENV=dev vite}} & sleep 1", cwds=(f"{CWD}/web",)),
    # redirections before the command word or among its words
    M("{{«>vite.log 2>&1 »vite --port 4630}} & sleep 1", 4630),
    M("{{vite« >vite.log» --port 4631}} & sleep 1", 4631),
    M("{{X=1 «2>err.log »vite --port 4632}} & sleep 1", 4632),
    M("{{«</dev/null »npm run dev}} 2>&1 & sleep 1"),
    # quoted command words and paths
    M('{{"vite" --port 4640}} & sleep 1', 4640),
    M('{{"./node_modules/.bin/vite" --port 4641}} & sleep 1', 4641),
    M("{{node_modules/.bin/next dev -p 4642}} & sleep 1", 4642),
    M("{{http-server -p 8141}} & sleep 1", 8141),
    M("^cd web && {{./node_modules/.bin/vite --port 4643}} & sleep 1", 4643, cwds=(f"{CWD}/web",)),
    # pipelines: the runner's own process, wherever it stands
    M("{{npm run dev}} 2>&1 | tee dev.log & sleep 1"),
    M("{{npm run dev}} |& tee dev.log & sleep 1"),
    M("^cat in.txt | {{vite --port 4650}} & sleep 1", 4650),
    M("{{vite --port 4651}} | grep -v debug | tee l & sleep 1", 4651),
    M("<<vite --port 4652>> | <<next dev -p 4653>> & sleep 1", 4652, 4653),
    N("npm run dev | npm run log & sleep 1", "it is a list or pipeline"),
    # lists: commands joined by && or || before the runner
    M("^npm ci && {{npm run dev}} & sleep 1"),
    M("^npm i && npm run build && {{npm run dev}} & sleep 1"),
    M("^npm install && {{vite --port 4660}} & sleep 1", 4660),
    M("^make build && {{./node_modules/.bin/vite --port 4661}} & sleep 1", 4661),
    M("^npm i > /dev/null && {{npm run dev}} | tee l & sleep 1"),
    M("^true || false && {{vite --port 4662}} & sleep 1", 4662),
    M("^npm i && npm run build > b.log && {{npm run dev}} & sleep 1"),
    M("^npm i && {{vite« > vite.log» --port 4666}} & sleep 1", 4666),
    M("^npm i || npm run build && {{npm run dev}} & sleep 1"),
    M("^npm i | cat && {{npm run dev}} & sleep 1"),
    N("npm run dev || npm run dev & sleep 1", "it is a list or pipeline"),
    N("npm run dev | cat && npm run dev & sleep 1", "it is a list or pipeline"),
    M("^echo x && echo y | <<vite --port 4663>> && echo z & sleep 1", 4663),
    M("<<vite --port 4664>> && echo done & sleep 1", 4664),
    M("<<vite --port 4665>> || echo failed & sleep 1", 4665),
    # groups: the runner alone, or last, in ( … ) or { …; }
    M("^(cd web && {{npm run dev}}) & sleep 1", cwds=(f"{CWD}/web",)),
    M("^( {{npm run dev}} ) & sleep 1"),
    M("^{ {{npm run dev}}; } & sleep 1"),
    M("^{ cd web && {{vite}}; } > vite.log 2>&1 & sleep 1", cwds=(f"{CWD}/web",)),
    M("^(npm i && {{npm run dev}}) & sleep 1"),
    M("^( {{vite --port 4670}} | tee l ) & sleep 1", 4670),
    M("^(cd web && {{PORT=3008 npm run dev}}) & sleep 1", 3008, cwds=(f"{CWD}/web",)),
    M("^(cd web; {{npm run dev}}) & sleep 1", cwds=(f"{CWD}/web",)),
    M("^{ cd web; {{vite}}; } & sleep 1", cwds=(f"{CWD}/web",)),
    M("^(true; true && {{vite --port 4673}}) & sleep 1", 4673),
    M("^(cd web\n{{vite --port 4674}}\n) & sleep 1", 4674, cwds=(f"{CWD}/web",)),
    M("^(npm i; {{npm run dev}}) & sleep 1"),
    M("^{ <<vite>>; echo done; } & sleep 1"),
    M("^(<<vite>> && echo done) & sleep 1"),
    N("(HOME=/tmp/h vite) & sleep 1", "it is a ( … ) or { …; } group"),
    M("^( (<<vite>>) ) & sleep 1"),
    M("^(<<vite --port 4671>> | <<next dev -p 4672>>) & sleep 1", 4671, 4672),
    # not long runners: they run as written
    N("sleep 1 & wait"),
    N("sleep 1 & sleep 2 & wait"),
    N("echo hi & wait"),
    N("(sleep 1 &); echo hi"),
    N("make build & wait"),
    N("npm test & npm run lint & wait"),
    N("sleep 5 & vite"),  # the foreground runner is only checked
    # long runners a new shell could run otherwise: as written, and why
    N("vite --port $PORT & sleep 1", "it uses a variable (`$PORT`)"),
    N('npm run dev -- --name "$USER" & sleep 1', "it uses a variable (`$USER`)"),
    N("vite --port ${PORT:-3000} & sleep 1", "it uses a variable"),
    N("npm run dev -- *.js & sleep 1", "`*.js` may expand differently"),
    N("npm run dev -- src/?.ts & sleep 1", "`src/?.ts` may expand differently"),
    N("npm run dev -- --out=~/x & sleep 1", "`--out=~/x` may expand differently"),
    N("set -e; vite & sleep 1", "the line runs `set` before it"),
    N("shopt -s nullglob; vite & sleep 1", "the line runs `shopt` before it"),
    N("alias vite=echo; vite & sleep 1", "the line runs `alias` before it"),
    N("trap 'echo bye' EXIT; vite & sleep 1", "the line runs `trap` before it"),
    N("vite && jobs & sleep 1", "it runs `jobs`, which reads this shell's own state"),
    N("vite & sleep 1; jobs", "the line runs `jobs`, which would list the supervisor's"),
    M("^({{vite}}) & sleep 1"),
    M("^{ {{vite}}; } & sleep 1"),
    M("({{vite}} & wait) & sleep 1"),
    N("(vite; wait) & sleep 1", "it runs `wait`, which reads this shell's own state"),
    # lines it cannot read: untouched, and which construct
    X("vite & sleep $(cat delay)", "command substitution"),
    X("vite & for i in 1 2; do curl x; done", "for loop"),
    X("vite & sleep 1 # wait for it", "comment"),
    X("vite & if true; then curl x; fi", "if statement"),
    X("cd $DIR && vite & sleep 1", "the folder depends on a variable"),
    X("eval vite & sleep 1", "`eval`"),
    X("vite & cat <<EOF\nx\nEOF", "heredoc"),
    X("exec vite & sleep 1", "`exec`"),
    X("npm run dev -- {a,b} & sleep 1", "brace expansion"),
    X("sudo setsid vite & sleep 1", "setsid"),
    # duplicates and ports are refused within the line, as for a whole-line wrap
    R("vite & vite & wait"),
    R("npm run dev & yarn dev & wait"),
    R("vite --port 5200 & next dev -p 5200 & wait"),
    R("vite & sleep 1; npx vite"),
]


def _decide(line: str, **kw: object) -> Decision:
    return decide(line, background=False, cwd=CWD, home=HOME, wrapper=WRAPPER, token=TOKEN, **kw)  # type: ignore[arg-type]


def _tokens(decision: Decision) -> list[str]:
    return [w.token for w in decision.in_place]


def through_hash(names: list[tuple[str, str]], first: list[str]) -> tuple[str, str]:
    """What goes before a list of `<<…>>` spans and right after its `&`: under bash with
    hashing on, or zsh, every program in place, every name on PATH and no name of the
    list a function, each name hashed to corral's program; put back after the `&`."""
    places = [(n, quote_for_wrapper(p)) for n, p in names]
    ready = " && ".join(f"[ -x {p} ]" for _, p in places)
    functions = " || ".join(f"typeset -f {w}" for w in [*(n for n, _ in names), *first])
    common = f"{ready} && ! {{ {functions}; }} >/dev/null 2>&1"
    bash = " && ".join(f"type -P {n} >/dev/null 2>&1" for n, _ in names)
    zsh = " && ".join(f"whence -p {n} >/dev/null 2>&1" for n, _ in names)
    save = "; ".join(
        f"__corral_h{i}=${{BASH_CMDS[{n}]-}}; typeset +x __corral_h{i}; hash -p {p} {n}"
        for i, (n, p) in enumerate(places)
    )
    put = "; ".join(f"hash {n}={p}" for n, p in places)
    before = (
        '__corral_us=$_; typeset +x __corral_us; if [ -n "${BASH_VERSION-}" ] && '
        '[ "${BASH_VERSINFO-0}" -ge 4 ] && case $- in '
        f"*h*) ;; *) false;; esac && {common} && {bash}; then {save}; __corral_fn=b; "
        f'typeset +x __corral_fn; elif [ -n "${{ZSH_VERSION-}}" ] && {common} && {zsh}; '
        f"then {put}; __corral_fn=z; typeset +x __corral_fn; fi; "
    )
    back = "; ".join(
        f'if [ -n "$__corral_h{i}" ]; then hash -p "$__corral_h{i}" {n}; else hash -d {n}; fi'
        for i, (n, _) in enumerate(places)
    )
    saved = " ".join(f"__corral_h{i}" for i in range(len(places)))
    removal = (
        f"case ${{__corral_fn-}} in b) {back}; unset {saved};; z) unhash "
        f"{' '.join(n for n, _ in names)};; esac; unset __corral_fn; unset -f __corral_end; "
        "unset __corral_us;"
    )
    return before, f' function __corral_end {{ {removal} }}; __corral_end "$__corral_us";'


def _hashed_expected(case: Case, decision: Decision) -> str:
    """A line of `<<…>>` spans, all in one backgrounded list (which starts at `^` or the
    first span): every byte kept, through_hash's text around the list."""
    spans = list(_MARK.finditer(case.marked))
    line = case.marked
    opens = line.find("^") if "^" in line else spans[0].start()
    amp = _TO_AMP.match(line[spans[-1].end() :])
    assert amp is not None
    behind = spans[-1].end() + amp.end()
    names = [_function_name(_DROPPED.sub("", m.group(3))) for m in spans]
    tokens = _tokens(decision)
    unit = _bare(line[opens:behind])
    words = [
        next(w for w in shlex.split(c) if not re.match(r"[A-Za-z_][A-Za-z0-9_]*=", w))
        for c in re.split(r"&&|\|\||[|;(){}\n&]", unit)
        if c.strip()
    ]
    first = [w for w in dict.fromkeys(words) if w not in names]
    pairs = [(n, locations.shim_path(t, n)) for n, t in zip(names, tokens, strict=True)]
    before, after = through_hash(pairs, first)
    return _bare(line[:opens]) + before + unit + after + _bare(line[behind:])


def _expected(case: Case, decision: Decision) -> str:
    """The marked line with each span wrapped, built from the case alone (plus the tokens,
    which are random apart from the first)."""
    if "<<" in case.marked:
        return _hashed_expected(case, decision)
    out: list[str] = []
    at = 0
    after = ""  # inserted right behind the `&` of the last `{{…}}` span
    for number, match in enumerate(_MARK.finditer(case.marked)):
        span = _inner(match)
        between = case.marked[at : match.start()]
        if after:
            amp = _TO_AMP.match(between)
            assert amp is not None, between
            between = between[: amp.end()] + after + between[amp.end() :]
        out.append(_MARK.sub(_inner, between))
        text = _command_line(case, decision, number, _DROPPED.sub("", span))
        span = span.replace("«", "").replace("»", "")
        if match.group(1) is not None:
            out.append(text)
            after = ""
        else:
            opens = out[-1].rfind("^") if "^" in between else len(out[-1])
            name = _function_name(_DROPPED.sub("", match.group(2)))
            rest = case.marked[match.end() :]
            amp = _TO_AMP.match(rest)
            assert amp is not None, rest
            form = _form(out[-1][opens:], rest[: amp.end()])
            command = _DROPPED.sub("", match.group(2))
            words = shlex.split(command)
            words = words[next(at for at, w in enumerate(words) if w == name) :]
            earlier = _earlier(out[-1][opens:], words)
            guard = _guard(out[-1][opens:], rest[: amp.end()], command)
            shim, first = _shim(name, form, guard, out[-1][opens:], command)
            if shim:
                shim = locations.shim_path(_tokens(decision)[number], name)
            before, after = through_function(name, text, earlier, form, guard, shim, first)
            out[-1] = out[-1][:opens] + before + out[-1][opens:]
            out.append(span)
        at = match.end()
    rest = case.marked[at:]
    if after:
        amp = _TO_AMP.match(rest)
        assert amp is not None, rest
        rest = rest[: amp.end()] + after + rest[amp.end() :]
    out.append(_bare(rest))
    return "".join(out).replace("^", "")


def _command_line(case: Case, decision: Decision, number: int, span: str) -> str:
    bare = re.sub(r"^(setsid |nohup )+", "", span)  # the whole-line reader refuses setsid
    ident = decide(bare, background=True, cwd=CWD, home=HOME).jobs[0].identity
    words = ["S", "--job", _tokens(decision)[number], "--detached", "--identity", ident]
    port = case.ports[number] if number < len(case.ports) else None
    if port is None:
        port = decide(bare, background=True, cwd=CWD, home=HOME).jobs[0].port
    if port is not None:
        words += ["--port", str(port)]
    if number < len(case.cwds) and not case.cwds[number].startswith("="):
        meta = f"job_cwd={case.cwds[number]}"
        words += ["--meta", quote_for_wrapper(meta) if " " in meta else meta]
    words.append("--async")
    return " ".join([*words, "--", quote_for_wrapper(span)])


def test_enough_shapes() -> None:
    assert len(SHAPES) >= 60
    assert len({c.line for c in SHAPES}) == len(SHAPES)


@pytest.mark.parametrize("case", SHAPES, ids=[repr(c.line)[:70] for c in SHAPES])
def test_shape(case: Case) -> None:
    d = _decide(case.line)
    spans = _MARK.findall(case.marked)
    if case.reason is not None:
        assert not d.readable and d.action == "untouched" and d.rewritten is None, d
        assert d.reason and case.reason in d.reason, d.reason
        return
    if case.refused:
        assert d.action == "refuse" and d.refusal and d.refusal.startswith("corral refused"), d
        return
    if not spans:
        assert d.action == "untouched" and d.rewritten is None and d.readable, d
        notes = [note for _, note in d.notes]
        if case.note is None:
            assert not notes, notes
        else:
            assert notes and case.note in notes[0], notes
        return
    assert d.action == "wrap" and d.mode == "in-place", d
    assert len(d.in_place) == len(spans), d.in_place
    assert _tokens(d)[0] == TOKEN
    assert d.rewritten == _expected(case, d)
    for number, wrap in enumerate(d.in_place):
        job = d.jobs[wrap.job]
        if "<<" in case.marked:  # what each program runs: its job's supervisor
            span = _DROPPED.sub("", spans[number][2])
            assert wrap.text == _command_line(case, d, number, span)
            assert wrap.values == tuple(shlex.split(span)[1:]), wrap
        if number < len(case.cwds):
            assert job.cwd == case.cwds[number].lstrip("="), job
        if number < len(case.ports) and case.ports[number] is not None:
            assert job.port == case.ports[number], job


def test_the_tokens_of_one_line_differ() -> None:
    d = _decide("vite --port 4100 & next dev -p 4101 & uvicorn a:app & wait")
    assert len(set(_tokens(d))) == 3


def test_a_running_duplicate_is_refused_with_what_to_reuse() -> None:
    live = [LiveJob("f" * 32, 4242, _decide("vite & sleep 1").jobs[0].identity, CWD, (5173,),
                    60.0, "vite")]  # fmt: skip
    d = decide("vite & sleep 1; curl localhost:5173", background=False, cwd=CWD, home=HOME,
               live=live, token=TOKEN)  # fmt: skip
    assert d.action == "refuse" and d.refusal is not None
    assert d.refusal.startswith("corral refused: `vite` is already running in /w/proj as corral")
    assert "http://localhost:5173" in d.refusal


def test_a_held_port_is_refused() -> None:
    live = [LiveJob("e" * 32, 4243, "0" * 16, "/elsewhere", (4000,), 5.0, "other")]
    d = decide("vite --port 4000 & sleep 1", background=False, cwd=CWD, home=HOME, live=live)
    assert d.action == "refuse" and d.refusal is not None and "port 4000" in d.refusal


def test_a_background_call_still_wraps_the_whole_line() -> None:
    # The whole line runs under one supervisor, which already leads every command it sends
    # to the background (same group, subreaper): nothing is rewritten in place.
    d = decide("vite & sleep 2; curl x", background=True, cwd=CWD, home=HOME, token=TOKEN)
    assert d.action == "wrap" and d.mode == "task" and not d.in_place


def test_the_tmux_backend_still_runs_a_mid_line_command_under_the_supervisor() -> None:
    from corral.lowlevel import locations

    tmux = ("python3", "-I", "-S", locations.TMUX_WRAPPER, "--grace", "5")
    d = decide("vite & sleep 1", background=False, cwd=CWD, home=HOME, wrapper=tmux)
    assert d.rewritten is not None and d.mode == "in-place"
    assert d.in_place[0].text.startswith(f"python3 -I -S {locations.LAUNCHER} --grace 5 --job ")
    assert f"exec {d.in_place[0].text};" in d.rewritten
    assert locations.TMUX_WRAPPER not in d.rewritten
    whole = decide("vite", background=True, cwd=CWD, home=HOME, wrapper=tmux)
    assert whole.rewritten is not None and locations.TMUX_WRAPPER in whole.rewritten
