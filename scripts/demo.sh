#!/usr/bin/env bash
# corral's main job, as a short demo: start a real web server under corral, list it with
# its port, stop it, and show that nothing is left. Installs what it needs into .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
corral=".venv/bin/corral"
# The demo keeps its state in a folder of its own, so your real jobs are not touched.
export CORRAL_HOME="${CORRAL_HOME:-$(mktemp -d)/corral-demo}"
# a free loopback port (DEMO_PORT to choose one): a port something else holds would be refused
port="${DEMO_PORT:-$(.venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

step corral run -d -- python3 -m http.server "$port" --bind 127.0.0.1
out=$("$corral" run -d --json -- python3 -m http.server "$port" --bind 127.0.0.1)
echo "$out"
id=$(printf '%s' "$out" | .venv/bin/python -c 'import json,sys; print(json.load(sys.stdin)["data"]["id"][:8])')
for _ in $(seq 50); do  # the server needs a moment to open its port
  "$corral" ls --json | grep -q "\"ports\": \[$port\]" && break
  sleep 0.1
done
step corral ls
"$corral" ls
step corral stop "$id"
"$corral" stop "$id"
step corral ls --all
"$corral" ls --all
step corral clean
"$corral" clean
echo
echo "Done: the server ran under corral, was listed with its port, and was stopped whole."
