"""Shell lines whose stdout, stderr and exit status must be the same with and without corral.

Every line is deterministic: its output depends on nothing that differs between two runs
(no pids, times, random numbers, or the environment variables corral adds). Lines run in
an empty working folder with a fixed stdin (`STDIN`), `SHELL=/bin/bash` and a UTF-8 locale.

`LINES` is hand-written cases followed by cases generated from templates with a fixed seed;
`SIGNAL_LINES` are lines whose shell dies of a signal the supervisor passes on faithfully.
"""

from __future__ import annotations

import random

STDIN = b"first line\nsecond line with \xc3\xa9\n\x00\xff raw bytes\nlast line without newline"

QUOTES = [
    "echo 'single quoted $HOME `not run`'",
    'echo "double quoted with \\"escapes\\" and \\$dollar"',
    "echo $'ansi-c \\t tab \\n newline \\x41 \\u00e9'",
    "echo 'it'\\''s glued'",
    'echo "it\'s mixed"',
    "echo \"nested 'single' inside\" 'and \"double\" inside'",
    "printf '%s|' 'a  b' \"c  d\" e\\ \\ f; echo",
    'echo "$(echo command substitution)" `echo backticks`',
    'echo "$((6 * 7)) arithmetic"',
    "x='value with spaces'; echo \"[$x]\" [$x]",
    "set -- 'one arg' two 'three four'; echo $#; printf '<%s>' \"$@\"; echo",
    "echo ~root/x '~root/x' \"~root/x\"",
    "echo {a,b,c}-{1,2} '{a,b}'",
    "echo *.nomatch '*' \"*\"",
    "echo \\# not a comment # but this is",
    "echo a\\\nb",
    "echo 'line one\nline two'",
    "echo \"tab\there\" $'tab\\there'",
    "printf '%q\\n' \"a b\" 'c$d' $'e\\nf'",
    'echo "${UNSET_VAR_XYZ:-default}" "${UNSET_VAR_XYZ-dash}"',
    "v=hello; echo ${v^^} ${v:1:3} ${#v} ${v/l/L} ${v//l/L}",
    "arr=(x 'y z' w); echo ${#arr[@]} \"${arr[1]}\"",
    "declare -A m=([k]=v [k2]=v2); echo ${m[k]} ${m[k2]}",
    "echo '' \"\" ''\"\" | od -An -c",
    "echo '\\' \"\\\\\" \\\\",
]

PIPES_AND_REDIRECTS = [
    "echo hello | tr a-z A-Z",
    "printf 'b\\na\\nc\\n' | sort | uniq -c",
    "seq 1 10 | paste -sd+ | bc",
    "echo out; echo err >&2",
    "echo to-stderr 1>&2",
    "{ echo a; echo b >&2; } 2>&1 | sort",
    "ls /nonexistent-corral-path 2>&1",
    "ls /nonexistent-corral-path 2>/dev/null; echo status=$?",
    "echo data > f.txt; cat f.txt",
    "echo clobber >| f.txt; echo again >| f.txt; cat f.txt",
    "set -C; echo a > g.txt; echo b > g.txt; echo rc=$?; cat g.txt",
    "echo one >> h.txt; echo two >> h.txt; cat h.txt",
    "cat <<< 'here string'",
    'tr a-z A-Z <<< "here $((1+1)) string"',
    "cat <<EOF\nheredoc $((2+3))\n  indented\nEOF",
    "cat <<'EOF'\nquoted heredoc $HOME\nEOF",
    "cat <<-EOF\n\tleading tabs stripped\n\tEOF",
    "exec 3>&1; echo via-fd-3 >&3; exec 3>&-",
    "exec 4>k.txt; echo into-fd-4 >&4; exec 4>&-; cat k.txt",
    "echo both &> both.txt; cat both.txt",
    "{ echo x; echo y >&2; } > out.txt 2> err.txt; cat err.txt out.txt",
    "echo err 2>&1 >/dev/null >&2",
    "diff <(echo a) <(echo b); echo rc=$?",
    "paste <(seq 3) <(seq 4 6)",
    "echo piped | { read -r v; echo got:$v; }",
    "echo a | cat | cat | cat | wc -c",
    "yes | head -n 3",
    "yes abc | head -c 1000 | wc -c",
    "seq 1 100000 | tail -n 1",
    "printf 'a\\0b\\0' | xargs -0 -n1 echo",
    "echo 'x y z' | awk '{print $2}'",
    "echo foo:bar:baz | cut -d: -f2",
    "echo abc | sed 's/b/B/'",
    "false | true; echo pipe=$?",
    "set -o pipefail; false | true; echo pipefail=$?",
    "true | false",
    "echo $(false) status=$?",
    "cat /dev/null",
    "cat nonexistent-file",
    "echo text | tee t.txt >/dev/null; cat t.txt",
    "echo stdout-then; cat nonexistent 2>&1; echo done",
]

STDIN_READERS = [
    "cat",
    "wc -c",
    "head -n 1",
    "read -r first; echo got:$first",
    'while IFS= read -r l; do echo "[$l]"; done',
    "tac | od -An -tx1 | head -n 2",
    "cat - | sort",
    'read -r a; read -r b; echo "$b|$a"',
    "cat </dev/null; echo nothing",
]

UNICODE_AND_BINARY = [
    "echo héllo wörld 日本語 🎉",
    "printf '%s\\n' 'ñ ü ß €'",
    "x=é; echo ${#x}",
    "echo 'Ωμέγα' | wc -m",
    "echo 'zero-width:\u200b:joiner:\u200d:'",
    "echo 'right-to-left: עברית عربى'",
    "printf '\\x00\\xff'",
    "printf '\\x00\\x01\\x02\\x7f\\x80\\xfe\\xff\\n'",
    "printf 'no newline at end'",
    "printf '\\r\\n crlf \\r\\n'",
    "printf '\\xc3\\x28 invalid utf8\\n'",
    "printf '\\xff to stderr' >&2",
    "head -c 256 /dev/zero",
    "head -c 1000 /dev/zero | tr '\\0' '\\377'",
    "printf '\\e[1;31mred\\e[0m\\n'",
    "echo $'\\a\\b\\f\\v'",
    "printf '%s' 'ünïcödé to stderr' >&2",
]

LARGE_OUTPUT = [
    "seq 1 200000",
    "seq 1 200000 >&2",
    "seq 1 50000; seq 1 50000 >&2",
    "head -c 3000000 /dev/zero | tr '\\0' a",
    "yes 'a line of text' | head -n 100000",
    "for i in $(seq 1 2000); do echo out$i; echo err$i >&2; done",
    "seq 1 100000 | awk '{s+=$1} END {print s}'",
    "head -c 2000000 /dev/zero",
]

EXITS = [
    "exit 7",
    "exit 0",
    "exit 1",
    "exit 255",
    "exit 256",
    "exit 300",
    "exit -1",
    "false",
    "true",
    "echo before; exit 3; echo after",
    "echo out; echo err >&2; exit 42",
    "(exit 9)",
    "(exit 9); echo after=$?",
    "set -e; false; echo unreachable",
    "set -e; echo one; (exit 4); echo unreachable",
    "set -e; false || echo rescued",
    'set -eu; echo "$UNDEFINED_CORRAL_VAR"',
    "set -u; echo ${UNDEFINED_CORRAL_VAR:-fine}",
    "nonexistent_command_corral_xyz",
    "nonexistent_command_corral_xyz; echo after=$?",
    "/nonexistent/path/prog",
    "./not-there.sh",
    "return 3",
    "echo 'unterminated",
    "if then fi",
    "echo ok; (",
    "fn() { return 5; }; fn; echo rc=$?",
    "fn() { exit 6; }; fn; echo unreachable",
    "test -e /nonexistent-corral",
    "[ 1 -eq 2 ]",
    "! true",
    "! false",
    "exit $((3 + 4))",
    "sh -c 'exit 12'",
    "bash -c 'echo inner; exit 13'",
    "trap 'echo trapped-exit' EXIT; exit 2",
    "trap 'echo on-err >&2' ERR; false; echo continued",
    "kill -0 $$ && echo alive",
    "timeout 5 true; echo t=$?",
]

SIGNAL_LINES = [
    "kill -TERM $$",
    "echo before; kill -TERM $$; echo after",
    "kill -KILL $$",
    "kill -INT $$",
    "kill -HUP $$",
    "kill -PIPE $$",
    "echo partial >&2; kill -9 $$",
    "sh -c 'kill -TERM $$'; echo child=$?",
    "(bash -c 'kill -KILL $$'; echo child=$?) 2>/dev/null",
    "sleep 5 & kill -TERM $!; wait $!; echo waited=$?",
    "trap 'echo got-term; exit 15' TERM; kill -TERM $$",
    "trap '' TERM; kill -TERM $$; echo ignored",
]

STRUCTURE = [
    "( echo in-subshell; exit 3 ); echo after=$?",
    "( cd / && pwd ); echo back",
    "{ echo group; echo more; }",
    "greet() { echo \"hello $1\"; }; greet world; greet 'two words'",
    "f() { local x=inner; echo $x; }; x=outer; f; echo $x",
    "f() { echo \"$#:$*\"; }; f a 'b c' d",
    "for i in 1 2 3; do echo item$i; done",
    "for ((i=0; i<3; i++)); do printf '%d,' $i; done; echo",
    "i=0; while [ $i -lt 3 ]; do echo w$i; i=$((i+1)); done",
    "until false; do echo once; break; done",
    "case foo in f*) echo matched;; *) echo nope;; esac",
    "if [ -d / ]; then echo dir; else echo nodir; fi",
    "[[ abc == a* ]] && echo glob-match",
    "[[ abc =~ ^a(b)c$ ]] && echo ${BASH_REMATCH[1]}",
    "select x in a; do break; done </dev/null; echo selected",
    "echo a && echo b || echo c",
    "false && echo no || echo yes",
    "echo one; echo two; echo three",
    "sleep 0.05 & wait; echo waited",
    "(sleep 0.2; echo late) & echo early; wait",
    "(sleep 0.3; echo after-exit) &",
    "coproc cat; echo ping >&${COPROC[1]}; exec {COPROC[1]}>&-; read -r r <&${COPROC[0]}; echo $r",
    "shopt -s extglob; v=aaab; echo ${v##+(a)}",
    "shopt -s nullglob; echo none:*.zz:",
    "mkdir d && cd d && touch x y && ls && cd .. && ls",
    "eval 'echo evaluated'",
    "source /dev/null; echo sourced",
    "type cd echo | head -n 2",
    "command -v ls >/dev/null && echo has-ls",
    "printf '%05.2f|%-5s|%x\\n' 3.14159 ab 255",
    "echo $0",
    "echo $-",
    "echo $SHLVL",
    "echo ${BASH_EXECUTION_STRING:0:16}",
    "trap -p",
    "umask",
    "ulimit -n",
    "[ -t 0 ] && echo tty-in || echo no-tty-in; [ -t 1 ] && echo tty || echo no-tty",
    "ls /proc/self/fd",
    "grep -E '^Sig(Blk|Ign)' /proc/self/status",
    "set -o | grep -E '^(monitor|errexit|nounset|pipefail|posix) '",
    "shopt login_shell",
    "echo $SHELL",
    "env -i /bin/sh -c 'echo clean env'",
    "exec echo exec-replaced",
    "exec 2>&1; echo err-now-out >&2",
    "alias ll='ls -l'; ll /nonexistent 2>&1 | head -c 0; echo aliases-off",
    "x=1; (( x++ )); echo $x",
    "IFS=:; set -- a:b:c; echo $2",
    'echo "${PIPESTATUS[@]}"; false | true | (exit 3); echo "${PIPESTATUS[@]}"',
]


def _generated(count: int, seed: int) -> list[str]:
    """Lines composed from small deterministic parts, to reach corners no one writes."""
    rng = random.Random(seed)
    words = [
        "plain",
        "'single  spaced'",
        '"double  spaced"',
        "$'c\\tstyle'",
        "'it'\\''s'",
        "ünï",
        "'a|b;c&d'",
        '"$((2*21))"',
        "'*'",
        "\\$escaped",
        "'>not-redirect'",
        '"quote\'inside"',
    ]
    producers = [
        "echo {w}",
        "printf '[%s]\\n' {w}",
        "echo {w} >&2",
        "printf '%s' {w} | od -An -c",
        "cat <<< {w}",
        "printf '%s\\n' {w} {w} | sort -u",
        "echo {w} | tr a-z A-Z",
        "{{ echo {w}; echo {w} >&2; }}",
        "echo {w} > gen.txt; cat gen.txt",
        "echo {w} >| gen.txt && cat gen.txt >&2",
        "( echo {w} )",
        'f() {{ echo "f:$1"; }}; f {w}',
        'v={w}; echo "${{#v}}"',
        "seq 1 {n} | tail -n 1",
        "printf '\\x{h}' | od -An -tx1",
    ]
    joiners = ["; ", " && ", " || ", " | cat; ", "\n", " 2>&1; "]
    endings = ["", "; exit {n}", "; false", "; (exit {n})", " | wc -l", "; echo end >&2"]
    lines: list[str] = []
    seen: set[str] = set()
    while len(lines) < count:
        parts = []
        for _ in range(rng.randint(1, 3)):
            template = rng.choice(producers)
            parts.append(
                template.format(
                    w=rng.choice(words), n=rng.randint(1, 300), h=f"{rng.randint(0, 255):02x}"
                )
            )
        joined = parts[0]
        for part in parts[1:]:
            joined += rng.choice(joiners) + part
        line = joined + rng.choice(endings).format(n=rng.randint(1, 254))
        if line not in seen:
            seen.add(line)
            lines.append(line)
    return lines


HAND_WRITTEN = (
    QUOTES
    + PIPES_AND_REDIRECTS
    + STDIN_READERS
    + UNICODE_AND_BINARY
    + LARGE_OUTPUT
    + EXITS
    + SIGNAL_LINES
    + STRUCTURE
)
GENERATED = _generated(count=120, seed=20261202)
LINES = HAND_WRITTEN + GENERATED
