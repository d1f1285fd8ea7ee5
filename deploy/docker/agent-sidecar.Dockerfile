# agent-sidecar: runs beside the Codex app-server as UID/GID 1000, with a
# read-only root filesystem (git init needs only a writable /tmp emptyDir).
# Build from the repository root:
#   docker build -f deploy/docker/agent-sidecar.Dockerfile -t agent-sidecar .
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/agent-sidecar ./sidecar/cmd/agent-sidecar

FROM debian:12.12-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 1000 node && useradd --uid 1000 --gid 1000 --no-create-home --home-dir /tmp node
COPY --from=build /out/agent-sidecar /usr/local/bin/agent-sidecar
ENV HOME=/tmp
USER 1000:1000
EXPOSE 9090 9091 9092
ENTRYPOINT ["/usr/local/bin/agent-sidecar"]
CMD ["--config", "/etc/agent-sidecar/sidecar.yaml"]
