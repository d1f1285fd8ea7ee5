#!/usr/bin/env bash
# Installs what `make run`, `make test` and `make bench` need on a fresh Debian
# machine of this kind (Go, Node.js and git are already there). Idempotent and
# quiet when everything is present. Debian packages need root; without root
# it says what is missing and fails.
set -euo pipefail
cd "$(dirname "$0")/../.."

need=()
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in protobuf-compiler git litmus rclone chromium nginx libnginx-mod-http-dav-ext; do
  have "$p" || need+=("$p")
done
if ((${#need[@]})); then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing Debian packages: ${need[*]} (run as root, or: sudo apt-get install -y ${need[*]})" >&2
    exit 1
  fi
  echo "setup: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# nginx from Debian may start itself on :80; the bench starts its own on loopback.
if command -v service >/dev/null && pgrep -x nginx >/dev/null 2>&1; then service nginx stop >/dev/null 2>&1 || true; fi

for d in contracts portal; do
  if [ -f "$d/package-lock.json" ] && [ ! -d "$d/node_modules" ]; then
    echo "setup: npm ci in $d"
    (cd "$d" && npm ci --no-audit --no-fund --loglevel=error)
  fi
done
