# Muster's build and test entry points. `make run` and `make test` are the two
# commands the README leads with.

SHELL := /bin/bash
BIN   := $(CURDIR)/bin
OUT   := $(CURDIR)/_out
GO    ?= go
GOFLAGS_TEST ?= -count=1

# Every package is compiled once, whichever target asks for it first. The
# control plane hack/build-tools.sh builds (static, -trimpath) shares some
# 1,400 packages with muster-apiserver at the same versions
# (hack/verify-tools-aligned.sh keeps them so), and Go's build cache reuses a
# compiled package only for the same flags. So go build, go vet and go test
# here build static and path-free too; a first build compiles k8s.io once,
# not three times (docs/build.md).
export CGO_ENABLED := 0
export GOFLAGS := $(strip $(filter-out -trimpath,$(GOFLAGS)) -trimpath)

# The Kubernetes release of the local cluster (make run, make e2e, make
# tools): empty means the newest supported, pinned in hack/tools/go.mod and
# built into bin/; any other needs a module hack/tools/kube-<version>/ and is
# built into bin/kube-<version>/. `hack/build-tools.sh --list-versions`.
KUBE_VERSION ?=
KUBE_BIN = $(shell KUBE_VERSION=$(KUBE_VERSION) hack/build-tools.sh --print-bin-dir)

# The oldest supported release. `make test` runs the whole e2e suite on the
# newest and the core gang scenarios, E2E_OLDEST_RUN, on this one. Add a test
# to the list to have it proven on the oldest release too.
OLDEST_KUBE_VERSION := 1.30.14
E2E_OLDEST_TESTS := \
	TestKubeVersion \
	TestAPIServiceAvailable \
	TestDelegatedAuthorization \
	TestManifestsDryRun \
	TestGangOfEight \
	TestRunningPodDeleted \
	TestGroupDeletedWhilePodsRun \
	TestSchedulingGateHoldsPod \
	TestGroupGates \
	TestOtherToolsGateIsReported \
	TestInvalidAnnotations \
	TestMusterAdmissionChain \
	TestUntouchedPods \
	TestWorkloadTemplatePolicy \
	TestCapacityTwoGangsDoNotFitTogether \
	TestCapacityNodeSelector \
	TestCapacityPriority \
	TestPreemptionJobGangs \
	TestPreemptionTakesOneOfTwo \
	TestPreemptionLeaderKilledMidway \
	TestPreemptionUnmanaged \
	TestPreemptionUnmanagedOff \
	TestPreemptionAcrossNamespacesNamesNoOne \
	TestCapacityFastRelease \
	TestCapacityLeaderKilledMidRelease \
	TestCapacityGangLargerThanCluster \
	TestPlacementOneWorkerPerNode \
	TestPlacementHostPort \
	TestPlacementTopologySpread \
	TestPlacementPodAffinity \
	TestPlacementZonalVolumes \
	TestPlacementBoundVolumeZone \
	TestPlacementNeverFitsAntiAffinity \
	TestTopologyRequiredRack \
	TestTopologyPreferredRackFallsBackToBlock \
	TestTopologySlices \
	TestTopologyBestFit \
	TestTopologyPreemptsOneRack \
	TestTopologyRoleInItsRack \
	TestAutoscalingTopologyZone \
	TestPolicyGroupLabelImmutable \
	TestPolicyFinalizerRemovableWithoutMuster \
	TestPolicyMusterWritesConfined \
	TestPolicyMusterConfinedToManagedPods \
	TestPolicyMusterPreemptionWrites \
	TestPolicyMusterCapacityRequestPods \
	TestPolicyConfinementFollowsTheRole \
	TestPolicyMusterQuotaWritesConfined \
	TestPolicyFinalizerNotPutBack \
	TestPolicyCountedLabelIsMusters \
	TestPolicyExpressionsTypeCheck \
	TestSchedulingInputsAreBounded \
	TestSchedulingInputsAreBoundedOnUpdate \
	TestRolesDriverCreatesWorkers \
	TestRolesWorkersNeverArrive \
	TestPreparePolicy \
	TestPodEventsArrive \
	TestValidatingWebhookOnlyForRoles \
	TestWholeGangRestart \
	TestResourceQuotaCountsPodGroups \
	TestNamespaceDeletion \
	TestJobGangsDoNotFitTogether \
	TestJobRunningPodDeleted \
	TestJobBackoffReachesLimit \
	TestJobPodFailurePolicy \
	TestJobSuspendResume \
	TestJobDeletedCascades \
	TestJobSetGang \
	TestJobTemplateSubmittedAgain \
	TestJobResubmittedOverOrphanedGroup \
	TestJobTemplateTwiceAtOnce \
	TestJobGenerateName \
	TestCronJobEachScheduleWhole \
	TestJobSetReplicasAndRestart \
	TestLeaderWorkerSetGroupsWhole \
	TestRayClusterOneGangAndScaleUp \
	TestRayJobClusterWithIt \
	TestTrainJobOnJobSet \
	TestStatefulSetParallelGang \
	TestStatefulSetOrderedReadyIsExplained \
	TestMusterOutage \
	TestUninstall \
	TestEtcdRestore
E2E_OLDEST_RUN := ^($(subst $(eval) ,|,$(strip $(E2E_OLDEST_TESTS))))$$

# One version for the binary's --version, the image's tag and the chart
# (hack/version.sh: `git describe`, or v0.0.0-<commits>-g<sha> before the
# first tag). Set VERSION and GIT_COMMIT to build from a source archive.
# (Each is computed once, and only when not given.)
ifeq ($(origin VERSION),undefined)
VERSION := $(shell hack/version.sh)
endif
ifeq ($(origin GIT_COMMIT),undefined)
GIT_COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
endif
LDFLAGS    := -X github.com/muster-dev/muster/pkg/version.gitVersion=$(VERSION) \
              -X github.com/muster-dev/muster/pkg/version.gitCommit=$(GIT_COMMIT)

# The image (make image, docs/image.md). SOURCE_DATE_EPOCH, the commit's
# time, is its only timestamp, so two builds of one commit match.
IMAGE_PLATFORMS   ?= linux/amd64 linux/arm64
IMAGE_DIR         ?= $(OUT)/image
IMAGE_SOURCE      ?= https://github.com/muster-dev/muster
ifeq ($(origin SOURCE_DATE_EPOCH),undefined)
SOURCE_DATE_EPOCH := $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
endif
# The image of this host's platform alone, in a directory of its own (so a
# multi-arch _out/image/ stays as it is): make e2e runs it as the chart's
# pod under runc, make test also standalone (make image-test).
HOST_IMAGE_DIR   := $(OUT)/image-host
HOST_IMAGE_FLAGS  = IMAGE_PLATFORMS=linux/$(shell $(GO) env GOARCH) IMAGE_DIR=$(HOST_IMAGE_DIR)

# Test timeouts sized for a 2-core machine.
UNIT_TIMEOUT        ?= 10m
INTEGRATION_TIMEOUT ?= 20m
E2E_TIMEOUT         ?= 40m

.PHONY: e2e-cluster-suite e2e-both tools-oldest-idle all build version image image-test image-host image-reproduce chart-package verify-version tools helm manifests verify-manifests chart-lint chart run run-standalone test verify unit integration e2e e2e-oldest abuse chaos bench perf scale fuzz codegen clean help

all: build

help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

build: ## Build bin/muster-apiserver and the kubectl plugin bin/kubectl-muster, stamped with VERSION.
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/muster-apiserver ./cmd/muster-apiserver
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/kubectl-muster ./cmd/kubectl-muster

version: ## Print the version the binary, the image and the chart share.
	@echo $(VERSION)

# Static (CGO_ENABLED=0), path-free (-trimpath) and stamped only with what
# the commit determines (-buildvcs=false: no VCS stamp beside LDFLAGS).
image: ## Build the multi-arch (IMAGE_PLATFORMS) OCI image into _out/image/ (an OCI layout and archive), with no container daemon.
	@set -e; bins=(); for p in $(IMAGE_PLATFORMS); do \
		out=$(IMAGE_DIR)/bin/$${p/\//_}/muster-apiserver; \
		echo "go build $$p"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false \
			-ldflags '-s -w $(LDFLAGS)' -o $$out ./cmd/muster-apiserver; \
		bins+=(--binary=$$p=$$out); \
	done; \
	cd hack/image && $(GO) run . "$${bins[@]}" \
		--zoneinfo="$$($(GO) env GOROOT)/lib/time/zoneinfo.zip" \
		--version=$(VERSION) --revision=$(GIT_COMMIT) --source=$(IMAGE_SOURCE) \
		--created=$(SOURCE_DATE_EPOCH) \
		--layout=$(IMAGE_DIR)/oci --archive=$(IMAGE_DIR)/muster-apiserver.oci.tar

image-reproduce: ## Build the image twice into fresh directories and fail unless both index digests match.
	hack/verify-image-reproducible.sh

image-test: image ## Test the image's assembly, run the image for this host's platform under runc (hack/install-oci-runtime.sh) and wait for /readyz.
	hack/install-oci-runtime.sh
	cd hack/image && $(GO) test $(GOFLAGS_TEST) -timeout 10m ./...
	$(GO) test $(GOFLAGS_TEST) -timeout 10m ./test/ocirun/... -args -image.layout=$(IMAGE_DIR)/oci

image-host: ## Build the image for this host's platform alone into _out/image-host/ and install runc (make e2e runs it as the chart's pod).
	$(MAKE) --no-print-directory image $(HOST_IMAGE_FLAGS)
	hack/install-oci-runtime.sh

tools: ## Build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (of KUBE_VERSION), etcd, kwok, jobset, karpenter, the frameworks' controllers and helm (only what changed).
	KUBE_VERSION=$(KUBE_VERSION) hack/build-tools.sh

# make run builds only the tools the local cluster runs: Karpenter and the
# frameworks' controllers (LeaderWorkerSet, KubeRay, Trainer) only when
# RUN_ARGS asks for them (--autoscaler, --frameworks), so a first run skips
# their builds.
RUN_TOOLS = kube etcd kwok helm jobset $(if $(findstring --autoscaler,$(RUN_ARGS)),karpenter) $(if $(findstring --frameworks,$(RUN_ARGS)),frameworks)

run: build ## Bring up a local cluster (etcd, kube-apiserver, kube-scheduler, kwok) with Muster aggregated in it; KUBE_VERSION picks the release, RUN_ARGS=--autoscaler adds Karpenter, RUN_ARGS=--frameworks LeaderWorkerSet, KubeRay and Trainer.
	KUBE_VERSION=$(KUBE_VERSION) hack/build-tools.sh $(RUN_TOOLS)
	$(GO) run ./hack/localcluster --bin-dir=$(KUBE_BIN) --muster-binary=$(BIN)/muster-apiserver --out=$(OUT) $(RUN_ARGS)

run-standalone: build ## Serve the API alone on loopback, with no cluster.
	$(BIN)/muster-apiserver --standalone --data-dir=$(OUT)/standalone --secure-port=8443

# make test: what needs the CPU first (vet, builds, unit tests), then the
# suites on local clusters, each release's shards at once (they mostly
# wait), then the two that measure and must run alone: abuse (latency
# under attack) and chaos. The suites of both releases share one pool of
# E2E_JOBS slots (e2e-both), so that no more than E2E_JOBS clusters run at
# once (six at once on 2 cores lost a PodGroup create to a 503 in
# TestHelmUpgradeUnderLoad's rolling update), and the oldest release's
# control plane is built in one of them, at the lowest CPU priority, while
# the newest's shards run.
test: verify chart-lint chart unit integration ## Everything CI runs, with the chaos suite at CHAOS_PODS_TEST pods.
	$(MAKE) --no-print-directory image-test $(HOST_IMAGE_FLAGS)
	$(MAKE) --no-print-directory verify-version
	$(MAKE) --no-print-directory tools
	$(MAKE) --no-print-directory e2e-both
	$(MAKE) --no-print-directory abuse
	$(MAKE) --no-print-directory chaos CHAOS_PODS=$(CHAOS_PODS_TEST)

verify: ## gofmt, go vet, generated code and dist/ up to date.
	@out="$$(gofmt -l cmd pkg test hack)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd hack/image && $(GO) vet ./...
	hack/verify-codegen.sh
	hack/verify-tools-aligned.sh
	$(MAKE) --no-print-directory verify-manifests

# charts/muster, and its default rendering for kubectl. The rendering takes
# the chart's default values, plus: the namespace created and labelled to
# enforce the restricted Pod Security Standard (helm cannot create the
# namespace it stores the release in); no hooks (kubectl would run the
# pre-delete hook at once); and no etcd certificates generated, since a
# committed file must hold no private key.
HELM            := $(BIN)/helm
CHART           := charts/muster
MANIFESTS_FLAGS := --namespace muster-system --no-hooks --set namespace.create=true --set etcd.tls.generate=false
CHART_TEST_VALUES := $(filter-out test/chart/testdata/bad-%,$(wildcard test/chart/testdata/*.yaml))

helm: ## Build bin/helm, pinned in hack/tools/helm/go.mod (only if the pin changed).
	hack/build-tools.sh helm

# render-manifests <dir>: the chart's default rendering into <dir>:
# muster.yaml (everything, for kubectl apply --server-side -f) and
# muster-rbac.yaml (Muster's RBAC alone, which the local cluster applies).
define render-manifests
	@mkdir -p $(1)
	$(HELM) template muster $(CHART) $(MANIFESTS_FLAGS) >$(1)/muster.yaml
	$(HELM) template muster $(CHART) $(MANIFESTS_FLAGS) --show-only templates/rbac.yaml >$(1)/muster-rbac.yaml
endef

manifests: helm ## Render charts/muster with its default values into dist/ (commit the result).
	$(call render-manifests,dist)

verify-manifests: helm ## Check that dist/ is the chart's current rendering.
	$(eval tmp := $(shell mktemp -d))
	$(call render-manifests,$(tmp))
	@diff -ru dist $(tmp) >/dev/null || { diff -ru dist $(tmp); rm -rf $(tmp); echo "dist/ is stale: run make manifests"; exit 1; }
	@rm -rf $(tmp)

CHART_PACKAGE = $(OUT)/chart/muster-$(patsubst v%,%,$(VERSION)).tgz

chart-package: helm ## Package charts/muster as _out/chart/muster-<version>.tgz, its version and appVersion set to VERSION (the image's tag).
	$(HELM) package $(CHART) --version $(patsubst v%,%,$(VERSION)) --app-version $(VERSION) --destination $(OUT)/chart

verify-version: build image-host chart-package ## Check that the binary, the host's image and the packaged chart carry one version.
	hack/verify-version.sh $(VERSION) $(BIN)/muster-apiserver $(HOST_IMAGE_DIR)/oci $(CHART_PACKAGE) $(HELM)

chart-lint: helm ## helm lint --strict charts/muster with its defaults and with each test values file.
	$(HELM) lint --strict $(CHART)
	@set -e; for f in $(CHART_TEST_VALUES); do echo "== helm lint --values $$f"; $(HELM) lint --strict --quiet $(CHART) --values $$f; done

chart: helm ## Render charts/muster with several values files and check what each value renders.
	MUSTER_HELM=$(HELM) $(GO) test $(GOFLAGS_TEST) -timeout $(UNIT_TIMEOUT) ./test/chart/...

unit: ## Unit tests of pure logic.
	$(GO) test $(GOFLAGS_TEST) -timeout $(UNIT_TIMEOUT) ./pkg/... ./cmd/...

integration: ## The server in-process on an embedded etcd.
	$(GO) test $(GOFLAGS_TEST) -timeout $(INTEGRATION_TIMEOUT) ./test/integration/...

# The e2e suites wait on their clusters far more than they compute, so each
# runs as E2E_SHARDS processes at once, each on a local cluster of its own
# (hack/e2e-shard.sh deals the tests out), beside test/cluster's tests.
# Each process's output goes to _out/e2e/<name>.log: its test results are
# printed, and its whole log when it fails.
E2E_SHARDS        ?= 3
E2E_OLDEST_SHARDS ?= 2
E2E_LOGS          := $(OUT)/e2e

e2e: build tools image-host ## A real kube-apiserver (of KUBE_VERSION), kube-scheduler and kwok with Muster aggregated in, and Muster's image run as the chart's pod under runc; test/cluster and E2E_SHARDS shards of test/e2e at once.
	$(GO) test -c -o /dev/null ./test/e2e
	$(MAKE) --no-print-directory -j -Otarget e2e-cluster-suite $(foreach i,$(shell seq 1 $(E2E_SHARDS)),e2e-shard-newest-$(i)-of-$(E2E_SHARDS))

e2e-oldest: build ## The core gang scenarios (E2E_OLDEST_TESTS) on the oldest supported release, OLDEST_KUBE_VERSION, in E2E_OLDEST_SHARDS shards.
	$(MAKE) --no-print-directory tools KUBE_VERSION=$(OLDEST_KUBE_VERSION)
	$(GO) test -c -o /dev/null ./test/e2e
	$(MAKE) --no-print-directory -j -Otarget $(foreach i,$(shell seq 1 $(E2E_OLDEST_SHARDS)),e2e-shard-oldest-$(i)-of-$(E2E_OLDEST_SHARDS))

# e2e-both: the newest release's shards, the oldest's and test/cluster's
# tests, at most E2E_JOBS at once. The first slot builds the oldest
# release's control plane (tools-oldest-idle) while the newest's shards
# run, since they mostly wait; the oldest's shards start once it is built
# and a slot is free.
E2E_JOBS ?= 4
E2E_NEWEST_GOALS = $(foreach i,$(shell seq 1 $(E2E_SHARDS)),e2e-shard-newest-$(i)-of-$(E2E_SHARDS))
E2E_OLDEST_GOALS = $(foreach i,$(shell seq 1 $(E2E_OLDEST_SHARDS)),e2e-shard-oldest-$(i)-of-$(E2E_OLDEST_SHARDS))

e2e-both: build tools image-host ## make e2e and make e2e-oldest in one pool of E2E_JOBS slots, the oldest release's tools built at idle priority beside the newest's shards.
	$(GO) test -c -o /dev/null ./test/e2e
	$(MAKE) --no-print-directory -j$(E2E_JOBS) -Otarget tools-oldest-idle $(E2E_NEWEST_GOALS) $(E2E_OLDEST_GOALS) e2e-cluster-suite

tools-oldest-idle:
	KUBE_VERSION=$(OLDEST_KUBE_VERSION) nice -n 19 hack/build-tools.sh

$(E2E_OLDEST_GOALS): tools-oldest-idle

# e2e-run <log name> <kube version> <go test args>: one go test process of
# the e2e suites, its output in E2E_LOGS/<log name>.log.
define e2e-run
	@mkdir -p $(E2E_LOGS); log=$(E2E_LOGS)/$(1).log; start=$$(date +%s); \
	MUSTER_BIN_DIR=$$(KUBE_VERSION=$(2) hack/build-tools.sh --print-bin-dir) MUSTER_BINARY=$(BIN)/muster-apiserver \
	MUSTER_IMAGE_LAYOUT=$(HOST_IMAGE_DIR)/oci \
	MUSTER_KUBE_VERSION=$$(KUBE_VERSION=$(2) hack/build-tools.sh --print-version) \
		$(GO) test $(GOFLAGS_TEST) -v -timeout $(E2E_TIMEOUT) $(3) >$$log 2>&1; rc=$$?; \
	echo "== $(1): exit $$rc after $$(( $$(date +%s) - start ))s (log: $$log)"; \
	grep -E '^(--- (PASS|FAIL|SKIP)|ok |FAIL|panic:)' $$log; \
	if [ $$rc -ne 0 ]; then echo "== $(1) failed; its whole log:"; cat $$log; fi; exit $$rc
endef

# e2e-shard-<newest|oldest>-<i>-of-<n>: shard i of n of test/e2e.
e2e-shard-newest-%:
	$(call e2e-run,e2e-newest-$*,$(KUBE_VERSION),-run "$$(hack/e2e-shard.sh ./test/e2e $(lastword $(subst -of-, ,$*)) $(firstword $(subst -of-, ,$*)))" ./test/e2e)

e2e-shard-oldest-%:
	$(call e2e-run,e2e-oldest-$*,$(OLDEST_KUBE_VERSION),-run "$$(hack/e2e-shard.sh ./test/e2e $(lastword $(subst -of-, ,$*)) $(firstword $(subst -of-, ,$*)) '$(E2E_OLDEST_RUN)')" ./test/e2e)

e2e-cluster-suite:
	$(call e2e-run,cluster,$(KUBE_VERSION),./test/cluster/...)

ABUSE_TIMEOUT ?= 20m

abuse: build tools ## The hostile-tenant suite: a pods-only tenant tries every known attack while another runs gangs; prints latency, memory, refusals and counts.
	MUSTER_BIN_DIR=$(KUBE_BIN) MUSTER_BINARY=$(BIN)/muster-apiserver \
		$(GO) test $(GOFLAGS_TEST) -v -timeout $(ABUSE_TIMEOUT) -run '^TestAbuse' ./test/abuse/ $(if $(ABUSE_ARGS),-args $(ABUSE_ARGS))

# The chaos suite's size: `make chaos` drives CHAOS_PODS pods, `make test`
# CHAOS_PODS_TEST. CHAOS_ARGS adds flags, e.g. -chaos.seed=N to replay a run.
CHAOS_PODS      ?= 10000
CHAOS_PODS_TEST ?= 2000
CHAOS_TIMEOUT   ?= 60m

chaos: build tools ## Gangs through Muster while its leader is killed every few seconds and kube-apiserver, etcd and Muster's etcd restart (CHAOS_PODS, default 10000); prints counts and timings.
	MUSTER_BIN_DIR=$(KUBE_BIN) MUSTER_BINARY=$(BIN)/muster-apiserver \
		$(GO) test $(GOFLAGS_TEST) -v -timeout $(CHAOS_TIMEOUT) -run '^TestChaos$$' ./test/chaos/ -args -chaos.pods=$(CHAOS_PODS) $(CHAOS_ARGS)

bench: ## Benchmarks of the controller's hot paths and of Muster's admission policies; they print numbers, they assert nothing about speed.
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/controller/... ./pkg/manifests/...

perf: build tools ## Load Muster on a local cluster and print rates and latencies against the raw API rates (PERF_ARGS: see go run ./hack/perf -h).
	MUSTER_BIN_DIR=$(KUBE_BIN) MUSTER_BINARY=$(BIN)/muster-apiserver $(GO) run ./hack/perf $(PERF_ARGS)

scale: build tools ## Gangs that fit, behind 0, 200 and 1,000 waiting gangs and on 500 nodes with 10,000 pods running: latency, admissions/s, idle CPU and memory, each against the raw pipeline (SCALE_ARGS: see go run ./hack/perf scale -h).
	MUSTER_BIN_DIR=$(KUBE_BIN) MUSTER_BINARY=$(BIN)/muster-apiserver $(GO) run ./hack/perf scale $(SCALE_ARGS)

# Go fuzz targets, as <package dir>:<target>. Their seed corpora run in
# `make unit` as plain tests; `make fuzz` fuzzes each for FUZZTIME.
FUZZ_TARGETS := \
	pkg/apis/scheduling:FuzzAnnotationParsers \
	pkg/apis/scheduling/validation:FuzzDecodeAndValidate \
	pkg/apis/scheduling/validation:FuzzTopologyAnnotations \
	pkg/webhook/pods:FuzzHandler \
	pkg/webhook/pods:FuzzPod
FUZZTIME ?= 1m
FUZZ_PARALLEL ?= 2

fuzz: ## Fuzz each target of FUZZ_TARGETS for FUZZTIME (default 1m); a crash is saved under its package's testdata/fuzz.
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name in ./$$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) -parallel $(FUZZ_PARALLEL) ./$$pkg; \
	done

codegen: ## Regenerate deepcopy, conversion, defaulters, OpenAPI and clients.
	hack/update-codegen.sh

clean: ## Remove built binaries of this module and _out/ (keeps the cached cluster tools).
	rm -rf $(BIN)/muster-apiserver $(OUT)
