"""Invariants over the case table: more rules never make a verdict more permissive, and the
verdict does not depend on things Claude Code ignores."""

from __future__ import annotations

import pytest

from corral.core.claude.permissions import MODES, Rules, Verdict, parse_rules, verdict
from tests.core.claude.test_table import CASES, WRAPPED, Case

# How much a verdict lets through: a rewrite with "allow" skips the prompt, one without a
# decision is matched again by Claude, "ask" prompts; unsure leaves the line to Claude, which
# denies it only for a deny rule (then corral says deny) and otherwise asks at most.
RANK = {Verdict.ALLOW: 3, Verdict.NONE: 2, Verdict.ASK: 1, Verdict.UNSURE: 1, Verdict.DENY: 0}
EXTRA = ("Bash(npm:*)", "Bash(cd:*)", "Bash(* dev)", "Bash(echo hi)", "bash(x)", "Bash")


def _verdict(case: Case, **more: tuple[str, ...]) -> Verdict:
    lists = {"allow": case.allow, "ask": case.ask, "deny": case.deny}
    for kind, added in more.items():
        lists[kind] = (*lists[kind], *added)
    rules = parse_rules(lists["allow"], lists["ask"], lists["deny"])
    return verdict(case.line, rules, case.mode, rewritten=WRAPPED)


def test_every_verdict_is_reached_by_the_table() -> None:
    assert {case.expected for case in CASES.values()} == set(Verdict)


@pytest.mark.parametrize("extra", EXTRA)
def test_a_deny_or_ask_rule_never_makes_a_verdict_more_permissive(extra: str) -> None:
    for name, case in CASES.items():
        before = RANK[_verdict(case)]
        assert RANK[_verdict(case, deny=(extra,))] <= before, name
        assert RANK[_verdict(case, ask=(extra,))] <= before, name


def test_deny_all_leaves_every_line_to_claude() -> None:
    for name, case in CASES.items():
        assert _verdict(case, deny=("Bash",)) in (Verdict.DENY, Verdict.UNSURE), name


def test_ask_all_never_allows_or_rewrites_without_a_decision() -> None:
    for name, case in CASES.items():
        assert _verdict(case, ask=("Bash(*)",)) not in (Verdict.ALLOW, Verdict.NONE), name


def test_rules_of_other_tools_change_nothing() -> None:
    others = ("Read(./.env)", "Edit(**)", "WebFetch(domain:x.com)", "mcp__a__b", "Write")
    for name, case in CASES.items():
        for kind in ("allow", "ask", "deny"):
            assert _verdict(case, **{kind: others}) is case.expected, (name, kind)


def test_unknown_modes_and_unsure_rules_leave_every_line_alone() -> None:
    for name, case in CASES.items():
        rules = parse_rules(case.allow, case.ask, case.deny)
        for mode in ("", "Default", "bypass", None):
            assert verdict(case.line, rules, mode, rewritten=WRAPPED) is Verdict.UNSURE, name
        for mode in MODES:
            unsure = Rules(rules.allow, rules.ask, rules.deny, unsure="unreadable")
            assert verdict(case.line, unsure, mode, rewritten=WRAPPED) is Verdict.UNSURE, name


def test_modes_that_ask_a_classifier_only_take_rule_verdicts() -> None:
    for name, case in CASES.items():
        rules = parse_rules(case.allow, case.ask, case.deny)
        for mode in ("plan", "auto", "dontAsk"):
            assert verdict(case.line, rules, mode, rewritten=WRAPPED) is not Verdict.NONE, name
