#!/usr/bin/env bash
# The whole test suite: installs what it needs, then lint, format, types and tests.
# Extra arguments go to pytest (e.g. scripts/test.sh -k supervisor).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh dev
scripts/system-deps.sh
[ -x scripts/install-claude.sh ] && scripts/install-claude.sh
[ -x scripts/install-agents.sh ] && scripts/install-agents.sh
export PATH="$PWD/.venv/bin:$PATH"
echo "== ruff check" && ruff check .
echo "== ruff format --check" && ruff format --check .
echo "== mypy" && mypy
echo "== pytest"
exec pytest -n "${CORRAL_TEST_WORKERS:-auto}" "$@"
