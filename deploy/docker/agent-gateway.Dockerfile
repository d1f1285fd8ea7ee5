# agent-gateway: static binary with the portal embedded, non-root, no shell;
# beside it /oauth2-proxy, the pinned release of deploy/k8s/tools/oauth2-proxy
# that the dev overlay runs in the gateway's pod for single sign-on
# (docs/sso.md).
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

# oauth2-proxy from the Go module proxy, at the version its wrapper module
# pins (as deploy/scripts/k8s-tools.sh oauth2-proxy builds it).
FROM ${GO_IMAGE} AS oauth2-proxy
WORKDIR /src
COPY deploy/k8s/tools/oauth2-proxy/ ./
RUN v=$(go list -m -f '{{.Version}}' github.com/oauth2-proxy/oauth2-proxy/v7) && \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X github.com/oauth2-proxy/oauth2-proxy/v7/pkg/version.VERSION=$v" \
      -o /out/oauth2-proxy github.com/oauth2-proxy/oauth2-proxy/v7

FROM ${STATIC_IMAGE}
COPY --from=build /out/agent-gateway /agent-gateway
COPY --from=oauth2-proxy /out/oauth2-proxy /oauth2-proxy
USER 65532:65532
EXPOSE 8080 9090 4180
ENTRYPOINT ["/agent-gateway"]
CMD ["--config", "/etc/agent-gateway/gateway.yaml"]
