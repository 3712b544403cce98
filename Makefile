# Muster's build and test entry points. `make run` and `make test` are the two
# commands the README leads with.

SHELL := /bin/bash
BIN   := $(CURDIR)/bin
OUT   := $(CURDIR)/_out
GO    ?= go
GOFLAGS_TEST ?= -count=1

# Test timeouts sized for a 2-core machine.
UNIT_TIMEOUT        ?= 10m
INTEGRATION_TIMEOUT ?= 20m
E2E_TIMEOUT         ?= 40m

.PHONY: all build tools run run-standalone test verify unit integration e2e bench codegen clean help

all: build

help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

build: ## Build bin/muster-apiserver.
	$(GO) build -o $(BIN)/muster-apiserver ./cmd/muster-apiserver

tools: ## Build kube-apiserver, kube-scheduler, kubectl, etcd and kwok into bin/ (only what changed).
	hack/build-tools.sh

run: build tools ## Bring up a local cluster (etcd, kube-apiserver, kube-scheduler, kwok) with Muster aggregated in it.
	$(GO) run ./hack/localcluster --bin-dir=$(BIN) --out=$(OUT) $(RUN_ARGS)

run-standalone: build ## Serve the API alone on loopback, with no cluster.
	$(BIN)/muster-apiserver --standalone --data-dir=$(OUT)/standalone --secure-port=8443

test: verify unit integration e2e ## Everything CI runs.

verify: ## gofmt, go vet, and generated code up to date.
	@out="$$(gofmt -l cmd pkg test hack)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	hack/verify-codegen.sh

unit: ## Unit tests of pure logic.
	$(GO) test $(GOFLAGS_TEST) -timeout $(UNIT_TIMEOUT) ./pkg/... ./cmd/...

integration: ## The server in-process on an embedded etcd.
	$(GO) test $(GOFLAGS_TEST) -timeout $(INTEGRATION_TIMEOUT) ./test/integration/...

e2e: build tools ## A real kube-apiserver, kube-scheduler and kwok with Muster aggregated in.
	MUSTER_BIN_DIR=$(BIN) $(GO) test $(GOFLAGS_TEST) -timeout $(E2E_TIMEOUT) ./test/cluster/... ./test/e2e/...

bench: ## Benchmarks of the controller's hot paths; they print numbers, they assert nothing about speed.
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/controller/...

codegen: ## Regenerate deepcopy, conversion, defaulters, OpenAPI and clients.
	hack/update-codegen.sh

clean: ## Remove built binaries of this module and _out/ (keeps the cached cluster tools).
	rm -rf $(BIN)/muster-apiserver $(OUT)
