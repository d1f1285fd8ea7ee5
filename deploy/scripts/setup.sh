#!/usr/bin/env bash
# Installs what `make run`, `make test` and `make bench` need on a fresh Debian
# machine of this kind (Go, Node.js and git are already there), then checks
# that each thing the later steps rely on really works, failing with one line
# that names the package when it does not. Idempotent and quiet when
# everything is present. Debian packages need root; without root it says what
# is missing and fails.
#
# Every package is installed with --no-install-recommends, so each one's
# Recommends were checked for what the later steps need:
#   protobuf-compiler  recommends libprotobuf-dev: the well-known types
#                      (google/protobuf/timestamp.proto) that make generate
#                      imports, so it is listed explicitly.
#   chromium           recommends fonts-liberation: without any font the
#                      portal's screenshots and text layout come out empty.
#                      The rest (upower, udev, chromium-sandbox, ...) is not
#                      needed headless.
#   libnginx-mod-http-dav-ext  recommends nginx, listed explicitly.
#   litmus, rclone     nothing recommended that is needed.
#   docker.io, containerd, runc, iptables, containernetworking-plugins,
#   conntrack, debootstrap  (the Kubernetes tiers, make test-k8s): docker.io
#                      recommends apparmor, ca-certificates, git, xz-utils and
#                      cgroupfs-mount, none of which the tiers use (no
#                      AppArmor here; cgroups are mounted); containerd and
#                      runc are listed explicitly because the node tier runs
#                      them itself; debootstrap's recommends (arch-test,
#                      debian-archive-keyring, ...) are not needed for
#                      bookworm on Debian 12, whose keyring is present.
#   ipset              (kube-router, make test-k8s-netpol) nothing recommended.
#   gvfs-backends, gvfs-daemons, libglib2.0-bin, dbus-daemon  (gio, the GNOME
#                      gvfs WebDAV client Nautilus uses, driven by the keep
#                      tests under dbus-run-session): gvfs-backends holds
#                      gvfsd-dav and depends on gvfs-common/gvfs-libs and
#                      psmisc; gvfs-daemons depends on udisks2 and lsof (and
#                      libsystemd0, not systemd); their recommends
#                      (gnome-keyring, dbus, ...) are not needed: gio talks to
#                      gvfsd by D-Bus. udisks2's postinst would start its root
#                      daemon on a systemd host (and apt may upgrade systemd
#                      libraries alongside), so these are installed with a
#                      temporary /usr/sbin/policy-rc.d that exits 101: no
#                      service is started (any existing policy-rc.d is put
#                      back afterwards; a stub a killed run left is removed).
set -euo pipefail

# The policy-rc.d handling comes first so that its test can source just this
# part (AWF_POLICY_RC_D, for that test only, puts the file and its lock in a
# temporary directory instead of /usr/sbin and /run/lock).
policy=${AWF_POLICY_RC_D:-/usr/sbin/policy-rc.d}
if [ -n "${AWF_POLICY_RC_D:-}" ]; then
  policy_lock=$policy.lock
elif [ -d /run/lock ] && [ -w /run/lock ]; then
  policy_lock=/run/lock/awf-setup.lock
else
  policy_lock=/tmp/awf-setup.lock
fi
# Every stub no_services writes carries this line; a file with it is
# setup.sh's own, never an administrator's.
policy_marker='# setup.sh: no service starts'
policy_saved=""
is_stub() { [ -f "$1" ] && [ ! -L "$1" ] && grep -qF -- "$policy_marker" "$1" 2>/dev/null; }
# clear_stale_policy runs under the lock, so no other run is live: a stub
# found now was left by a run that was killed (SIGKILL, OOM, reboot) before
# it could restore. It is removed, and the policy that run had saved is put
# back; a saved stub (an older setup.sh, without the lock, saved another
# run's) is dropped, never restored.
clear_stale_policy() {
  local s
  if is_stub "$policy"; then rm -f "$policy"; fi
  for s in "$policy".awf-saved.*; do
    [ -e "$s" ] || [ -L "$s" ] || continue
    if is_stub "$s"; then
      rm -f "$s"
    elif ! [ -e "$policy" ] && ! [ -L "$policy" ]; then
      mv -f "$s" "$policy"
    fi
  done
}
# restore_policy puts back the policy-rc.d that was there before
# no_services (or removes the temporary one); also run on exit, so an
# interrupted install never leaves services blocked for good.
restore_policy() {
  [ -n "${policy_active:-}" ] || return 0
  rm -f "$policy"
  if [ -n "$policy_saved" ]; then mv -f "$policy_saved" "$policy"; fi
  policy_active="" policy_saved=""
}
# no_services runs "$@" with invoke-rc.d refusing every service start
# (policy-rc.d exit 101: action forbidden). Two runs at once are serialized
# by a lock (else the second would save the first's stub as the policy to
# put back); "$@" does not inherit the lock, so a process it leaves behind
# cannot hold it.
no_services() {
  local rc=0
  exec 9>>"$policy_lock"
  flock 9
  clear_stale_policy
  policy_saved=""
  if [ -e "$policy" ] || [ -L "$policy" ]; then
    policy_saved=$(mktemp "$policy.awf-saved.XXXXXX")
    if ! mv -f "$policy" "$policy_saved"; then
      rm -f "$policy_saved"
      exec 9>&-
      echo "setup: cannot move $policy aside" >&2
      return 1
    fi
  fi
  policy_active=1
  trap restore_policy EXIT
  printf '#!/bin/sh\n%s while gvfs and udisks2 are installed\nexit 101\n' "$policy_marker" >"$policy"
  chmod 755 "$policy"
  "$@" 9>&- || rc=$?
  restore_policy
  trap - EXIT
  exec 9>&-
  return "$rc"
}
# Sourced (by its test): only the functions above.
if [ "${BASH_SOURCE[0]}" != "$0" ]; then return 0; fi

cd "$(dirname "$0")/../.."

packages=(protobuf-compiler libprotobuf-dev git curl litmus rclone ripgrep cadaver zip unzip chromium fonts-liberation nginx libnginx-mod-http-dav-ext
  docker.io containerd runc iptables containernetworking-plugins conntrack debootstrap ipset)
# Installed with no service started (see above).
quiet_packages=(gvfs-backends gvfs-daemons libglib2.0-bin dbus-daemon)

have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing() {
  local p
  for p in "$@"; do
    have "$p" || printf '%s\n' "$p"
  done
}
mapfile -t need < <(missing "${packages[@]}")
mapfile -t need_quiet < <(missing "${quiet_packages[@]}")

if ((${#need[@]} + ${#need_quiet[@]})); then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing Debian packages: ${need[*]} ${need_quiet[*]} (run as root, or: sudo apt-get install -y --no-install-recommends ${need[*]} ${need_quiet[*]})" >&2
    exit 1
  fi
  echo "setup: installing ${need[*]} ${need_quiet[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  if ((${#need[@]})); then
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
  if ((${#need_quiet[@]})); then
    no_services apt-get install -y -qq --no-install-recommends "${need_quiet[@]}" >/dev/null
  fi
fi
# nginx from Debian may start itself on :80; the bench starts its own on loopback.
if command -v service >/dev/null && pgrep -x nginx >/dev/null 2>&1; then service nginx stop >/dev/null 2>&1 || true; fi

# npm ci again whenever package-lock.json changed since the last install
# (a checkout that pulled a new dependency), not only when node_modules is
# missing: the stamp holds the lock file's hash.
for d in contracts portal; do
  [ -f "$d/package-lock.json" ] || continue
  sum=$(sha256sum "$d/package-lock.json" | cut -d' ' -f1)
  if [ ! -d "$d/node_modules" ] || [ "$(cat "$d/node_modules/.awf-lock-sha256" 2>/dev/null)" != "$sum" ]; then
    echo "setup: npm ci in $d"
    (cd "$d" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$sum" >"$d/node_modules/.awf-lock-sha256"
  fi
done

# Verify what the later steps rely on, each with one line naming the package.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "setup: $*" >&2; exit 1; }

printf 'syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\nmessage M { google.protobuf.Timestamp t = 1; }\n' >"$tmp/m.proto"
protoc -I "$tmp" --descriptor_set_out="$tmp/m.pb" "$tmp/m.proto" 2>"$tmp/protoc.err" ||
  fail "protoc cannot find google/protobuf/timestamp.proto: install libprotobuf-dev (and protobuf-compiler)"

chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$tmp/chromium" --dump-dom 'data:text/html,<p>ok</p>' >"$tmp/dom" 2>/dev/null ||
  fail "chromium does not start headless: install chromium"
grep -q '<p>ok</p>' "$tmp/dom" || fail "chromium started but rendered nothing: install chromium"
fc-list 2>/dev/null | grep -qi liberation || fail "no Liberation font for chromium: install fonts-liberation"

command -v litmus >/dev/null && litmus --version >/dev/null 2>&1 || fail "litmus does not run: install litmus"
rclone version >/dev/null 2>&1 || fail "rclone does not run: install rclone"
# cadaver --version exits 255 after printing its version.
{ cadaver --version 2>/dev/null || true; } | grep -q "^cadaver " || fail "cadaver does not run: install cadaver"
gio version >/dev/null 2>&1 && dbus-run-session --version >/dev/null 2>&1 || fail "gio or dbus-run-session does not run: install libglib2.0-bin dbus-daemon"
[ -x /usr/libexec/gvfsd-dav ] || fail "gvfs's WebDAV backend is missing: install gvfs-backends"

mods=""
for m in /usr/lib/nginx/modules/ngx_http_dav_ext_module.so /usr/share/nginx/modules/ngx_http_dav_ext_module.so; do
  [ -f "$m" ] && mods="$m"
done
[ -n "$mods" ] || fail "nginx's dav-ext module is missing: install libnginx-mod-http-dav-ext"
# Start nginx with the module on a loopback port and ask it for a PROPFIND,
# as the bench does (a few random ports, in case one is taken).
mkdir -p "$tmp/nginx/logs" "$tmp/www"
chmod 755 "$tmp" "$tmp/www"  # nginx workers run as nobody when started as root
nginx_ok=""
for _ in 1 2 3 4 5; do
  port=$((20000 + RANDOM % 30000))
  cat >"$tmp/nginx/nginx.conf" <<EOF
load_module $mods;
daemon off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/logs/error.log;
events {}
http {
  access_log off;
  client_body_temp_path $tmp/nginx;
  server { listen 127.0.0.1:$port; location / { root $tmp/www; dav_ext_methods PROPFIND OPTIONS; } }
}
EOF
  nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" 2>"$tmp/nginx.err" &
  npid=$!
  for _ in $(seq 50); do
    code=$(curl -s -o /dev/null -w '%{http_code}' -X PROPFIND -H 'Depth: 0' "http://127.0.0.1:$port/" 2>/dev/null || true)
    [ "$code" = 207 ] && { nginx_ok=1; break; }
    kill -0 "$npid" 2>/dev/null || break
    sleep 0.1
  done
  kill "$npid" 2>/dev/null || true
  wait "$npid" 2>/dev/null || true
  [ -n "$nginx_ok" ] && break
done
[ -n "$nginx_ok" ] || fail "nginx with dav-ext does not answer PROPFIND: install nginx and libnginx-mod-http-dav-ext ($(tail -n1 "$tmp/nginx.err" 2>/dev/null))"

# The Kubernetes tiers (kubectl and the rest are built by make k8s-tools).
dockerd --version >/dev/null 2>&1 && docker --version >/dev/null 2>&1 || fail "dockerd/docker do not run: install docker.io"
containerd --version >/dev/null 2>&1 && ctr --version >/dev/null 2>&1 || fail "containerd does not run: install containerd"
runc --version >/dev/null 2>&1 || fail "runc does not run: install runc"
iptables --version >/dev/null 2>&1 || fail "iptables does not run: install iptables"
for p in bridge host-local loopback; do [ -x "/usr/lib/cni/$p" ] || fail "CNI plugin $p is missing: install containernetworking-plugins"; done
conntrack --version >/dev/null 2>&1 || fail "conntrack does not run: install conntrack"
debootstrap --version >/dev/null 2>&1 || fail "debootstrap does not run: install debootstrap"
ipset --version >/dev/null 2>&1 || fail "ipset does not run: install ipset"
