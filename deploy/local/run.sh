#!/usr/bin/env bash
# The local stack behind `make run`: two agents' sidecars (codex-a, codex-b)
# and the gateway with the portal, on loopback. Data lives in .local/ (git
# ignored) and is kept across runs; a sample project and a sample skill are
# created on the first start only. Every run prints a fresh admin token; only
# its SHA-256 is written to the generated gateway config. Ctrl-C stops all.
#
# Ports (override with env): GATEWAY_PORT=8080, and per agent i (0, 1):
# gRPC 1909(1+2i), WebDAV 1909(2+2i), metrics 1919(1+i).
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
state="$root/.local"
bin="$root/bin"
gw_port="${GATEWAY_PORT:-8080}"
for b in agent-sidecar agent-gateway; do
  [ -x "$bin/$b" ] || { echo "run: $bin/$b missing: run make run (it builds first)" >&2; exit 1; }
done

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in "$gw_port" 19091 19092 19093 19094 19191 19192; do
  port_free "$p" || { echo "run: port 127.0.0.1:$p is in use (another make run?); stop it or set GATEWAY_PORT" >&2; exit 1; }
done

mkdir -p "$state"
agents=(codex-a codex-b)
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
done

# Run the sidecars unprivileged when started as root, like in the pod.
as_user=()
if [ "$(id -u)" -eq 0 ]; then
  chown -R 1000:1000 "$state/agents"
  as_user=(setpriv --reuid 1000 --regid 1000 --clear-groups --)
fi

token="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
token_sha="$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)"
mkdir -p "$state/config"
pids=()
cleanup() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "run: stopped"
  exit 0
}
trap cleanup INT TERM EXIT

agent_yaml=""
for i in "${!agents[@]}"; do
  a="${agents[$i]}"
  rpc=$((19091 + 2 * i)); dav=$((19092 + 2 * i)); met=$((19191 + i))
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
YAML
  chmod 0644 "$cfg"
  "${as_user[@]}" "$bin/agent-sidecar" --config "$cfg" 2>>"$state/$a-sidecar.log" &
  pids+=($!)
  agent_yaml+="    $a:
      provider: codex_app_server
      codexAppServer: { endpoint: \"ws://127.0.0.1:4500\" }
      sidecar:
        endpoint: \"127.0.0.1:$rpc\"
        davEndpoint: \"http://127.0.0.1:$dav\"
        timeout: 10s
"
done

cat > "$state/config/gateway.yaml" <<YAML
httpServer: { address: "127.0.0.1:$gw_port" }
agentRuntime:
  defaultAgent: codex-a
  agents:
$agent_yaml
auth:
  tokens:
    - { operator: admin, role: admin, sha256: "$token_sha" }
webdav: { writable: false }
audit:  { file: "$state/audit.jsonl" }
YAML
chmod 0600 "$state/config/gateway.yaml"
"$bin/agent-gateway" --config "$state/config/gateway.yaml" 2>>"$state/gateway.log" &
pids+=($!)

# Wait until everything answers (or one process died).
ready() { curl -fsS -o /dev/null "$1" 2>/dev/null; }
for _ in $(seq 1 100); do
  ok=1
  for u in http://127.0.0.1:19191/readyz http://127.0.0.1:19192/readyz "http://127.0.0.1:$gw_port/readyz"; do ready "$u" || ok=0; done
  [ "$ok" = 1 ] && break
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || { echo "run: a process exited; see $state/*.log" >&2; tail -n 5 "$state"/*.log >&2; exit 1; }; done
  sleep 0.1
done
[ "$ok" = 1 ] || { echo "run: not ready after 10 s; see $state/*.log" >&2; exit 1; }

url="http://127.0.0.1:$gw_port"
cat <<TXT

  Agent Workspace Files is running (Ctrl-C stops it; data stays in .local/).
  ${first_start:+First start: sample project "sample" and skill "example" created for ${first_start[*]}.}

  Portal       $url/
  Admin token  $token
               (valid for this run only; only its SHA-256 is in .local/config/gateway.yaml)

  REST         curl -H "Authorization: Bearer $token" $url/api/v1/agent-gateway/agents
               curl -H "Authorization: Bearer $token" "$url/api/v1/agent-gateway/agents/codex-a/projects/entries?workspace.scope=PROJECT&workspace.project_name=sample"
  WebDAV       rclone lsf --webdav-url $url/dav/codex-a/ --webdav-vendor other --webdav-user admin --webdav-pass \$(rclone obscure $token) :webdav:projects/sample
  OpenAPI      $url/api/v1/agent-gateway/openapi.json
  Logs         .local/*.log   Audit  .local/audit.jsonl

TXT
wait -n "${pids[@]}" || true
echo "run: a process exited; see .local/*.log" >&2
exit 1
