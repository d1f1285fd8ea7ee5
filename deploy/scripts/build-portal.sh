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
# Precompressed copies the gateway serves to clients that accept them
# (gateway/internal/portal): gzip always, brotli where the tool is installed.
text_files() { find "$out" -type f \( -name '*.js' -o -name '*.css' -o -name '*.html' -o -name '*.svg' -o -name '*.json' -o -name '*.txt' \); }
text_files | xargs -r gzip -9 -k -n -f
if command -v brotli >/dev/null 2>&1; then
  text_files | xargs -r brotli -q 11 -k -f
fi
