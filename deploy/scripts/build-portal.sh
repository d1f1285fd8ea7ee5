#!/usr/bin/env bash
# Builds portal/ with Vite and copies the result where the gateway embeds it.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=gateway/internal/portal/dist
if [ ! -f portal/package.json ]; then
  echo "build-portal: portal/ not there yet; the gateway serves its minimal page"
  exit 0
fi
(cd portal && { [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error; } && npm run --silent build)
find "$out" -mindepth 1 ! -name .keep -delete
cp -r portal/dist/. "$out/"
