#!/usr/bin/env bash
# Makes stand-ins for the Dockerfiles' base images on a machine with no
# container registry, and imports them into the Docker engine at $DOCKER_HOST:
#
#   awf-base/debian:bookworm   debootstrap --variant=minbase bookworm (for debian:12.12-slim)
#   awf-base/golang:bookworm   the same plus this machine's /usr/local/go (for golang:1.26.8-bookworm)
#   awf-base/node:bookworm     the same plus this machine's node and npm (for node:20.20.2-bookworm-slim)
#   awf-base/static:nonroot    scratch with passwd/group (nonroot 65532), the CA bundle and /tmp
#                              (for gcr.io/distroless/static-debian12:nonroot)
#
# The debootstrap root file system is cached outside the repository, in
# ${XDG_CACHE_HOME:-$HOME/.cache}/agentworkspace/base-<hash>/ (hash of this
# script, the suite and the mirror), so it is made once per machine (about
# 100-150 s, 113 MB); importing takes a few seconds and is skipped for images
# the engine already has. The host's CA bundle goes into each image because
# this network intercepts TLS with a CA only the host trusts.
# Prints the --build-arg flags for images.sh on stdout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
suite=bookworm
mirror=${DEBIAN_MIRROR:-$(awk '/^URIs:/{print $2; exit} /^deb /{print $2; exit}' /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list 2>/dev/null | head -n1)}
mirror=${mirror:-http://deb.debian.org/debian}
log() { echo "base-images: $*" >&2; }

hash=$( { cat "$here/base-images.sh"; echo "$suite $mirror"; } | sha256sum | cut -c1-16)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/agentworkspace/base-$hash
rootfs=$cache/rootfs
mkdir -p "$cache"

if [ ! -f "$cache/rootfs.done" ]; then
  command -v debootstrap >/dev/null || { log "debootstrap is missing: install debootstrap (make setup)"; exit 1; }
  [ "$(id -u)" -eq 0 ] || { log "debootstrap needs root"; exit 1; }
  rm -rf "$rootfs" "$cache/rootfs.tmp"
  log "debootstrap --variant=minbase $suite from $mirror (once per machine, cached in $cache)"
  start=$SECONDS
  debootstrap --variant=minbase "$suite" "$cache/rootfs.tmp" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
    { log "debootstrap failed (see $cache/debootstrap.log)"; tail -n5 "$cache/debootstrap.log" >&2; exit 1; }
  # No apt caches or logs in the base: the images stay small.
  rm -rf "$cache/rootfs.tmp"/var/cache/apt/archives/*.deb "$cache/rootfs.tmp"/var/lib/apt/lists/* "$cache/rootfs.tmp"/var/log/* "$cache/rootfs.tmp"/debootstrap
  mv "$cache/rootfs.tmp" "$rootfs"
  touch "$cache/rootfs.done"
  log "debootstrap took $((SECONDS - start)) s"
fi

ca=/etc/ssl/certs/ca-certificates.crt
[ -f "$ca" ] || { log "no CA bundle at $ca: install ca-certificates"; exit 1; }
extra=$(mktemp -d)
trap 'rm -rf "$extra"' EXIT
mkdir -p "$extra/etc/ssl/certs" "$extra/tmp"
cp "$ca" "$extra/etc/ssl/certs/ca-certificates.crt"
chmod 1777 "$extra/tmp"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$extra/passwd"
printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$extra/group"
mkdir -p "$extra/static/etc" "$extra/static/home/nonroot" "$extra/static/etc/ssl/certs"
cp "$extra/passwd" "$extra/group" "$extra/static/etc/"
cp "$ca" "$extra/static/etc/ssl/certs/ca-certificates.crt"
cp -a "$extra/tmp" "$extra/static/tmp"
chown 65532:65532 "$extra/static/home/nonroot"

path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# import NAME TAR-ARGS... : docker import of a tar stream unless NAME exists
# (the tag carries the cache hash and the host tool's version, so a new one
# is imported when either changes).
import() {
  local name=$1; shift
  local changes=()
  while [ "${1:-}" = --change ]; do changes+=(--change "$2"); shift 2; done
  if docker image inspect "$name" >/dev/null 2>&1; then return 0; fi
  log "importing $name"
  tar --numeric-owner -c "$@" | docker import "${changes[@]}" - "$name" >/dev/null
}

go_version=$(/usr/local/go/bin/go env GOVERSION)
node_version=$(node --version)
debian=awf-base/debian:$suite-$hash
golang=awf-base/golang:$go_version-$hash
nodeimg=awf-base/node:$node_version-$hash
static=awf-base/static:nonroot-$hash

import "$debian" --change "ENV PATH=$path" -C "$rootfs" .
import "$golang" --change "ENV PATH=/usr/local/go/bin:/go/bin:$path" --change "ENV GOPATH=/go" \
  --change "ENV GOTOOLCHAIN=local" --change "WORKDIR /go" \
  -C "$rootfs" . -C / usr/local/go -C "$extra" etc/ssl/certs/ca-certificates.crt
import "$nodeimg" --change "ENV PATH=$path" --change "ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt" \
  -C "$rootfs" . -C / usr/bin/node usr/lib/node_modules/npm usr/bin/npm -C "$extra" etc/ssl/certs/ca-certificates.crt
import "$static" --change "ENV PATH=$path" --change "USER 65532:65532" -C "$extra/static" .

echo "--build-arg GO_IMAGE=$golang --build-arg BASE_IMAGE=$debian --build-arg NODE_IMAGE=$nodeimg --build-arg STATIC_IMAGE=$static"
