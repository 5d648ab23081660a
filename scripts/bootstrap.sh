#!/usr/bin/env bash
# Make .venv with corral installed (editable). Idempotent: re-installs only when
# pyproject.toml changed since the last successful install.
#   scripts/bootstrap.sh        runtime only
#   scripts/bootstrap.sh dev    runtime plus test and lint tools
set -euo pipefail
cd "$(dirname "$0")/.."
extra="${1:-}"
py="${PYTHON:-python3}"
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "corral needs Python 3.11 or newer; '$py' is older or missing (set PYTHON=...)" >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$py" -m venv .venv
want="$(sha256sum pyproject.toml | cut -c1-16)-${extra}"
stamp=.venv/.corral-installed
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "installing corral${extra:+ with $extra tools} into .venv ..." >&2
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >&2
  if [ -n "$extra" ]; then spec=".[$extra]"; else spec="."; fi
  .venv/bin/python -m pip install -q --disable-pip-version-check -e "$spec" >&2
  echo "$want" > "$stamp"
fi
# Bytecode for corral's own modules, as `pip install .` leaves it: an editable install has
# none until a run writes it, and never where PYTHONDONTWRITEBYTECODE is set, so every hook,
# status line and `corral tui` would compile its modules again at each start. Quick when
# nothing changed (compileall skips what is current).
.venv/bin/python -m compileall -q src/corral >/dev/null
