#!/usr/bin/env bash
# Builds the two container images. Needs a Docker engine (none runs on the
# development machines of this project: the Dockerfiles are checked
# statically by deploy/k8s's test instead).
set -euo pipefail
cd "$(dirname "$0")/../.."
tag="${IMAGE_TAG:-dev}"
if ! command -v docker >/dev/null || ! docker info >/dev/null 2>&1; then
  echo "images: no Docker engine is reachable here (docker info failed)." >&2
  echo "images: build on a machine with Docker: docker build -f deploy/docker/agent-sidecar.Dockerfile ." >&2
  exit 1
fi
docker build -f deploy/docker/agent-sidecar.Dockerfile -t "agent-sidecar:$tag" .
docker build -f deploy/docker/agent-gateway.Dockerfile -t "agent-gateway:$tag" .
