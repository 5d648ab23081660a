#!/usr/bin/env bash
# Install the pinned Claude Code CLI into .tools/claude for the real-CLI tests.
# Idempotent and silent when the pinned version is already there. To move the pin:
# `npm view @anthropic-ai/claude-code version`, change VERSION, run the slow tests.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=2.1.332
prefix="$PWD/.tools/claude"
bin="$prefix/node_modules/.bin/claude"
stamp="$prefix/.installed-version"
if [ "$(cat "$stamp" 2>/dev/null)" = "$VERSION" ] && [ -x "$bin" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "npm is missing: install Node.js 20 or newer to run the real Claude Code tests" >&2
  exit 1
fi
echo "installing @anthropic-ai/claude-code@$VERSION into .tools/claude ..." >&2
mkdir -p "$prefix"
# The package declares node >= 22 but its postinstall only links a native binary (from a
# platform package), which works with node 20 too; engine-strict would refuse it.
npm install --prefix "$prefix" --no-save --no-audit --no-fund --loglevel=error \
  --engine-strict=false "@anthropic-ai/claude-code@$VERSION" >&2
# The check runs with a throw-away HOME: the CLI writes ~/.claude.json and ~/.claude/ even
# for --version, and the test command must not touch the user's own.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
if ! HOME="$scratch" CLAUDE_CONFIG_DIR="$scratch/.claude" "$bin" --version >/dev/null 2>&1; then
  echo "installed Claude Code $VERSION but '$bin --version' fails; see the npm output above" >&2
  exit 1
fi
echo "$VERSION" > "$stamp"
