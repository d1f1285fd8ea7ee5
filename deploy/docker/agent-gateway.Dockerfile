# agent-gateway: static binary with the portal embedded, non-root, no shell.
# Build from the repository root:
#   docker build -f deploy/docker/agent-gateway.Dockerfile -t agent-gateway .
# The base images are build arguments so that a machine without a registry
# can substitute local stand-ins (deploy/scripts/base-images.sh).
ARG NODE_IMAGE=node:20.20.2-bookworm-slim
ARG GO_IMAGE=golang:1.26.8-bookworm
ARG STATIC_IMAGE=gcr.io/distroless/static-debian12:nonroot
FROM ${NODE_IMAGE} AS portal
WORKDIR /src
COPY contracts/gen/ts contracts/gen/ts
COPY portal/package.json portal/package-lock.json portal/
RUN cd portal && npm ci --no-audit --no-fund
COPY portal portal
RUN cd portal && npm run build

FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
COPY --from=portal /src/portal/dist/ gateway/internal/portal/dist/
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/agent-gateway ./gateway/cmd/agent-gateway

FROM ${STATIC_IMAGE}
COPY --from=build /out/agent-gateway /agent-gateway
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["/agent-gateway"]
CMD ["--config", "/etc/agent-gateway/gateway.yaml"]
