#!/usr/bin/env bash
# Debian packages the tests need (tmux for the tmux backend, zsh for the zsh users' cases of
# the shell prefix and the mid-line rewrite). Idempotent: installs only what is missing.
set -euo pipefail
need=()
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v zsh >/dev/null 2>&1 || need+=(zsh)
[ ${#need[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "missing ${need[*]} and no apt-get: install them with your package manager" >&2
  exit 1
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing ${need[*]} from Debian's packages ..." >&2
$sudo apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >&2
