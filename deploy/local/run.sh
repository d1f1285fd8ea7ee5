#!/usr/bin/env bash
# The local stack behind `make run`: two agents' sidecars (codex-a, codex-b)
# and the gateway with the portal, on loopback. Data lives in .local/ (git
# ignored) and is kept across runs; a sample project and a sample skill are
# created on the first start only. Every run prints a fresh admin token; only
# its SHA-256 is written to the generated gateway config. The sidecars serve
# only mutual TLS: the first start makes a CA, a certificate per sidecar and
# the gateway's client certificate in .local/config/pki (agent-gateway certs;
# later starts add only what is missing). Ctrl-C stops all.
#
# Environment (all optional):
#   GATEWAY_PORT=8080
#   CODEX_A_RPC_PORT=19091 CODEX_A_DAV_PORT=19092 CODEX_A_METRICS_PORT=19191
#   CODEX_B_RPC_PORT=19093 CODEX_B_DAV_PORT=19094 CODEX_B_METRICS_PORT=19192
#   STATE_DIR=.local     (a second stack beside the first: other ports and another STATE_DIR)
#   WEBDAV_WRITABLE=1    (the writable WebDAV view)
# `run.sh --check-ports` only checks that every port is free (make run calls
# it before building, so a taken port stops it at once).
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
state="${STATE_DIR:-$root/.local}"
case "$state" in /*) ;; *) state="$root/$state" ;; esac
bin="$root/bin"
gw_port="${GATEWAY_PORT:-8080}"
agents=(codex-a codex-b)
rpc_ports=("${CODEX_A_RPC_PORT:-19091}" "${CODEX_B_RPC_PORT:-19093}")
dav_ports=("${CODEX_A_DAV_PORT:-19092}" "${CODEX_B_DAV_PORT:-19094}")
met_ports=("${CODEX_A_METRICS_PORT:-19191}" "${CODEX_B_METRICS_PORT:-19192}")
writable=false
case "${WEBDAV_WRITABLE:-}" in 1 | true | yes) writable=true ;; "" | 0 | false | no) ;; *)
  echo "run: WEBDAV_WRITABLE must be 1 or 0, got \"$WEBDAV_WRITABLE\"" >&2; exit 2 ;;
esac

# Every port first, before anything is built or started.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
check_port() { # port variable
  case "$1" in '' | *[!0-9]*) echo "run: $2 must be a port number, got \"$1\"" >&2; exit 2 ;; esac
  port_free "$1" || { echo "run: port 127.0.0.1:$1 ($2) is in use (another make run?): stop it, or set $2 to a free port" >&2; exit 1; }
}
check_port "$gw_port" GATEWAY_PORT
check_port "${rpc_ports[0]}" CODEX_A_RPC_PORT; check_port "${dav_ports[0]}" CODEX_A_DAV_PORT; check_port "${met_ports[0]}" CODEX_A_METRICS_PORT
check_port "${rpc_ports[1]}" CODEX_B_RPC_PORT; check_port "${dav_ports[1]}" CODEX_B_DAV_PORT; check_port "${met_ports[1]}" CODEX_B_METRICS_PORT
all_ports=("$gw_port" "${rpc_ports[@]}" "${dav_ports[@]}" "${met_ports[@]}")
if [ "$(printf '%s\n' "${all_ports[@]}" | sort -u | wc -l)" -ne "${#all_ports[@]}" ]; then
  echo "run: two of the ports are the same (${all_ports[*]}): give each its own" >&2; exit 2
fi
[ "${1:-}" = "--check-ports" ] && exit 0

for b in agent-sidecar agent-gateway; do
  [ -x "$bin/$b" ] || { echo "run: $bin/$b missing: run make run (it builds first)" >&2; exit 1; }
done

mkdir -p "$state"
first_start=()
for a in "${agents[@]}"; do
  d="$state/agents/$a"
  if [ ! -d "$d" ]; then
    first_start+=("$a")
    mkdir -p "$d/projects" "$d/codex-home/skills"
    # Sample content, first start only.
    mkdir -p "$d/projects/sample"
    printf '# sample (%s)\n\nA sample project created by make run. Edit me in the portal.\n' "$a" > "$d/projects/sample/README.md"
    printf 'def hello():\n    return "hello from %s"\n' "$a" > "$d/projects/sample/main.py"
    git init -q --initial-branch=main "$d/projects/sample"
    mkdir -p "$d/codex-home/skills/example"
    printf -- '---\nname: example\ndescription: A sample skill.\n---\n\nSay hello.\n' > "$d/codex-home/skills/example/SKILL.md"
    printf '# AGENTS.md for %s\n\nGlobal instructions for this agent.\n' "$a" > "$d/codex-home/AGENTS.md"
    # A secret the product must never show (try to find it in the portal).
    printf '{"note": "local stand-in for auth.json; never reachable"}\n' > "$d/codex-home/auth.json"
  fi
  # The checkpoint store lives outside the agent's tree (projects/,
  # codex-home/), where the agent cannot rewrite its own undo history. A
  # store an earlier version kept in projects/ moves there once.
  if [ -d "$d/projects/.agent-checkpoints" ] && [ ! -e "$d/checkpoints" ]; then
    mv "$d/projects/.agent-checkpoints" "$d/checkpoints"
    echo "run: moved $a's checkpoint store out of projects/ to $d/checkpoints"
  fi
  mkdir -p "$d/checkpoints"
done

# Run the sidecars unprivileged when started as root, like in the pod.
as_user=()
if [ "$(id -u)" -eq 0 ]; then
  chown -R 1000:1000 "$state/agents"
  as_user=(setpriv --reuid 1000 --regid 1000 --clear-groups --)
fi
# Each process in a session of its own: Ctrl-C reaches this script only, and
# it stops them (so the end is "stopped", not "a process exited").
detach=()
command -v setsid >/dev/null 2>&1 && detach=(setsid)

token="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
token_sha="$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)"
mkdir -p "$state/config"
# Sessions are sealed with a key kept in the state dir, so signing in
# survives a restart of make run.
key_file="$state/config/session.key"
[ -s "$key_file" ] || (umask 077 && head -c 32 /dev/urandom | base64 > "$key_file")
# Mutual TLS between the gateway and the sidecars (generated once, kept).
pki="$state/config/pki"
cert_args=()
for a in "${agents[@]}"; do cert_args+=(--agent "$a"); done
"$bin/agent-gateway" certs --dir "$pki" "${cert_args[@]}" >/dev/null
chmod 0755 "$pki"
if [ "$(id -u)" -eq 0 ]; then
  for a in "${agents[@]}"; do chown 1000:1000 "$pki/sidecar-$a.key"; done
fi
pids=()
stopping=0
stop_all() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
on_signal() {
  trap - INT TERM EXIT
  stopping=1
  stop_all
  echo "run: stopped"
  exit 0
}
on_exit() {
  local rc=$?
  trap - INT TERM EXIT
  stop_all
  exit "$rc"
}
trap on_signal INT TERM
trap on_exit EXIT

agent_yaml=""
for i in "${!agents[@]}"; do
  a="${agents[$i]}"
  rpc="${rpc_ports[$i]}"; dav="${dav_ports[$i]}"; met="${met_ports[$i]}"
  cfg="$state/config/sidecar-$a.yaml"
  cat > "$cfg" <<YAML
rpcServer:     { address: "127.0.0.1:$rpc" }
davServer:     { address: "127.0.0.1:$dav" }
metricsServer: { address: "127.0.0.1:$met" }
log:           { level: info, format: json }
services:
  project:
    projectsRootDir: "$state/agents/$a/projects"
    codexHomeDir: "$state/agents/$a/codex-home"
  checkpoints:
    dir: "$state/agents/$a/checkpoints"
tls:
  certFile: "$pki/sidecar-$a.crt"
  keyFile: "$pki/sidecar-$a.key"
  clientCAFile: "$pki/ca.crt"
YAML
  chmod 0644 "$cfg"
  "${detach[@]}" "${as_user[@]}" "$bin/agent-sidecar" --config "$cfg" 2>>"$state/$a-sidecar.log" &
  pids+=($!)
  agent_yaml+="    $a:
      provider: codex_app_server
      codexAppServer: { endpoint: \"ws://127.0.0.1:4500\" }
      sidecar:
        endpoint: \"127.0.0.1:$rpc\"
        davEndpoint: \"https://127.0.0.1:$dav\"
        timeout: 10s
"
done

cat > "$state/config/gateway.yaml" <<YAML
httpServer: { address: "127.0.0.1:$gw_port" }
agentRuntime:
  defaultAgent: codex-a
  sidecarTLS:
    certFile: "$pki/gateway.crt"
    keyFile: "$pki/gateway.key"
    caFile: "$pki/ca.crt"
  agents:
$agent_yaml
auth:
  tokens:
    - { operator: admin, role: admin, sha256: "$token_sha" }
  session: { keysFile: "$key_file" }
webdav: { writable: $writable }
audit:  { file: "$state/audit.jsonl" }
YAML
chmod 0600 "$state/config/gateway.yaml"
"${detach[@]}" "$bin/agent-gateway" --config "$state/config/gateway.yaml" 2>>"$state/gateway.log" &
pids+=($!)

# Wait until everything answers (or one process died).
ready() { curl -fsS -o /dev/null "$1" 2>/dev/null; }
for _ in $(seq 1 100); do
  ok=1
  for u in "http://127.0.0.1:${met_ports[0]}/readyz" "http://127.0.0.1:${met_ports[1]}/readyz" "http://127.0.0.1:$gw_port/readyz"; do ready "$u" || ok=0; done
  [ "$ok" = 1 ] && break
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || { echo "run: a process exited during start-up; see $state/*.log" >&2; tail -n 5 "$state"/*.log >&2; exit 1; }; done
  sleep 0.1
done
[ "$ok" = 1 ] || { echo "run: not ready after 10 s; see $state/*.log" >&2; exit 1; }

url="http://127.0.0.1:$gw_port"
shown_state="${state#"$root"/}"
# The first-start line only when something was created (no empty line).
first_line=""
if [ "${#first_start[@]}" -gt 0 ]; then
  first_line="
  First start: sample project \"sample\" and skill \"example\" created for ${first_start[*]}."
fi
view="read-only"
[ "$writable" = true ] && view="writable; an overwrite without If-Match is kept as a version"
cat <<TXT

  Agent Workspace Files is running (Ctrl-C stops it; data stays in $shown_state/).$first_line

  Portal       $url/
  Admin token  $token
               (valid for this run only; only its SHA-256 is in $shown_state/config/gateway.yaml)

  For the README's REST walk-through:
               export T=$token G=$url/api/v1/agent-gateway
  REST         curl -H "Authorization: Bearer $token" $url/api/v1/agent-gateway/agents
               curl -H "Authorization: Bearer $token" "$url/api/v1/agent-gateway/agents/codex-a/projects/entries?workspace.scope=PROJECT&workspace.project_name=sample"
  WebDAV ($view view)
               rclone lsf --webdav-url $url/dav/codex-a/ --webdav-vendor other --webdav-user admin --webdav-pass \$(rclone obscure $token) :webdav:projects/sample
  OpenAPI      $url/api/v1/agent-gateway/openapi.json
  Logs         $shown_state/*.log   Audit  $shown_state/audit.jsonl

TXT
wait -n "${pids[@]}" || true
[ "$stopping" = 1 ] && exit 0
echo "run: a process exited; see $state/*.log" >&2
exit 1
