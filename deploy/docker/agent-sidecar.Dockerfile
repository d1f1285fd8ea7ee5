# agent-sidecar: runs beside the Codex app-server as UID/GID 1000, with a
# read-only root filesystem (git init needs only a writable /tmp emptyDir).
# Build from the repository root:
#   docker build -f deploy/docker/agent-sidecar.Dockerfile -t agent-sidecar .
# The base images are build arguments so that a machine without a registry
# can substitute local stand-ins (deploy/scripts/base-images.sh).
ARG GO_IMAGE=golang:1.26.8-bookworm
ARG BASE_IMAGE=debian:12.12-slim
FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/agent-sidecar ./sidecar/cmd/agent-sidecar

FROM ${BASE_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log \
 && groupadd --gid 1000 node && useradd --uid 1000 --gid 1000 --no-create-home --home-dir /tmp node
COPY --from=build /out/agent-sidecar /usr/local/bin/agent-sidecar
ENV HOME=/tmp
USER 1000:1000
EXPOSE 9090 9091 9092
ENTRYPOINT ["/usr/local/bin/agent-sidecar"]
CMD ["--config", "/etc/agent-sidecar/sidecar.yaml"]
