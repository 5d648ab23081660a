#!/usr/bin/env bash
# Install the pinned coding-agent CLIs other than Claude Code (Codex, Gemini, Qwen Code,
# opencode) into
# .tools/<name> for the real-CLI tests of corral's agent adapters (surfaces/agents).
# Idempotent and silent when each pinned version is already there. A CLI that cannot be
# installed is reported and skipped: its tests skip and say so. To move a pin: change it,
# run the agent's end-to-end tests (tests/agents).
set -uo pipefail
cd "$(dirname "$0")/.."
# name  package  version  program
AGENTS="
codex @openai/codex 0.169.0 codex
gemini @google/gemini-cli 0.61.0 gemini
qwen @qwen-code/qwen-code 0.24.4 qwen
opencode opencode-ai 1.18.33 opencode
"
if ! command -v npm >/dev/null 2>&1; then
  echo "npm is missing: install Node.js 20 or newer to run the real agent CLI tests" >&2
  exit 0
fi
status=0
while read -r name package version program; do
  [ -n "$name" ] || continue
  prefix="$PWD/.tools/$name"
  bin="$prefix/node_modules/.bin/$program"
  stamp="$prefix/.installed-version"
  if [ "$(cat "$stamp" 2>/dev/null)" = "$version" ] && [ -x "$bin" ]; then
    continue
  fi
  echo "installing $package@$version into .tools/$name ..." >&2
  mkdir -p "$prefix"
  if ! npm install --prefix "$prefix" --no-save --no-audit --no-fund --loglevel=error \
      --engine-strict=false "$package@$version" >&2; then
    echo "could not install $package@$version: its tests will skip" >&2
    status=1
    continue
  fi
  # The check runs with a throw-away HOME: the CLIs write their config folders even for
  # --version, and the test command must not touch the user's own.
  scratch="$(mktemp -d)"
  if HOME="$scratch" CODEX_HOME="$scratch/.codex" "$bin" --version >/dev/null 2>&1; then
    echo "$version" > "$stamp"
  else
    echo "installed $package@$version but '$bin --version' fails: its tests will skip" >&2
    status=1
  fi
  rm -rf "$scratch"
done <<< "$AGENTS"
# A failed install must not stop the suite: the tests that need the CLI skip and say why.
[ "$status" = 0 ] || echo "some agent CLIs are missing (see above)" >&2
exit 0
