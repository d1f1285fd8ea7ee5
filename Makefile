# Agent Workspace Files. `make help` lists the targets.
# A newcomer needs two: `make run` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help
GO ?= go
BIN := $(CURDIR)/bin
export PATH := $(BIN):$(PATH)

.PHONY: help
help: ## List the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-zA-Z0-9_-]+:.*## /{printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: setup
setup: ## Install what builds and tests need (Debian packages, npm packages); idempotent
	deploy/scripts/setup.sh

.PHONY: generate
generate: ## Regenerate Go, OpenAPI and TypeScript from contracts/proto
	contracts/generate.sh

.PHONY: check-generate
check-generate: generate ## Fail if regenerating changes anything committed
	@git diff --exit-code --stat -- contracts/gen || { echo "contracts/gen is stale: run make generate and commit" >&2; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- contracts/gen)" || { echo "contracts/gen has uncommitted files" >&2; git status --short -- contracts/gen; exit 1; }

.PHONY: portal
portal: ## Build the portal into the gateway's embedded files
	deploy/scripts/build-portal.sh

.PHONY: build
build: portal ## Build agent-sidecar and agent-gateway into bin/
	$(GO) build -o $(BIN)/agent-sidecar ./sidecar/cmd/agent-sidecar
	$(GO) build -o $(BIN)/agent-gateway ./gateway/cmd/agent-gateway

.PHONY: vet
vet: funclen ## go vet, gofmt and funclen (also for linux/arm64: images build for the builder's architecture)
	$(GO) vet ./...
	GOARCH=arm64 $(GO) vet ./...
	cd deploy/k8s && $(GO) vet ./... && $(GO) vet -tags k8stier ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' | grep -v '^contracts/gen/'))" || { gofmt -l $$(git ls-files '*.go' | grep -v '^contracts/gen/'); exit 1; }

.PHONY: funclen
funclen: ## List functions over 80 lines outside tests and generated code; fails if there is one
	$(GO) run ./deploy/scripts/funclen

.PHONY: test-go
test-go: ## Go unit, integration, litmus, rclone and acceptance tests (no Kubernetes tools needed)
	$(GO) test -count=1 -timeout 30m ./...

.PHONY: test-portal
test-portal: build ## Portal unit tests (Vitest) and browser end-to-end tests (Playwright + Chromium)
	cd portal && npm test && npm run e2e

.PHONY: k8s-tools
k8s-tools: ## Build kube-apiserver, kubectl, kubelet, ..., etcd, CoreDNS, kube-router (cached outside the repo; see deploy/k8s/tools)
	deploy/scripts/k8s-tools.sh >/dev/null
	deploy/scripts/k8s-tools.sh kube-router >/dev/null
	deploy/scripts/k8s-tools.sh oauth2-proxy >/dev/null

.PHONY: oauth2-proxy
oauth2-proxy: ## Build the pinned oauth2-proxy (SSO tests, gateway image; cached outside the repo, about 2 min cold; see docs/sso.md)
	deploy/scripts/k8s-tools.sh oauth2-proxy >/dev/null

# The Kubernetes tiers (deploy/k8s/tier, README "Kubernetes tiers"): root,
# each bounded by its own timeout; they fail, never skip, when something is missing.
K8S_TIER = cd deploy/k8s && K8S_BIN=$$(../scripts/k8s-tools.sh) timeout --kill-after=60s
.PHONY: test-k8s test-k8s-api test-k8s-images test-k8s-node
test-k8s: test-k8s-manifests test-k8s-api test-k8s-images test-k8s-node ## Kubernetes: manifests, then the tiers (API server, images, a real node)
.PHONY: test-k8s-manifests
test-k8s-manifests: k8s-tools ## The Kustomize overlay rendered by the built kubectl and checked (deploy/k8s, no cluster)
	cd deploy/k8s && K8S_BIN=$$(../scripts/k8s-tools.sh) $(GO) test -count=1 ./...
test-k8s-api: k8s-tools ## The dev overlay admitted by a real kube-apiserver (Pod Security restricted)
	$(K8S_TIER) 10m $(GO) test -tags k8stier -count=1 -timeout 9m -v -run '^TestAPIServer(Discovery)?$$' ./tier/
test-k8s-images: images ## The images run read-only, non-root, with no capabilities and no network
	$(K8S_TIER) 10m $(GO) test -tags k8stier -count=1 -timeout 9m -v -run '^TestImages$$' ./tier/
test-k8s-node: k8s-tools images ## The dev overlay on a real kubelet with kube-router enforcing NetworkPolicy, PRD 15.5 through the in-cluster gateway
	$(K8S_TIER) 30m env AWF_KUBE_ROUTER=$$(../scripts/k8s-tools.sh kube-router) $(GO) test -tags k8stier -count=1 -timeout 28m -v -run '^TestNode$$' ./tier/
# The NetworkPolicy proof is part of the node tier (and so of make test).
.PHONY: bench-discovery
bench-discovery: k8s-tools ## 10,000 agents discovered from a real API server beside the static registry of the same size: RSS, ListAgents p50 (docs/BENCHMARKS.md)
	$(K8S_TIER) 20m env BENCH_OUT=$(CURDIR)/bin/bench $(GO) test -tags k8stier -count=1 -timeout 19m -v -run '^TestDiscoveryBench$$' ./tier/
.PHONY: test-k8s-netpol
test-k8s-netpol: test-k8s-node ## Alias of test-k8s-node (NetworkPolicy enforced by kube-router: only the gateway reaches a sidecar)

.PHONY: test
# Fast failures first: generate, vet, the Go and portal tests; only then the
# Kubernetes tools (a cold build takes about half an hour) and their tiers.
test: setup check-generate vet build test-go test-portal k8s-tools test-k8s ## Every test (what CI runs), quickest first

.PHONY: bench
bench: setup build ## Benchmarks with their baselines, side by side (see docs/BENCHMARKS.md)
	deploy/scripts/bench.sh

.PHONY: run
run: ## Start the local stack: two sidecars, the gateway and the portal (ports checked before building)
	deploy/local/run.sh --check-ports
	$(MAKE) --no-print-directory setup build
	deploy/local/run.sh

.PHONY: images
images: ## Build the container images into bin/images/ (a private dockerd as root when no engine runs)
	deploy/scripts/images.sh

.PHONY: clean
clean: ## Remove build outputs (keeps the local stack's data)
	rm -rf $(BIN)
