# zerodrop — proves a Service of type LoadBalancer keeps serving while the
# cluster under it is drained, rolled and re-pooled.
#
# Fresh machine:  make e2e PROVIDER=kind   (main job)
#                 make test                (tests)

SHELL        := /usr/bin/env bash
.SHELLFLAGS  := -euo pipefail -c
GO           ?= go
PROVIDER     ?= kind
BIN          := bin
# Expensive outputs (Kubernetes binaries, node image inputs) live outside the
# clone, keyed by version and content, so a warm run reuses them.
ZERODROP_CACHE ?= /var/cache/zerodrop
export ZERODROP_CACHE

ECHO_IMAGE   ?= zerodrop/echo-server:dev

# KUBERNETES_VERSION=vX.Y.Z selects the Kubernetes of node-image, cluster and
# e2e (its etcd, CoreDNS, pause and Go follow from that release); the default
# is the one line KUBERNETES_DEFAULT_VERSION in clusters/images/versions.sh.
export KUBERNETES_VERSION

# The version every report names (report.json run.toolVersion, the run
# files' tool_version): git describe of this clone, "-dirty" with local
# changes. GOFLAGS=-buildvcs=false machines embed no commit on their own, so
# it is stamped here and handed to the suite as ZERODROP_VERSION.
VERSION      ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS      := -X main.version=$(VERSION)
export ZERODROP_VERSION := $(VERSION)

.PHONY: all test lint-workflows tracked-size smoke-if-docker bench bench-load bench-cost long lb-e2e vet fmt-check unit build image proxy-images e2e e2e-smoke test-workload help host-setup node-image cluster cluster-down lb-conformance

all: build

help: ## list targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

# The smoke subset of the main job runs inside `make test` wherever this
# host can run Docker (an engine answers, or we are root with apt to install
# one); ZERODROP_SMOKE=0 leaves it out, ZERODROP_SMOKE=1 insists on it.
ZERODROP_SMOKE ?= auto

test: tracked-size vet fmt-check lint-workflows unit smoke-if-docker ## tracked-file size check, vet, gofmt check, workflow lint, unit tests under -race, then e2e-smoke where Docker can run

smoke-if-docker:
	@case "$(ZERODROP_SMOKE)" in \
	  0) echo "test: e2e smoke skipped (ZERODROP_SMOKE=0)";; \
	  1) $(MAKE) --no-print-directory e2e-smoke;; \
	  auto) if timeout 10 docker info >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; }; then \
	          $(MAKE) --no-print-directory e2e-smoke; \
	        else echo "test: e2e smoke skipped: no Docker engine and no way to install one here (not root with apt)"; fi;; \
	  *) echo "test: ZERODROP_SMOKE=$(ZERODROP_SMOKE): want auto, 0 or 1" >&2; exit 2;; \
	esac

# Binaries, images and fetched files do not belong in git (a 95 MB build of
# the CLI once landed on main): fail on any tracked file over 1 MiB.
TRACKED_MAX_BYTES ?= 1048576
tracked-size: ## fail when a file tracked by git is over 1 MiB
	@big="$$(git ls-files -z 2>/dev/null | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk -v max=$(TRACKED_MAX_BYTES) '$$1 > max')"; \
	if [ -n "$$big" ]; then echo "tracked files over $(TRACKED_MAX_BYTES) bytes (build outputs and binaries belong in .gitignore, not git):"; echo "$$big"; exit 1; fi

# actionlint is pinned in go.mod (a tool directive), so the lint needs no
# download beyond the module cache the build already fills.
lint-workflows: ## lint .github/workflows with actionlint (contexts, expressions, inputs reaching shells)
	$(GO) tool actionlint .github/workflows/*.yml

vet: ## go vet
	$(GO) vet ./...

fmt-check: ## fail when a file is not gofmt-clean
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

unit: ## go test -race ./...
	$(GO) test -race -count=1 ./...

bench: ## benchmarks: echo handler vs hello, load memory over a long run, run-file encoding
	$(GO) test -run '^$$' -bench . -benchtime 1x ./harness/load/ ./harness/runfile/
	$(GO) test -run '^$$' -bench . ./echo-server/echo/

# vegeta's CLI from the very module version go.mod pins, so the comparison
# is against the library zerodrop uses.
VEGETA_VERSION = $(shell $(GO) list -m -f '{{.Version}}' github.com/tsenart/vegeta/v12)
BENCH_RATES ?= 2000,4000,8000,12000,16000,20000,30000
# BENCH_PROTOCOL=h2c measures HTTP/2 against h2load (Debian's nghttp2-client);
# BENCH_PROTOCOL=grpc gRPC unary calls against ghz, built from its module at
# the version named here (its newest release on the Go module proxy).
BENCH_PROTOCOL ?= http/1.1
GHZ_VERSION = v0.121.0
bench-load: build ## whole-process load benchmark: zerodrop load vs vegeta's CLI (BENCH_PROTOCOL=h2c: vs h2load too; grpc: vs ghz), pinned cores, one run (needs 2 CPUs)
	@[ "$$(nproc)" -ge 2 ] || { echo "bench-load: needs 2 CPUs (generator and echo server pinned apart), have $$(nproc)" >&2; exit 1; }
	GOBIN=$(abspath $(BIN)) CGO_ENABLED=0 $(GO) install github.com/tsenart/vegeta/v12@$(VEGETA_VERSION)
	$(if $(filter grpc,$(BENCH_PROTOCOL)),GOBIN=$(abspath $(BIN)) CGO_ENABLED=0 $(GO) install github.com/bojand/ghz/cmd/ghz@$(GHZ_VERSION))
	$(GO) run ./cmd/loadbench --zerodrop $(BIN)/zerodrop --vegeta $(BIN)/vegeta --ghz $(BIN)/ghz --echo $(BIN)/echo-server \
	  --protocol $(BENCH_PROTOCOL) --rates $(BENCH_RATES) --out out/bench-load/$(subst /,,$(BENCH_PROTOCOL))

bench-cost: build ## what a request of each protocol costs the bench (CPU of zerodrop load and the echo server per 1,000, as the matrix's cells load), against HTTP/1.1: the protocol weights of the witness budget
	@[ "$$(nproc)" -ge 2 ] || { echo "bench-cost: needs 2 CPUs (generator and echo server pinned apart), have $$(nproc)" >&2; exit 1; }
	$(GO) run ./cmd/loadbench --costs --zerodrop $(BIN)/zerodrop --echo $(BIN)/echo-server --duration 20s --out out/bench-cost

lb-e2e: ## the cloud LB's own checks: data plane in namespaces and on a Docker bridge; TestCluster needs `make cluster LB=cloud` and `make image`
	$(GO) test -tags e2e -count=1 -timeout 30m -v -run 'DataplaneE2E|DockerBridge|TestCluster' ./harness/lb/ ./internal/cloudlb/

long: ## the 60 s / 500 rps clean loopback run
	$(GO) test -tags long -run CleanRun60s -v -timeout 10m ./harness/load/

build: ## build the echo server and the zerodrop CLI into bin/
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/echo-server ./echo-server
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/zerodrop ./cmd/zerodrop

ECHO_IMAGE_CTX := out/echo-image

image: ## echo server image (ECHO_IMAGE, default zerodrop/echo-server:dev): static binary, FROM scratch, no pull
	@docker info >/dev/null 2>&1 || { echo "image: no Docker engine answers (docker info failed); run 'make host-setup' first" >&2; exit 1; }
	rm -rf $(ECHO_IMAGE_CTX) && mkdir -p $(ECHO_IMAGE_CTX)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(ECHO_IMAGE_CTX)/echo-server ./echo-server
	DOCKER_BUILDKIT=0 docker build --pull=false -t $(ECHO_IMAGE) -f echo-server/Dockerfile $(ECHO_IMAGE_CTX)
	@echo "image: built $(ECHO_IMAGE)"

proxy-images: ## the fronts' images (Traefik from its Go module, HAProxy from Debian), built offline and cached: zerodrop/traefik:dev, zerodrop/haproxy:dev
	ZERODROP_CACHE=$(ZERODROP_CACHE) GO=$(GO) ./clusters/images/build-proxies.sh

# Empty: run-e2e.sh picks all (MetalLB and the cloud LB side by side) for
# e2e and metallb for e2e-smoke.
LB ?=

e2e: ## the main job: every scenario x every LB model (LB=metallb or LB_PROFILE=a,b narrow it; SHARD=i/n), evidence in out/e2e
	PROVIDER=$(PROVIDER) LB=$(LB) GO=$(GO) ./suites/run-e2e.sh all

e2e-smoke: ## the smoke subset (rolling-update hardened, source-ip), as `make test` runs it where Docker can
	PROVIDER=$(PROVIDER) LB=$(LB) GO=$(GO) ./suites/run-e2e.sh smoke

test-workload: ## your own workload: FILES="manifests" [ARGS="--lb-profile gke-l4 --scenario drain-node"]: the doctor predicts, a stand-in measures; evidence in out/e2e
	PROVIDER=$(PROVIDER) LB=$(LB) GO=$(GO) FILES="$(FILES)" ARGS="$(ARGS)" ./suites/run-e2e.sh workload

# empty: the cluster's version (KUBERNETES_VERSION, default in clusters/images/versions.sh)
LB_CONFORMANCE_VERSION ?=

lb-conformance: ## Kubernetes' own [Feature:LoadBalancer] e2e specs (built offline) against the cluster's LB: make cluster LB=cloud first; ~30 min, results in out/lb-conformance
	ZERODROP_UPSTREAM_CACHE=$(ZERODROP_CACHE)/upstream-e2e LB_CONFORMANCE_VERSION=$(LB_CONFORMANCE_VERSION) ./clusters/lb/conformance/build.sh
	ZERODROP_UPSTREAM_CACHE=$(ZERODROP_CACHE)/upstream-e2e LB_CONFORMANCE_VERSION=$(LB_CONFORMANCE_VERSION) ./clusters/lb/conformance/run.sh

host-setup: ## make Docker usable here: install docker.io etc., start dockerd, fix --privileged caps
	ZERODROP_CACHE=$(ZERODROP_CACHE) GO=$(GO) ./clusters/host-setup.sh

node-image: host-setup ## kind node image with every cluster image preloaded, built offline and cached (KIND_NODE_IMAGE overrides)
	ZERODROP_CACHE=$(ZERODROP_CACHE) GO=$(GO) ./clusters/node-image.sh

cluster: ## test cluster up (PROVIDER=kind: host set-up, images, nodes, flannel, MetalLB); prints the kubeconfig path
	PROVIDER=$(PROVIDER) GO=$(GO) ./clusters/cluster.sh up

cluster-down: ## remove everything 'make cluster' made and restore host sysctls
	PROVIDER=$(PROVIDER) GO=$(GO) ./clusters/cluster.sh down

FUZZTIME ?= 5m

.PHONY: fuzz-doctor fuzz-runfile fuzz-evidence
fuzz-doctor: ## fuzz zerodrop doctor's manifest reader for FUZZTIME (default 5m)
	$(GO) test ./harness/doctor -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME)

fuzz-runfile: ## fuzz the run-file reader for FUZZTIME (default 5m)
	$(GO) test ./harness/runfile -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME)

fuzz-evidence: ## fuzz the signature verifier with forged run files and envelopes for FUZZTIME (default 5m)
	$(GO) test ./harness/evidence -run '^$$' -fuzz '^FuzzVerify$$' -fuzztime $(FUZZTIME)
