# schedscope — a lens on the Kubernetes scheduler.

SHELL := /bin/bash
GO ?= go
# The Go release schedscope builds with (go.mod asks for it): the go command
# fetches it from the module proxy when the machine's own Go is older.
export GOTOOLCHAIN ?= go1.27.3
BIN := $(CURDIR)/bin
# The Kubernetes minors schedscope is built for, oldest first. The newest
# builds from go.mod; each older one from its own module file,
# kube/<minor>.mod (make kube-mod), with the build tag kube<minor>, which
# picks the files of its per-minor seams (docs/architecture.md).
KUBE_MINORS := 1.35 1.36 1.37
KUBE_NEWEST := $(lastword $(KUBE_MINORS))
KUBE_OLDER := $(filter-out $(KUBE_NEWEST),$(KUBE_MINORS))
# KUBE_MINOR picks one minor: `make build KUBE_MINOR=1.36` builds its
# schedscope-scheduler, kube-scheduler, kube-apiserver and etcd into
# bin/1.36; without it, everything is built for the newest minor into bin/.
KUBE_MINOR ?=
ifeq ($(KUBE_MINOR),)
KUBE_BIN := $(BIN)
else ifeq ($(filter $(KUBE_MINOR),$(KUBE_MINORS)),)
$(error KUBE_MINOR=$(KUBE_MINOR) is not one of the minors schedscope is built for: $(KUBE_MINORS))
else
KUBE_BIN := $(BIN)/$(KUBE_MINOR)
endif
ifneq ($(filter $(KUBE_MINOR),$(KUBE_OLDER)),)
# The build tag and the go command's flags that build for KUBE_MINOR, in
# the main module and in the example's.
KUBE_TAG := kube$(KUBE_MINOR)
KUBE_FLAGS = -modfile=$(CURDIR)/kube/$(KUBE_MINOR).mod -tags=$(KUBE_TAG)
EXAMPLE_KUBE_FLAGS = -modfile=$(CURDIR)/examples/custom-scheduler/kube/$(KUBE_MINOR).mod -tags=$(KUBE_TAG)
endif
comma := ,
empty :=
space := $(empty) $(empty)
# The release of k8s.io/kubernetes KUBE_MINOR builds with, as its module file requires it.
K8S_VERSION = $(eval K8S_VERSION := $(shell GOTOOLCHAIN=$(GOTOOLCHAIN) $(GO) list $(KUBE_FLAGS) -m -f '{{.Version}}' k8s.io/kubernetes))$(K8S_VERSION)
# schedscope's version, as --version and schedscope_build_info show it.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
VERSION_LDFLAGS = -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(K8S_VERSION))) \
	-X github.com/schedscope/schedscope/pkg/version.Version=$(VERSION)
# The upstream binaries the tests and `make run` start.
UPSTREAM := k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler go.etcd.io/etcd/server/v3
# What `make run` builds besides Jaeger: the processes hack/localstack
# starts and the kubectl plugin its banner and smoke check use.
RUN_PKGS := ./cmd/schedscope-scheduler ./cmd/schedscope-sidecar ./cmd/kubectl-schedscope \
	k8s.io/kubernetes/cmd/kube-apiserver go.etcd.io/etcd/server/v3
# rename-etcd names etcd's binary in $(1) etcd: go build names it after the
# last element of go.etcd.io/etcd/server/v3 (v3, or server in newer Go).
rename-etcd = @mv -f $(1)/v3 $(1)/etcd 2>/dev/null || mv -f $(1)/server $(1)/etcd 2>/dev/null || true
TEST_FLAGS ?=
# Files tests keep (the web page's screenshots): _output/test/_artifacts.
TEST_ARTIFACTS := -artifacts -outputdir $(CURDIR)/_output/test
# `make test` runs the unit and integration tests under the race detector;
# `make test RACE=` runs them without. The bench targets never use it.
RACE ?= -race
# Fuzz targets `make fuzz` runs, as package:target, each for FUZZTIME.
FUZZ_TARGETS := ./pkg/stream:FuzzDecodeStream ./pkg/sidecar/api:FuzzParseParams
FUZZTIME ?= 60s
# The local Go vulnerability database `make vulncheck` builds from golang.org/x/vulndb.
VULNDB := $(CURDIR)/_output/vulndb
# The scheduler_perf harness starts etcd from PATH: KUBE_MINOR's.
export PATH := $(KUBE_BIN):$(BIN):$(PATH)
BENCH_OUT := $(CURDIR)/_output/bench
# make bench-shadow: its output, and the rounds of each mode.
BENCH_SHADOW_OUT := $(CURDIR)/_output/bench-shadow
BENCH_SHADOW_ROUNDS ?= 5
# The compatibility suite: the modes `make test` runs it in (each mode in
# its own process, side by side), and where its logs and table go.
COMPAT_MODES ?= plain recording tracing
# A regular expression over the workload files' paths; empty: every file.
COMPAT_WORKLOADS ?=
COMPAT_OUT := $(CURDIR)/_output/compat$(addprefix -,$(KUBE_MINOR))
# The minors whose scheduler_perf has no hook that hands over the scheduler
# it starts: the suite's test binary is built with a copy of the minor's
# k8s.io/kubernetes to which hack/perfhook adds one.
PERF_HOOK_MINORS := 1.35
# The compatibility matrix's inputs, a directory per minor (make test-minor).
MATRIX_OUT := $(CURDIR)/_output/matrix
# What make test-minor runs of the compatibility suite, and in which modes
# (make test's smoke of each minor; make test-minors-nightly runs it all).
MINOR_COMPAT_WORKLOADS ?= ^(affinity|topology_spreading)/
MINOR_COMPAT_MODES ?= plain recording
# Where `make release` writes the kubectl plugin's archives, their sums and
# the krew manifest.
RELEASE_OUT := $(CURDIR)/_output/release
# How make manifests renders the chart: release schedscope in namespace
# schedscope, without the helm test hooks, for the newest minor, and with
# the sidecar's certificate from cert-manager (the default, generate, would
# make a new CA at every rendering).
MANIFESTS_HELM_FLAGS := schedscope charts/schedscope --namespace schedscope --skip-tests \
	--kube-version $(KUBE_NEWEST).0 --set apiService.certificate.source=certManager
# The monitoring mixin's jsonnet sources (make mixin).
MIXIN_SOURCES = $(shell find mixin -name '*.jsonnet' -o -name '*.libsonnet')
# The images `make image` builds, IMAGE_PREFIX/schedscope-{scheduler,sidecar}:IMAGE_TAG,
# with podman (hack/podman/containers.conf) from static binaries in IMAGE_OUT.
IMAGE_PREFIX ?= ghcr.io/schedscope
IMAGE_TAG ?= $(VERSION)
IMAGE_OUT := $(CURDIR)/_output/image
PODMAN := CONTAINERS_CONF=$(CURDIR)/hack/podman/containers.conf podman
# The images' OCI labels and manifest annotations.
IMAGE_META = org.opencontainers.image.version=$(VERSION) \
	org.opencontainers.image.revision=$(shell git rev-parse HEAD 2>/dev/null) \
	org.opencontainers.image.source=https://github.com/schedscope/schedscope \
	io.schedscope.kubernetes.version=$(K8S_VERSION)

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build schedscope, the etcd, kube-apiserver and kube-scheduler it is tested against, the benchmark's OTLP sink and the example custom scheduler (with and without schedscope) into bin/; with KUBE_MINOR, that minor's schedulers, kube-apiserver and etcd into bin/KUBE_MINOR.
ifeq ($(KUBE_MINOR),)
	@mkdir -p $(BIN)
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/ ./cmd/... ./hack/otlpsink $(UPSTREAM)
	$(call rename-etcd,$(BIN))
	cp cmd/kubectl-schedscope/kubectl_complete-schedscope $(BIN)/
else
	@mkdir -p $(KUBE_BIN)
	$(GO) build $(KUBE_FLAGS) -ldflags "$(VERSION_LDFLAGS)" -o $(KUBE_BIN)/ ./cmd/schedscope-scheduler $(UPSTREAM)
	$(call rename-etcd,$(KUBE_BIN))
endif
	cd examples/custom-scheduler && $(GO) build $(EXAMPLE_KUBE_FLAGS) -ldflags "$(VERSION_LDFLAGS)" -o $(KUBE_BIN)/ ./cmd/...

.PHONY: build-minors
build-minors: ## Build the schedulers, kube-apiserver and etcd of every minor (KUBE_MINORS) into bin/<minor>.
	for m in $(KUBE_MINORS); do $(MAKE) build KUBE_MINOR=$$m || exit 1; done

.PHONY: kube-mod
kube-mod: ## Write kube/KUBE_MINOR.mod (and the example's) for K8S_RELEASE, a release of an older minor: make kube-mod K8S_RELEASE=v1.36.3.
	$(GO) run ./hack/kubemod -kubernetes $(K8S_RELEASE)
	cd examples/custom-scheduler && $(GO) run github.com/schedscope/schedscope/hack/kubemod -kubernetes $(K8S_RELEASE)

.PHONY: build-tools
build-tools: jaeger benchstat promtool krew helm jsonnet ## Build Jaeger, promtool, benchstat, krew, helm and jsonnet, each from its own tools module, into bin/.

.PHONY: jaeger
jaeger: ## Build Jaeger, which receives the scheduler's traces in make run and the tracing tests, from its tools module into bin/.
	@mkdir -p $(BIN)
	cd tools/jaeger && $(GO) build -o $(BIN)/jaeger github.com/jaegertracing/jaeger/cmd/jaeger

.PHONY: promtool
promtool: ## Build promtool, which checks and unit-tests the alert rules, from its tools module into bin/.
	@mkdir -p $(BIN)
	cd tools/promtool && $(GO) build -o $(BIN)/promtool github.com/prometheus/prometheus/cmd/promtool

.PHONY: jsonnet
jsonnet: ## Build jsonnet and jsonnetfmt, which render and format the monitoring mixin (mixin/), from their tools module into bin/.
	@mkdir -p $(BIN)
	cd tools/jsonnet && $(GO) build -o $(BIN)/ github.com/google/go-jsonnet/cmd/jsonnet github.com/google/go-jsonnet/cmd/jsonnetfmt

.PHONY: mixin
mixin: jsonnet ## Format the monitoring mixin (mixin/) and write its alert rules and dashboard into charts/schedscope/files.
	$(BIN)/jsonnetfmt -i $(MIXIN_SOURCES)
	$(BIN)/jsonnet -J mixin -S -m charts/schedscope/files mixin/files.jsonnet

.PHONY: krew
krew: ## Build krew and its manifest validator (validate-krew-manifest), which check the release's plugin manifest, from their tools module into bin/.
	@mkdir -p $(BIN)
	cd tools/krew && $(GO) build -o $(BIN)/ sigs.k8s.io/krew/cmd/krew sigs.k8s.io/krew/cmd/validate-krew-manifest

.PHONY: release
release: krew ## Build the kubectl plugin's release into _output/release: archives (the plugin, LICENSE and its completion scripts) for linux and darwin on amd64 and arm64, sha256 sums and the krew manifest, validated by krew, which installs each archive. VERSION must be vMAJOR.MINOR.PATCH.
	@rm -rf $(RELEASE_OUT)
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct) $(GO) run ./hack/release -version $(VERSION) -out $(RELEASE_OUT)
	$(BIN)/validate-krew-manifest -manifest $(RELEASE_OUT)/schedscope.yaml -skip-install
	@# krew installs each archive, for its platform, into a scratch root.
	@for archive in $(RELEASE_OUT)/*.tar.gz; do \
		platform=$${archive%.tar.gz}; arch=$${platform##*_}; platform=$${platform%_*}; os=$${platform##*_}; \
		root=$$(mktemp -d); \
		env KREW_ROOT=$$root HOME=$$root KREW_OS=$$os KREW_ARCH=$$arch $(BIN)/krew install --manifest $(RELEASE_OUT)/schedscope.yaml \
			--archive $$archive > $$root/install.log 2>&1 || { cat $$root/install.log; exit 1; }; \
		test -x $$root/bin/kubectl-schedscope || { echo "krew installed no kubectl-schedscope for $$os/$$arch"; exit 1; }; \
		echo "$$os/$$arch installed by krew"; rm -rf $$root; \
	done

.PHONY: helm
helm: ## Build helm, which renders and lints the chart (charts/schedscope), from its tools module into bin/.
	@mkdir -p $(BIN)
	cd tools/helm && $(GO) build -o $(BIN)/helm helm.sh/helm/v4/cmd/helm

.PHONY: chart-docs
chart-docs: ## Write the values table of the chart's README (charts/schedscope/README.md) from values.schema.json and values.yaml.
	$(GO) run ./hack/chartdoc -chart charts/schedscope

.PHONY: manifests
manifests: helm ## Write manifests/schedscope.yaml, the chart's default rendering as plain YAML (MANIFESTS_HELM_FLAGS).
	$(BIN)/helm template $(MANIFESTS_HELM_FLAGS) > manifests/schedscope.yaml

.PHONY: benchstat
benchstat: ## Build benchstat, which compares the benchmark's modes, from its tools module into bin/.
	@mkdir -p $(BIN)
	cd tools/benchstat && $(GO) build -o $(BIN)/benchstat golang.org/x/perf/cmd/benchstat

.PHONY: golangci-lint
golangci-lint: ## Build golangci-lint, which make verify runs, from its tools module into bin/.
	@mkdir -p $(BIN)
	cd tools/golangci-lint && $(GO) build -o $(BIN)/golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint

.PHONY: image
image: ## Build the OCI images with podman (Containerfile, FROM scratch) from static binaries built here: the sidecar's with the kubectl plugin, which the chart's helm test runs (IMAGE_TAG), and the scheduler's for each minor (IMAGE_TAG-k8s<minor>).
	@mkdir -p $(IMAGE_OUT)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(VERSION_LDFLAGS)" -o $(IMAGE_OUT)/ ./cmd/schedscope-sidecar ./cmd/kubectl-schedscope
	$(call podman-build,sidecar,$(IMAGE_TAG),$(IMAGE_OUT))
	@for m in $(KUBE_MINORS); do $(MAKE) --no-print-directory image-scheduler KUBE_MINOR=$$m || exit 1; done
	@# The images these tags named before, now untagged.
	@$(PODMAN) image prune --force --filter label=org.opencontainers.image.source=https://github.com/schedscope/schedscope >/dev/null

.PHONY: image-scheduler
image-scheduler: ## Build the scheduler's image of one minor (KUBE_MINOR, default the newest), IMAGE_TAG-k8s<minor>.
	@mkdir -p $(IMAGE_OUT)/$(or $(KUBE_MINOR),$(KUBE_NEWEST))
	CGO_ENABLED=0 $(GO) build $(KUBE_FLAGS) -trimpath -ldflags "-s -w $(VERSION_LDFLAGS)" -o $(IMAGE_OUT)/$(or $(KUBE_MINOR),$(KUBE_NEWEST))/ ./cmd/schedscope-scheduler
	$(call podman-build,scheduler,$(IMAGE_TAG)-k8s$(or $(KUBE_MINOR),$(KUBE_NEWEST)),$(IMAGE_OUT)/$(or $(KUBE_MINOR),$(KUBE_NEWEST)))

# podman-build builds the Containerfile's stage $(1) from the context $(3),
# to which it copies LICENSE, as schedscope-$(1):$(2), with schedscope's
# labels and annotations.
define podman-build
	@cp $(CURDIR)/LICENSE $(3)/LICENSE
	@$(PODMAN) build --quiet --format oci --target $(1) -f $(CURDIR)/Containerfile \
		--label org.opencontainers.image.title=schedscope-$(1) --annotation org.opencontainers.image.title=schedscope-$(1) \
		$(foreach m,$(IMAGE_META),--label $(m) --annotation $(m)) \
		-t $(IMAGE_PREFIX)/schedscope-$(1):$(2) $(3) >/dev/null
	@echo "$(IMAGE_PREFIX)/schedscope-$(1):$(2)"
endef

.PHONY: generate
generate: ## Regenerate the plugin shapes of the framework-equivalence test, one file per minor.
	for m in $(KUBE_MINORS); do $(GO) run ./hack/shapegen -minor $$m || exit 1; done

.PHONY: deps
deps: ## Install the Debian packages the tests need that this machine lacks (hack/deps.sh): as root with apt-get; otherwise print the command to run and fail.
	hack/deps.sh

.PHONY: test
test: deps build build-tools test-alerts ## Run every test: unit, integration (real etcd, kube-apiserver, schedulers), Jaeger end to end, the alert rules' unit tests, a smoke run of the benchmark harness, the compatibility suite, and every minor's proof (test-minors).
	@mkdir -p $(CURDIR)/_output/test
	$(GO) test $(RACE) -timeout 30m $(TEST_ARTIFACTS) $(TEST_FLAGS) ./...
	$(MAKE) bench-smoke
	$(MAKE) test-compat
	$(MAKE) test-minors

.PHONY: test-alerts
test-alerts: promtool ## Check the Prometheus alert rules the mixin generates (charts/schedscope/files) and run their unit tests with promtool.
	$(BIN)/promtool check rules charts/schedscope/files/schedscope.rules.yaml
	$(BIN)/promtool test rules charts/schedscope/files/schedscope.rules_test.yaml

.PHONY: test-compat
test-compat: build ## Run every upstream scheduler_perf workload file at its integration-test sizes in plain and observed modes (COMPAT_MODES); table in _output/compat/table.md.
	@rm -rf $(COMPAT_OUT) && mkdir -p $(COMPAT_OUT)
ifneq ($(filter $(KUBE_MINOR),$(PERF_HOOK_MINORS)),)
	$(GO) run ./hack/perfhook -modfile $(CURDIR)/kube/$(KUBE_MINOR).mod -out $(COMPAT_OUT)/perfhook
	$(GO) test -c -modfile=$(COMPAT_OUT)/perfhook/kube.mod -tags compat,$(KUBE_TAG) -o $(COMPAT_OUT)/compat.test ./test/bench
else
	$(GO) test -c $(filter-out -tags=%,$(KUBE_FLAGS)) -tags $(subst $(space),$(comma),compat $(KUBE_TAG)) -o $(COMPAT_OUT)/compat.test ./test/bench
endif
	@pids=; for mode in $(COMPAT_MODES); do \
		mkdir -p $(COMPAT_OUT)/$$mode; \
		ARTIFACTS=$(COMPAT_OUT)/$$mode $(COMPAT_OUT)/compat.test -test.run '^TestCompatibility$$' -test.count=1 -test.timeout=60m -test.v \
			-schedscope-compat-modes=$$mode -schedscope-compat-workloads='$(COMPAT_WORKLOADS)' -schedscope-compat-report=$(COMPAT_OUT)/table.md > $(COMPAT_OUT)/$$mode.log 2>&1 & pids="$$pids $$!"; \
	done; status=0; for pid in $$pids; do wait $$pid || status=1; done; \
	printf '| workload file | mode | workloads run | failed | result | records written = read |\n|---|---|---|---|---|---|\n'; \
	sort $(COMPAT_OUT)/table.md; grep -h -- '--- FAIL' $(COMPAT_OUT)/*.log; exit $$status

.PHONY: test-minor
test-minor: build ## Prove one minor (KUBE_MINOR, default the newest) against its own binaries: observe's unit tests (plugin shapes, framework fields), the decision-equivalence and drop-in parity tests, and its compatibility suite on MINOR_COMPAT_WORKLOADS in MINOR_COMPAT_MODES; the matrix's inputs in _output/matrix/<minor>.
	$(eval MINOR_OUT := $(MATRIX_OUT)/$(or $(KUBE_MINOR),$(KUBE_NEWEST)))
	@rm -rf $(MINOR_OUT) && mkdir -p $(MINOR_OUT)
	@for b in schedscope-scheduler kube-scheduler kube-apiserver; do printf '%s: ' $$b; $(KUBE_BIN)/$$b --version || exit 1; done | tee $(MINOR_OUT)/versions.txt
	$(GO) vet $(KUBE_FLAGS) ./pkg/scheduler/... ./cmd/schedscope-scheduler/... ./test/integration/equivalence ./test/integration/scheduler ./test/integration/shadow
	@status=0; \
	SCHEDSCOPE_BIN=$(KUBE_BIN) $(GO) test $(KUBE_FLAGS) -count=1 -timeout 30m -v ./pkg/scheduler/observe/... ./cmd/schedscope-scheduler/app 2>&1 | tee $(MINOR_OUT)/test.log; \
		((status |= PIPESTATUS[0])); \
	SCHEDSCOPE_BIN=$(KUBE_BIN) $(GO) test $(KUBE_FLAGS) -count=1 -timeout 30m -v -run '^(TestDecisionEquivalence|TestFeatureGatesReachPlugins|TestDropInParity|TestShadowFidelity|TestShadowTruth)$$' \
		./test/integration/equivalence ./test/integration/scheduler ./test/integration/shadow 2>&1 | tee -a $(MINOR_OUT)/test.log; \
		((status |= PIPESTATUS[0])); \
	$(GO) tool test2json < $(MINOR_OUT)/test.log > $(MINOR_OUT)/test.json; exit $$status
	$(MAKE) test-compat KUBE_MINOR=$(KUBE_MINOR) COMPAT_MODES="$(MINOR_COMPAT_MODES)" COMPAT_WORKLOADS='$(MINOR_COMPAT_WORKLOADS)'
	cp $(COMPAT_OUT)/table.md $(MINOR_OUT)/compat.md

.PHONY: test-minors
test-minors: ## Prove every older minor (KUBE_OLDER) with make test-minor (the newest is proven by make test itself, and make test-minor records it for the matrix), then write the matrix to _output/matrix/matrix.md.
	@status=0; for m in $(KUBE_OLDER); do $(MAKE) test-minor KUBE_MINOR=$$m || status=1; done; \
		$(MAKE) test-minor || status=1; \
		$(GO) run ./hack/matrix -dir $(MATRIX_OUT) > $(MATRIX_OUT)/matrix.md; cat $(MATRIX_OUT)/matrix.md; exit $$status

.PHONY: test-minors-nightly
test-minors-nightly: ## The compatibility suite over every workload file of each older minor's own scheduler_perf, in plain and recording modes, and the matrix (nightly; longer than make test's smoke of each minor).
	$(MAKE) test-minors MINOR_COMPAT_WORKLOADS= MINOR_COMPAT_MODES="plain recording"

.PHONY: matrix
matrix: ## Write the compatibility matrix of the last make test-minors into README.md and docs/upgrade.md.
	$(GO) run ./hack/matrix -dir $(MATRIX_OUT) -update README.md,docs/upgrade.md

.PHONY: test-compat-all
test-compat-all: ## The compatibility suite in every mode: plain, recording, tracing, collector-down and collector-slow (nightly; longer than make test's).
	$(MAKE) test-compat COMPAT_MODES="plain recording tracing collector-down collector-slow"

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (60s); a crasher lands in the package's testdata/fuzz.
	for t in $(FUZZ_TARGETS); do \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) "$${t%%:*}" || exit 1; \
	done

.PHONY: vulncheck
vulncheck: ## Build govulncheck and a local vulnerability database (tools/vuln), and check the main module against it.
	@mkdir -p $(BIN) $(CURDIR)/_output
	cd tools/vuln && $(GO) build -o $(BIN)/govulncheck golang.org/x/vuln/cmd/govulncheck
	cd tools/vuln && $(GO) build -o $(BIN)/vulndb-index golang.org/x/vulndb/cmd/indexdb
	rm -rf $(VULNDB)
	cd tools/vuln && $(GO) mod download golang.org/x/vulndb && \
		$(BIN)/vulndb-index -vulns "$$($(GO) list -m -f '{{.Dir}}' golang.org/x/vulndb)/data/osv" -out $(VULNDB)
	$(BIN)/govulncheck -db file://$(VULNDB) -format json ./... > $(CURDIR)/_output/govulncheck.json
	$(GO) run ./hack/vulncheck -accept hack/vulncheck/accepted.txt < $(CURDIR)/_output/govulncheck.json

.PHONY: test-unit
test-unit: deps ## Run the unit tests only.
	$(GO) test $(RACE) $(TEST_FLAGS) $$($(GO) list ./... | grep -v /test/)

.PHONY: test-integration
test-integration: deps build build-tools ## Run the integration and end-to-end tests only.
	@mkdir -p $(CURDIR)/_output/test
	$(GO) test $(RACE) -timeout 30m $(TEST_ARTIFACTS) $(TEST_FLAGS) ./test/...

.PHONY: test-reliability
test-reliability: build ## Run the reliability tests alone (build tag reliability, not part of test): 5000 nodes, 10000 pods; no record lost; memory and throughput against plain kube-scheduler.
	$(GO) test -tags reliability -count=1 -timeout 60m -v $(TEST_FLAGS) ./test/reliability/...

.PHONY: bench-smoke
bench-smoke: build benchstat ## Run the overhead benchmark harness on its smallest workload, once in every mode, and the per-process benchmark on 50 nodes, every attempt recorded and read back; benchstat's tables in _output/bench/smoke.
	$(GO) run ./hack/bench -smoke -benchstat $(BIN)/benchstat -out $(BENCH_OUT)/smoke

.PHONY: bench
bench: build benchstat ## Measure schedscope's overhead against plain kube-scheduler (scheduler_perf; each scheduler in its own process: CPU per pod, peak RSS; compared with benchstat) and the recorder micro-benchmarks; results in _output/bench and docs/performance.md.
	$(GO) run ./hack/bench -benchstat $(BIN)/benchstat -out $(BENCH_OUT) -doc docs/performance.md

.PHONY: bench-shadow
bench-shadow: build benchstat ## Measure what a shadow profile costs the scheduler: SchedulingBasic/5000Nodes_10000Pods in its own process, no shadow against a bin-packing shadow of every attempt and of every tenth, BENCH_SHADOW_ROUNDS interleaved rounds; results in _output/bench-shadow and docs/shadow.md.
	$(GO) run ./hack/bench -shadow -process-count $(BENCH_SHADOW_ROUNDS) -benchstat $(BIN)/benchstat -out $(BENCH_SHADOW_OUT) -doc docs/shadow.md

.PHONY: bench-doc
bench-doc: ## Write the results of the last make bench, in _output/bench, into docs/performance.md without measuring.
	$(GO) run ./hack/bench -report-only -out $(BENCH_OUT) -doc docs/performance.md

.PHONY: verify
verify: golangci-lint helm jsonnet ## Lint (golangci-lint, .golangci.yml), check go.mod tidiness and generated code: plugin shapes, the mixin's files, the chart's README and manifests/.
	$(BIN)/golangci-lint run ./...
	cd examples/custom-scheduler && $(BIN)/golangci-lint run ./... && $(GO) mod tidy -diff
	$(GO) mod tidy -diff
	cd tools/jaeger && $(GO) mod tidy -diff
	cd tools/promtool && $(GO) mod tidy -diff
	cd tools/vuln && $(GO) mod tidy -diff
	cd tools/benchstat && $(GO) mod tidy -diff
	cd tools/golangci-lint && $(GO) mod tidy -diff
	cd tools/krew && $(GO) mod tidy -diff
	cd tools/helm && $(GO) mod tidy -diff
	cd tools/jsonnet && $(GO) mod tidy -diff
	@for m in $(KUBE_MINORS); do f=zz_generated.shapes_$$(echo $$m | tr . _)_test.go; \
		$(GO) run ./hack/shapegen -minor $$m -out /tmp/$$f.new && \
		diff -u pkg/scheduler/observe/$$f /tmp/$$f.new || { echo "plugin shapes out of date: make generate"; exit 1; }; done
	@$(BIN)/jsonnetfmt --test $(MIXIN_SOURCES) || { echo "the mixin's sources are not formatted: make mixin"; exit 1; }
	@rm -rf $(CURDIR)/_output/mixin && mkdir -p $(CURDIR)/_output/mixin
	@$(BIN)/jsonnet -J mixin -S -m $(CURDIR)/_output/mixin mixin/files.jsonnet >/dev/null && \
		( for f in $$(ls $(CURDIR)/_output/mixin); do diff -u charts/schedscope/files/$$f $(CURDIR)/_output/mixin/$$f || exit 1; done ) || \
		{ echo "charts/schedscope/files differs from the mixin's rendering: make mixin"; exit 1; }
	@$(GO) run ./hack/chartdoc -chart charts/schedscope -out $(CURDIR)/_output/chart-README.md && \
		diff -u charts/schedscope/README.md $(CURDIR)/_output/chart-README.md || { echo "the chart's README is out of date: make chart-docs"; exit 1; }
	@$(BIN)/helm template $(MANIFESTS_HELM_FLAGS) > $(CURDIR)/_output/schedscope.yaml && \
		diff -u manifests/schedscope.yaml $(CURDIR)/_output/schedscope.yaml || { echo "manifests/ differs from the chart's rendering: make manifests"; exit 1; }

.PHONY: run
run: jaeger ## Run schedscope on this machine: etcd, kube-apiserver, the scheduler, the sidecar serving the explain API through the kube-apiserver, Jaeger and a demo workload. Builds only those and the kubectl plugin (RUN_PKGS).
	@mkdir -p $(BIN)
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/ $(RUN_PKGS)
	$(call rename-etcd,$(BIN))
	$(GO) build -o $(BIN)/localstack ./hack/localstack
	$(BIN)/localstack

.PHONY: clean
clean: ## Remove built binaries and benchmark output.
	rm -rf $(BIN) _output
