#!/usr/bin/env bash
# Regenerates everything derived from contracts/proto, offline once the Go
# module cache and contracts/node_modules are filled:
#   Go messages, gRPC stubs, grpc-gateway handlers  -> gen/go
#   Swagger 2 (openapiv2) and OpenAPI 3             -> gen/openapi
#   TypeScript types for the portal                 -> gen/ts
# Tools are pinned: protoc from Debian (protobuf-compiler), plugins in
# tools/go.mod, npm generators in package.json/package-lock.json.
set -euo pipefail
cd "$(dirname "$0")"

command -v protoc >/dev/null || { echo "generate: protoc missing (apt-get install -y protobuf-compiler, or make setup)" >&2; exit 1; }

bin="$PWD/.bin"
mkdir -p "$bin"
(cd tools && GOBIN="$bin" GOFLAGS=-mod=mod go install tool)
[ -d node_modules ] || npm ci --no-audit --no-fund >/dev/null

# google/api/{annotations,http}.proto, read in place from the pinned gnostic module.
gapi="$(cd tools && go list -m -f '{{.Dir}}' github.com/google/gnostic)/cmd/protoc-gen-openapi/examples"
# protoc-gen-openapiv2/options/*.proto (title, security, summaries), from the pinned grpc-gateway module.
ggw="$(cd tools && go list -m -f '{{.Dir}}' github.com/grpc-ecosystem/grpc-gateway/v2)"

rm -rf gen/go gen/openapi gen/ts
mkdir -p gen/go gen/openapi gen/ts
protos=(workspace/v1/types.proto workspace/v1/workspace.proto workspace/v1/management.proto workspace/v1/checkpoints.proto workspace/v1/watch.proto)

PATH="$bin:$PATH" protoc -I proto -I "$gapi" -I "$ggw" \
  --go_out=gen/go --go_opt=paths=source_relative \
  --go-grpc_out=gen/go --go-grpc_opt=paths=source_relative \
  --grpc-gateway_out=gen/go --grpc-gateway_opt=paths=source_relative \
  --openapiv2_out=gen/openapi \
  --openapiv2_opt=allow_merge=true,merge_file_name=workspace,json_names_for_fields=false,enums_as_ints=false,disable_default_errors=false \
  "${protos[@]}"

node_modules/.bin/swagger2openapi -o gen/openapi/workspace.openapi.json gen/openapi/workspace.swagger.json >/dev/null
# What Swagger 2 cannot say, added to the OpenAPI 3 document: bearer as an
# HTTP scheme, the portal's session cookie, security on every operation, and
# the error details typed as google.rpc.ErrorInfo (whose reason is stable).
node - gen/openapi/workspace.openapi.json <<'JS'
const fs = require('fs');
const file = process.argv[2];
const d = JSON.parse(fs.readFileSync(file, 'utf8'));
const c = (d.components ??= {});
c.securitySchemes = {
  bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <token>' },
  basic: { type: 'http', scheme: 'basic', description: 'any user name, the token as password' },
  session: { type: 'apiKey', in: 'cookie', name: 'awf_session', description: "the portal's session (POST /api/v1/agent-gateway/session); state-changing requests also need X-CSRF-Token" },
};
const security = [{ bearer: [] }, { basic: [] }, { session: [] }];
d.security = security;
for (const ops of Object.values(d.paths)) for (const op of Object.values(ops)) op.security = security;
c.schemas.ErrorInfo = {
  type: 'object',
  description: 'google.rpc.ErrorInfo: why a request failed, as a stable machine-readable reason (REVISION_MISMATCH, DENYLISTED, ...).',
  required: ['@type', 'reason'],
  properties: {
    '@type': { type: 'string', enum: ['type.googleapis.com/google.rpc.ErrorInfo'] },
    reason: { type: 'string', description: 'the ErrorReason name, e.g. REVISION_MISMATCH' },
    domain: { type: 'string' },
    metadata: { type: 'object', additionalProperties: { type: 'string' } },
  },
};
c.schemas.rpcStatus = {
  type: 'object',
  description: 'An error: the HTTP status, a message safe to show, and details carrying the reason.',
  required: ['code', 'message', 'details'],
  properties: {
    code: { type: 'integer', format: 'int32', description: 'the gRPC status code' },
    message: { type: 'string' },
    details: { type: 'array', items: { $ref: '#/components/schemas/ErrorInfo' } },
  },
};
fs.writeFileSync(file, JSON.stringify(d, null, 2) + '\n');
JS
node_modules/.bin/openapi-typescript gen/openapi/workspace.openapi.json -o gen/ts/workspace.d.ts >/dev/null 2>&1
gofmt -l gen/go | (! grep .) || { echo "generate: gofmt differs" >&2; exit 1; }
echo "generate: ok"
