#!/usr/bin/env bash
# Builds the two container images, agent-sidecar:$IMAGE_TAG and
# agent-gateway:$IMAGE_TAG (IMAGE_TAG defaults to dev), and saves them as
# docker-archive tarballs in bin/images/ (what the Kubernetes tiers load).
#
# With a reachable Docker engine ($DOCKER_HOST or the system socket) it
# builds there from the Dockerfiles' registry base images. Without one (this
# project's machines: no systemd, no registry) and as root, it starts a
# private dockerd for the duration of the build:
#   - its own data root in ${XDG_CACHE_HOME:-$HOME/.cache}/agentworkspace/docker
#     (kept, so layers and base images are reused by the next build),
#   - its own exec root, socket and pid file in a temporary directory,
#   - --bridge=none --iptables=false --ip6tables=false --ip-forward=false
#     --ip-masq=false: it never touches the host's network configuration,
#   - in a private mount namespace, so its mounts vanish with it,
# and stops it by PID on exit, success or failure. Base images then come
# from deploy/scripts/base-images.sh (debootstrap stand-ins, cached).
# IMAGE_BASES=registry|local overrides the choice of bases.
set -euo pipefail
cd "$(dirname "$0")/../.."
tag="${IMAGE_TAG:-dev}"
out=${IMAGE_OUT:-bin/images}
log() { echo "images: $*" >&2; }

bases=${IMAGE_BASES:-}
if [ -z "${DOCKER_HOST:-}" ] && ! { command -v docker >/dev/null && timeout 10 docker info >/dev/null 2>&1; }; then
  command -v dockerd >/dev/null || { log "no Docker engine and no dockerd: install docker.io (make setup)"; exit 1; }
  [ "$(id -u)" -eq 0 ] || { log "no Docker engine is reachable, and a private dockerd needs root"; exit 1; }
  data=${XDG_CACHE_HOME:-$HOME/.cache}/agentworkspace/docker
  mkdir -p "$data"
  run=$(mktemp -d /tmp/awf-dockerd.XXXXXX)
  exec 9>"$data.lock"
  timeout 600 flock 9 || { log "another build holds $data.lock"; exit 1; }
  dpid=""
  stop() {
    local rc=$?
    if [ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null; then
      kill -TERM "$dpid" 2>/dev/null || true
      for _ in $(seq 150); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.2; done
      kill -KILL "$dpid" 2>/dev/null || true
      wait "$dpid" 2>/dev/null || true
    fi
    # The engine's own containerd, should it outlive dockerd (by PID, from its pid file).
    for pf in "$run"/exec/containerd/containerd.pid "$run"/containerd.pid; do
      [ -f "$pf" ] && kill -KILL "$(cat "$pf")" 2>/dev/null || true
    done
    rm -rf "$run"
    exit $rc
  }
  trap stop EXIT INT TERM
  unshare --mount --propagation private \
    dockerd --data-root "$data" --exec-root "$run/exec" -H "unix://$run/docker.sock" --pidfile "$run/docker.pid" \
    --bridge=none --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false --userland-proxy=false \
    --log-level=warn >"$run/dockerd.log" 2>&1 &
  dpid=$!
  export DOCKER_HOST="unix://$run/docker.sock"
  for i in $(seq 300); do
    docker info >/dev/null 2>&1 && break
    kill -0 "$dpid" 2>/dev/null || { log "dockerd exited:"; tail -n 20 "$run/dockerd.log" >&2; exit 1; }
    [ "$i" = 300 ] && { log "dockerd not ready after 60 s"; tail -n 20 "$run/dockerd.log" >&2; exit 1; }
    sleep 0.2
  done
  bases=${bases:-local}
fi
bases=${bases:-registry}

args=()
if [ "$bases" = local ]; then
  read -r -a args < <(deploy/scripts/base-images.sh)
fi
export DOCKER_BUILDKIT=0
mkdir -p "$out"
for img in agent-sidecar agent-gateway; do
  start=$SECONDS
  docker build --network host "${args[@]}" -f "deploy/docker/$img.Dockerfile" -t "$img:$tag" . >"$out/$img.build.log" 2>&1 ||
    { log "building $img failed (full log: $out/$img.build.log):"; tail -n 30 "$out/$img.build.log" >&2; exit 1; }
  log "$img:$tag built ($((SECONDS - start)) s)"
done
for img in agent-sidecar agent-gateway; do
  docker save -o "$out/$img.tar.tmp" "$img:$tag"
  mv "$out/$img.tar.tmp" "$out/$img.tar"
  log "$img:$tag saved to $out/$img.tar ($(docker image inspect -f '{{.Size}}' "$img:$tag" | awk '{printf "%.0f MB", $1/1e6}'))"
done
