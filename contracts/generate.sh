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

rm -rf gen/go gen/openapi gen/ts
mkdir -p gen/go gen/openapi gen/ts
protos=(workspace/v1/types.proto workspace/v1/workspace.proto workspace/v1/management.proto)

PATH="$bin:$PATH" protoc -I proto -I "$gapi" \
  --go_out=gen/go --go_opt=paths=source_relative \
  --go-grpc_out=gen/go --go-grpc_opt=paths=source_relative \
  --grpc-gateway_out=gen/go --grpc-gateway_opt=paths=source_relative \
  --openapiv2_out=gen/openapi \
  --openapiv2_opt=allow_merge=true,merge_file_name=workspace,json_names_for_fields=false,enums_as_ints=false,disable_default_errors=false \
  "${protos[@]}"

node_modules/.bin/swagger2openapi -o gen/openapi/workspace.openapi.json gen/openapi/workspace.swagger.json >/dev/null
node_modules/.bin/openapi-typescript gen/openapi/workspace.openapi.json -o gen/ts/workspace.d.ts >/dev/null 2>&1
gofmt -l gen/go | (! grep .) || { echo "generate: gofmt differs" >&2; exit 1; }
echo "generate: ok"
