#!/usr/bin/env bash
# Builds the Kubernetes commands the Kubernetes test tiers run (kube-apiserver,
# kubectl, kubelet, kube-scheduler, kube-controller-manager, kube-proxy, etcd,
# CoreDNS; with the argument kube-router, kube-router instead; with the
# argument oauth2-proxy, oauth2-proxy instead: the SSO tests and the gateway
# image need it, see docs/sso.md) from the Go
# module proxy, using the wrapper modules under
# deploy/k8s/tools, into a cache outside the repository:
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/agentworkspace/k8s-<hash>/bin
#
# <hash> covers the Go version, the link flags and every go.mod/go.sum/*.go
# under deploy/k8s/tools, so a version bump builds a new set and CI on the
# same machine reuses the old one otherwise. Builds only what is missing, into a
# temporary directory renamed into place, so an interrupted build leaves
# nothing half-written. Prints the bin directory on stdout (and nothing
# else); progress goes to stderr.
#
# Cold: about 15 min of a contended 2-core machine (kube-apiserver alone is
# ~9 min of CPU); warm: well under a second.
set -euo pipefail
cd "$(dirname "$0")/../k8s/tools"
GO=${GO:-go}

k8s_version=v1.37.2
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean"
root=${XDG_CACHE_HOME:-$HOME/.cache}/agentworkspace
goid=$("$GO" env GOVERSION GOOS GOARCH | tr '\n' ' ')
# modhash DIR: the hash of one wrapper module's own files (not its
# subdirectories' modules), the Go version and the ldflags.
modhash() { { echo "$goid $ldflags"; find "$1" -maxdepth 1 -type f \( -name go.mod -o -name go.sum -o -name '*.go' \) | LC_ALL=C sort | xargs cat; } | sha256sum | cut -c1-16; }
hash=$(for m in . etcd coredns kube-router; do modhash "$m"; done | sha256sum | cut -c1-16)
cache=$root/k8s-$hash
bin=$cache/bin
mkdir -p "$bin"

log() { echo "k8s-tools: $*" >&2; }

# build DIR NAME PKG [LDFLAGS]: go build PKG from module DIR into $bin/NAME
# unless present. Each binary is kept per module hash too
# ($root/k8s-mod-<hash>/NAME), so changing one module (CoreDNS's plugins,
# say) rebuilds only its binaries; $bin gets hard links.
build() {
  local dir=$1 name=$2 pkg=$3 flags=${4:--s -w}
  [ -x "$bin/$name" ] && return 0
  local modcache
  modcache=$root/k8s-mod-$(modhash "$dir")
  mkdir -p "$modcache"
  if [ ! -x "$modcache/$name" ]; then
    log "building $name (cached in $modcache)"
    local start=$SECONDS tmp
    tmp=$(mktemp -d "$modcache/.build.XXXXXX")
    (cd "$dir" && CGO_ENABLED=0 "$GO" build -trimpath -ldflags "$flags" -o "$tmp/$name" "$pkg") || { rm -rf "$tmp"; log "building $name failed"; exit 1; }
    mv "$tmp/$name" "$modcache/$name"
    rm -rf "$tmp"
    log "built $name in $((SECONDS - start)) s"
  fi
  ln -f "$modcache/$name" "$bin/$name" 2>/dev/null || cp "$modcache/$name" "$bin/$name"
}

# oauth2-proxy only on request (the SSO tests, the gateway image): it prints
# its path. Cached by its own module's hash only, so it neither needs nor
# changes the Kubernetes set.
if [ "${1:-}" = oauth2-proxy ]; then
  bin=$root/oauth2-proxy-$(modhash oauth2-proxy)
  mkdir -p "$bin"
  v=$(cd oauth2-proxy && "$GO" list -m -f '{{.Version}}' github.com/oauth2-proxy/oauth2-proxy/v7) # the version go.mod pins
  build oauth2-proxy oauth2-proxy github.com/oauth2-proxy/oauth2-proxy/v7 "-s -w -X github.com/oauth2-proxy/oauth2-proxy/v7/pkg/version.VERSION=$v"
  echo "$bin/oauth2-proxy"
  exit 0
fi

# kube-router only on request (make test-k8s-netpol): it prints its path.
if [ "${1:-}" = kube-router ]; then
  build kube-router kube-router github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
  echo "$bin/kube-router"
  exit 0
fi

# Small ones first: the API server tier needs etcd, kubectl and the API server.
build etcd etcd .
build . kubectl k8s.io/kubernetes/cmd/kubectl "$ldflags"
build . kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$ldflags"
build . kubelet k8s.io/kubernetes/cmd/kubelet "$ldflags"
build . kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "$ldflags"
build . kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$ldflags"
build . kube-proxy k8s.io/kubernetes/cmd/kube-proxy "$ldflags"
build coredns coredns .

for b in etcd kubectl kube-apiserver kubelet kube-scheduler kube-controller-manager kube-proxy coredns; do
  [ -x "$bin/$b" ] || { log "$b missing after the build"; exit 1; }
done
echo "$bin"
