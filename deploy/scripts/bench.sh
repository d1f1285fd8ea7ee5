#!/usr/bin/env bash
# make bench: every benchmark, each beside its baseline in the same run.
# Figures and how to read them: docs/BENCHMARKS.md. Loopback only, bounded.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${BENCH_OUT:-bin/bench}"
mkdir -p "$out"

echo "== davfs vs raw os/x/sys/unix (go test -bench) =="
go test ./davfs/ -run '^$' -bench '(ListPage500of10k|Read1MiB|Update1MiB|Stat10k)' -count "${BENCH_COUNT:-5}" | tee "$out/davfs.txt"
awk -f deploy/scripts/davfs-ratio.awk "$out/davfs.txt" | tee "$out/davfs-ratios.md"

if [ -d deploy/bench/davbench ]; then
  echo "== WebDAV: sidecar vs x/net/webdav vs nginx =="
  go run ./deploy/bench/davbench | tee "$out/webdav.txt"
fi

if [ -d deploy/bench/gatewaybench ]; then
  echo "== gateway vs direct sidecar =="
  go run ./deploy/bench/gatewaybench | tee "$out/gateway.txt"
  echo "== the same with the gateway as deploy/k8s runs it (1 CPU: GOMAXPROCS=1) =="
  go run ./deploy/bench/gatewaybench -gateway-procs 1 | tee "$out/gateway-1cpu.txt"
fi
if [ -d deploy/bench/ckptbench ]; then
  echo "== checkpoints vs tar -c; then the 199,000-file project: each call's time and the sidecar's peak RSS, with and without GOMEMLIMIT =="
  go run ./deploy/bench/ckptbench | tee "$out/checkpoints.txt"
fi
if [ -d deploy/bench/watchbench ]; then
  echo "== live changes: write -> event at a subscriber vs raw fsnotify; 100 subscribers' memory; a watched 200,000-entry folder with a writer vs raw fsnotify =="
  go run ./deploy/bench/watchbench | tee "$out/watch.txt"
fi
echo "== agent discovery: 10,000 EndpointSlices in a real kube-apiserver vs the static registry of the same size =="
flock /tmp/awf-k8s.lock make bench-discovery
if [ -d deploy/bench/searchbench ]; then
  echo "== content search: the sidecar's Search stream and davfs/search vs ripgrep (rg -F --no-ignore --hidden -c), 10,000 files, 100 MiB, warm cache =="
  go run ./deploy/bench/searchbench | tee "$out/search.txt"
fi
if [ -d deploy/bench/usagebench ]; then
  echo "== usage: GetUsage of a fresh 10,000-file 100 MiB project vs du -s; then from the cache =="
  go run ./deploy/bench/usagebench | tee "$out/usage.txt"
fi
if [ -d deploy/bench/zipbench ]; then
  echo "== folder download (streamed zip) vs zip -qr -1 to /dev/null; the sidecar's peak memory growth =="
  go run ./deploy/bench/zipbench | tee "$out/zip.txt"
fi
echo "bench: results in $out/"
