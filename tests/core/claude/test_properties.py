"""Hypothesis properties of permission parity: the verdict never raises, an added deny rule
never makes it more permissive, and a line Claude Code would deny (or ask about) is never
rewritten as allowed or without a decision."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.core.claude.permissions import MODES, Verdict, parse_rules, verdict
from corral.core.shell.parse import Unreadable, read
from tests.core.claude.test_invariants import RANK

WRAPPED = "corral-run --task --job 00 -- 'x'"
WORDS = [
    "npm", "run", "dev", "python3", "-m", "http.server", "8000", "cd", "web", "&&", "||", "&",
    ";", "|", "PORT=3000", ">", "/dev/null", "2>&1", "dev.log", "'a b'", '"x y"', "$HOME",
    "nohup", "time", "timeout", "5", "bash", "-c", "--", "--port", "é", "(", ")", "\\", "\n",
]  # fmt: skip
shellish = st.lists(st.sampled_from(WORDS), max_size=10).map(" ".join)
lines = st.one_of(shellish, st.text(max_size=60))
RULE_WORDS = ["npm", "run", "dev", "python3", "-m", "http.server", "cd", "web", "*", ":*", " "]
rule_bodies = st.one_of(
    st.lists(st.sampled_from(RULE_WORDS), max_size=5).map("".join), st.text(max_size=20)
)
rule_texts = st.one_of(
    rule_bodies.map(lambda body: f"Bash({body})"),
    st.sampled_from(["Bash", "Bash(*)", "bash(npm:*)", "Read(x)", "Bash (dev)"]),
    st.text(max_size=20),
)
rule_lists = st.lists(rule_texts, max_size=3)
rule_sets = st.tuples(rule_lists, rule_lists, rule_lists)  # allow, ask, deny
modes = st.one_of(st.sampled_from(sorted(MODES)), st.none(), st.text(max_size=8))


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(lines, rule_sets, modes, st.text(max_size=40))
def test_never_raises(
    line: str, rules: tuple[list[str], list[str], list[str]], mode: str | None, wrapped: str
) -> None:
    result = verdict(line, parse_rules(*rules), mode, rewritten=wrapped)
    assert result in Verdict
    if isinstance(read(line), Unreadable):
        assert result is Verdict.UNSURE


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(lines, rule_sets, rule_texts, st.sampled_from(sorted(MODES)))
def test_an_added_deny_or_ask_rule_never_makes_the_verdict_more_permissive(
    line: str, rules: tuple[list[str], list[str], list[str]], extra: str, mode: str
) -> None:
    allow, ask, deny = rules
    before = RANK[verdict(line, parse_rules(allow, ask, deny), mode, rewritten=WRAPPED)]
    denied = verdict(line, parse_rules(allow, ask, [*deny, extra]), mode, rewritten=WRAPPED)
    asked = verdict(line, parse_rules(allow, [*ask, extra], deny), mode, rewritten=WRAPPED)
    assert RANK[denied] <= before
    assert RANK[asked] <= before


# A command a rule is written for, and ways a line can carry it that Claude Code still
# matches (checked: compound lines, pipes, assignments, quotes, `&`, redirects, paths,
# wrappers), plus some it does not match but corral cannot tell apart (`bash -c '…'`).
COMMANDS = ["npm run dev", "python3 -m http.server", "cd web", "vite"]
RULE_FORMS = ["Bash({}:*)", "Bash({} *)", "Bash({}*)", "Bash({})"]
CARRIERS = [
    "{}", "cd web && {}", "{} | grep x", "PORT=3000 {}", "{} > /dev/null 2>&1 &", "nohup {}",
    "timeout 5 {}", "/usr/bin/{}", "bash -c '{}'", "true; {}", "{} || true", "echo a\n{}",
    "({} &); sleep 1", "{{ {} & }}; wait", "( cd web && {} & wait )", "setsid {} & sleep 1",
    "{{ true; {}; }} > /dev/null &", "(setsid {} &)",
]  # fmt: skip


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.tuples(
        st.sampled_from(COMMANDS),
        st.sampled_from(RULE_FORMS),
        st.sampled_from(CARRIERS),
        st.sampled_from(["", " --port 3000", " 8000"]),
    ),
    rule_lists,
    st.sampled_from(sorted(MODES)),
)
def test_a_line_claude_would_deny_or_ask_about_is_never_let_through(
    shape: tuple[str, str, str, str], allow: list[str], mode: str
) -> None:
    command, form, carrier, args = shape
    rule = form.format(command)
    line = carrier.format(command + ("" if form == "Bash({})" else args))
    denied = verdict(line, parse_rules([*allow, rule], [], [rule]), mode, rewritten=WRAPPED)
    assert denied in (Verdict.DENY, Verdict.UNSURE), (rule, line)
    asked = verdict(line, parse_rules([*allow, rule], [rule], []), mode, rewritten=WRAPPED)
    assert asked not in (Verdict.ALLOW, Verdict.NONE), (rule, line)
