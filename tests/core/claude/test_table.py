"""Permission parity, case by case: rules x line x mode -> verdict.

Rows marked (cli) were checked against the real Claude Code CLI 2.1.332 with the original
line (see tests/claude/test_permission_parity.py for the few that run in the suite)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from corral.core.claude.permissions import Kind, Rules, Verdict, parse_rule, parse_rules, verdict

WRAPPED = "/opt/corral/bin/corral-run --task --job 00 -- 'x'"
NRD = ("Bash(npm run dev:*)",)
HTTP = ("Bash(python3 -m http.server:*)",)


@dataclass(frozen=True)
class Case:
    line: str
    expected: Verdict
    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    mode: str | None = "default"


A, K, D, N, U = Verdict.ALLOW, Verdict.ASK, Verdict.DENY, Verdict.NONE, Verdict.UNSURE

CASES = {
    # allow: the rule kinds (cli)
    "prefix-allows-bare": Case("npm run dev", A, allow=NRD),
    "prefix-allows-args": Case("npm run dev -- --port 3000", A, allow=NRD),
    "prefix-needs-word-end": Case("npm run devx", N, allow=NRD),
    "exact-allows-exact": Case("npm run dev", A, allow=("Bash(npm run dev)",)),
    "exact-not-with-args": Case("npm run dev -- --port 3000", N, allow=("Bash(npm run dev)",)),
    "exact-not-double-space": Case("npm  run dev", N, allow=("Bash(npm run dev)",)),
    "space-star-optional": Case("npm run dev", A, allow=("Bash(npm run dev *)",)),
    "space-star-args": Case("npm run dev -- --port 3000", A, allow=("Bash(npm run dev *)",)),
    "space-star-word-end": Case("npm run devx", N, allow=("Bash(npm run dev *)",)),
    "star-glued": Case("npm run devx", A, allow=("Bash(npm run dev*)",)),
    "star-http-server": Case(
        "python3 -m http.server 8000", A, allow=("Bash(python3 -m http.server*)",)
    ),
    "shorter-prefix": Case("npm run dev", A, allow=("Bash(npm:*)",)),
    "bash-allows-all": Case("npm run dev", A, allow=("Bash",)),
    "bash-star-allows-all": Case("npm run dev", A, allow=("Bash(*)",)),
    "case-sensitive": Case("npm run dev", N, allow=("Bash(NPM RUN DEV:*)",)),
    # allow: what Claude still asks about with a specific rule (cli)
    "background-amp-asks": Case("npm run dev &", N, allow=NRD),
    "env-prefix-asks": Case("PORT=3000 npm run dev", N, allow=NRD),
    "export-asks": Case("export PORT=1 && npm run dev", N, allow=NRD),
    "variable-asks": Case("npm run dev $X", N, allow=NRD),
    "redirect-to-file-asks": Case("npm run dev > dev.log 2>&1", N, allow=NRD),
    "redirect-dev-null": Case("npm run dev > /dev/null 2>&1", A, allow=NRD),
    "redirect-fd-dup": Case("npm run dev 2>&1", A, allow=NRD),
    "redirect-stdin-null": Case("npm run dev < /dev/null", A, allow=NRD),
    "quoted-word": Case('npm run "dev" --  --port 3000', N, allow=NRD),
    "nohup-seen-through": Case("nohup npm run dev", A, allow=NRD),
    "time-seen-through": Case("time npm run dev", A, allow=NRD),
    "exact-not-through-wrapper": Case("nohup npm run dev", N, allow=("Bash(npm run dev)",)),
    "path-checked-command": Case("touch ran", N, allow=("Bash(touch:*)",)),
    "cd-outside-with-rule": Case("cd /tmp && npm run dev", N, allow=("Bash(cd:*)", *NRD)),
    # `Bash(*)` would also allow the rewrite, which hides the `.git` write: unsure
    "protected-dir": Case("touch .git && npm run dev", U, allow=("Bash(*)",)),
    # compound lines: every subcommand must be allowed (cli)
    "and-both-allowed": Case("npm run dev && npm run dev", A, allow=NRD),
    "or-both-allowed": Case("npm run dev || npm run dev", A, allow=NRD),
    "newline-both-allowed": Case("npm run dev\nnpm run dev", A, allow=NRD),
    "pipe-both-allowed": Case("npm run dev | grep ready", N, allow=(*NRD, "Bash(grep:*)")),
    "pipe-one-not-allowed": Case("npm run dev | tee log", N, allow=NRD),
    "cd-without-callback": Case("cd web && npm run dev", N, allow=NRD),
    # match-all allow lets `&`, redirects and variables through (cli)
    "all-background": Case("npm run dev &", A, allow=("Bash(*)",)),
    "all-variable-redirect": Case("echo $HOME > ran", A, allow=("Bash",)),
    # deny (cli)
    "deny-prefix": Case("npm run dev", D, deny=NRD),
    "deny-compound": Case("cd web && npm run dev", D, deny=NRD),
    "deny-env-prefix": Case("PORT=3000 npm run dev", D, deny=NRD),
    "deny-pipe": Case("echo x | npm run dev", D, deny=NRD),
    "deny-background": Case("npm run dev > /dev/null &", D, deny=NRD),
    "deny-quoted": Case("npm run 'dev'", D, deny=NRD),
    "deny-wildcard": Case("npm run dev", D, deny=("Bash(npm *)",)),
    "deny-beats-allow": Case("npm run dev", D, allow=NRD, deny=("Bash(npm:*)",)),
    "deny-all": Case("echo hi", D, deny=("Bash(*)",)),
    # deny forms corral does not follow precisely: untouched (cli: some are denied)
    "deny-path": Case("/usr/bin/npm run dev", U, deny=NRD),
    "deny-timeout": Case("timeout 5 npm run dev", U, deny=NRD),
    "deny-bash-c": Case("bash -c 'npm run dev'", U, deny=NRD),  # cli: not denied
    "deny-other-case": Case("NPM RUN DEV", U, deny=NRD),  # cli: not denied
    "deny-exact-spaces": Case("npm  run dev", U, deny=("Bash(npm run dev)",)),  # cli: denied
    "deny-unrelated": Case("echo format", N, deny=("Bash(rm:*)",)),
    "deny-typo-kept": Case("echo hi", U, deny=("bash(echo:*)",)),  # cli: ignored
    "deny-space-kept": Case("echo hi", U, deny=("Bash (echo:*)",)),  # cli: ignored
    "deny-other-tool": Case("npm run dev", N, deny=("Read(./.env)", "WebFetch")),
    # ask (cli)
    "ask-prefix": Case("npm run dev", K, ask=NRD),
    "ask-beats-allow": Case("npm run dev", K, allow=NRD, ask=("Bash(npm:*)",)),
    "ask-compound": Case("cd web && npm run dev", K, ask=NRD),
    "ask-env-prefix": Case("PORT=3000 npm run dev", U, ask=NRD),  # cli: asked; corral unsure
    "ask-possible": Case("timeout 5 npm run dev", U, ask=NRD),
    "deny-beats-ask": Case("npm run dev", D, ask=NRD, deny=NRD),
    # modes (cli)
    "no-rule": Case("npm run dev", N),
    "bypass-ask": Case("npm run dev", K, ask=NRD, mode="bypassPermissions"),
    "bypass-deny": Case("npm run dev", D, deny=NRD, mode="bypassPermissions"),
    "bypass-no-rule": Case("npm run dev", N, mode="bypassPermissions"),
    "dontask-ask-denies": Case("npm run dev", D, ask=NRD, mode="dontAsk"),
    "dontask-allow": Case("npm run dev", A, allow=NRD, mode="dontAsk"),
    "dontask-no-rule": Case("npm run dev", U, mode="dontAsk"),
    # a deny rule that may match, next to an ask rule that does: denied either way
    "dontask-ask-maybe-deny": Case("npm", D, ask=("Bash",), deny=("Bash()",), mode="dontAsk"),
    "ask-maybe-deny": Case("npm", U, ask=("Bash",), deny=("Bash()",)),
    "accept-edits-allow": Case("npm run dev", A, allow=NRD, mode="acceptEdits"),
    "accept-edits-no-rule": Case("npm run dev", N, mode="acceptEdits"),
    "plan-allow": Case("npm run dev", U, allow=NRD, mode="plan"),  # a hook's allow is not a rule's
    "plan-no-rule": Case("npm run dev", U, mode="plan"),
    "auto-ask": Case("npm run dev", K, ask=NRD, mode="auto"),
    "auto-no-rule": Case("npm run dev", U, mode="auto"),
    "unknown-mode": Case("npm run dev", U, allow=NRD, mode="yolo"),
    "no-mode": Case("npm run dev", U, allow=NRD, mode=None),
    # subshells, groups and setsid: read with the mid-line reader; their commands are
    # matched as any line's, and only `Bash`/`Bash(*)` allows such a line
    "subshell-no-rule": Case("(npm run dev &); sleep 1", N),
    "group-no-rule": Case("{ npm run dev & }; sleep 1", N),
    "setsid-no-rule": Case("setsid npm run dev & sleep 1", N),
    "subshell-cd-no-rule": Case("( cd web && npm run dev & wait )", N),
    "subshell-deny": Case("(npm run dev &); sleep 1", D, deny=NRD),
    "group-deny": Case("{ sleep 1; npm run dev; } &", D, deny=NRD),
    "group-deny-other": Case("{ npm run dev & }; sleep 1", D, deny=("Bash(sleep:*)",)),
    "subshell-ask": Case("(npm run dev &); sleep 1", K, ask=NRD),
    "subshell-ask-dontask": Case("(npm run dev &)", D, ask=NRD, mode="dontAsk"),
    "setsid-deny-possible": Case("setsid npm run dev & sleep 1", U, deny=NRD),
    "setsid-ask-possible": Case("setsid npm run dev & sleep 1", U, ask=NRD),
    "subshell-allow-rule-not-enough": Case("(npm run dev &)", N, allow=NRD),
    "group-allow-all": Case("{ npm run dev & }; sleep 1", A, allow=("Bash",)),
    "subshell-protected": Case("(touch .git/x; npm run dev &)", U, allow=("Bash(*)",)),
    "subshell-auto": Case("(npm run dev &); sleep 1", U, mode="auto"),
    "subshell-wrapper-allowed": Case("(npm run dev &)", U, allow=("Bash(/opt/corral:*)",)),
    "subshell-unreadable-inside": Case("(npm run dev $(cat p) &)", U),
    # lines corral cannot read
    "unreadable": Case("npm run dev $(cat port)", U, allow=NRD),
    "empty": Case("", U),
    # an allow rule that could match the rewrite makes a rewrite without decision unsure
    "allow-matches-wrapper": Case("npm run dev &", U, allow=("Bash(/opt/corral/bin:*)",)),
    "allow-basename-wrapper": Case("npm run dev &", U, allow=("Bash(corral-run --task:*)",)),
    "allow-leading-star": Case("npm run dev &", U, allow=("Bash(* --help)",)),
    "allow-typo-unknown": Case("npm run dev &", U, allow=("bash(npm:*)",)),
    "bypass-ignores-wrapper": Case(
        "npm run dev &", N, allow=("Bash(corral-run:*)",), mode="bypassPermissions"
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_verdict(case: Case) -> None:
    rules = parse_rules(case.allow, case.ask, case.deny)
    assert verdict(case.line, rules, case.mode, rewritten=WRAPPED) is case.expected


def test_cd_inside_the_working_folders_needs_no_rule() -> None:
    rules = parse_rules(NRD, (), ())

    def check(line: str) -> Verdict:
        return verdict(line, rules, "default", rewritten=WRAPPED, cd_inside={"web"}.__contains__)

    assert check("cd web && npm run dev") is A
    outside = (
        "cd api && npm run dev",
        "cd web && cd web && npm run dev",
        "npm run dev && cd web",
        "cd - && npm run dev",
        "cd ~/web && npm run dev",
    )
    for line in outside:
        assert check(line) is N, line


def test_unsure_rules_are_never_rewritten() -> None:
    rules = Rules(unsure="cannot parse settings.json")
    assert verdict("npm run dev", rules, "default", rewritten=WRAPPED) is U


RULES = {
    "Bash": (Kind.ALL, ""),
    "Bash(*)": (Kind.ALL, ""),
    "Bash(npm run dev:*)": (Kind.PREFIX, "npm run dev"),
    "Bash(npm  run dev:*)": (Kind.PREFIX, "npm run dev"),
    "Bash(npm run dev)": (Kind.EXACT, "npm run dev"),
    "Bash(npm run dev *)": (Kind.WILDCARD, "npm run dev *"),
    "Bash(git * main)": (Kind.WILDCARD, "git * main"),
    "Bash(ls*:*)": (Kind.UNKNOWN, "ls*"),
    "Bash(a\\*b)": (Kind.UNKNOWN, "a\\*b"),
    "Bash(**/x)": (Kind.UNKNOWN, "**/x"),
    "Bash()": (Kind.UNKNOWN, ""),
    "Bash(:*)": (Kind.UNKNOWN, ""),
    "Bash( npm)": (Kind.UNKNOWN, " npm"),
    "bash(npm:*)": (Kind.UNKNOWN, ""),
    "Bash (npm:*)": (Kind.UNKNOWN, ""),
}


@pytest.mark.parametrize(("written", "parsed"), RULES.items(), ids=RULES.keys())
def test_parse_rule(written: str, parsed: tuple[Kind, str]) -> None:
    rule = parse_rule(written)
    assert rule is not None
    assert (rule.kind, rule.body) == parsed


@pytest.mark.parametrize("written", ["Read(./.env)", "WebFetch", "Edit", "mcp__x__y", "Bashful"])
def test_rules_of_other_tools_are_ignored(written: str) -> None:
    assert parse_rule(written) is None
