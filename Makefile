# schedscope — a lens on the Kubernetes scheduler.

SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
K8S_VERSION := v1.37.2
VERSION_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37
# The upstream binaries the tests and `make run` start.
UPSTREAM := k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler go.etcd.io/etcd/server/v3
TEST_FLAGS ?=

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build schedscope and the etcd, kube-apiserver and kube-scheduler it is tested against into bin/.
	@mkdir -p $(BIN)
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/ ./cmd/... $(UPSTREAM)
	@mv -f $(BIN)/v3 $(BIN)/etcd 2>/dev/null || mv -f $(BIN)/server $(BIN)/etcd 2>/dev/null || true

.PHONY: generate
generate: ## Regenerate the observing plugin wrappers.
	$(GO) run ./hack/wrappergen ./...

.PHONY: test
test: build ## Run the unit and integration tests (real etcd, kube-apiserver and schedulers).
	$(GO) test $(TEST_FLAGS) ./...

.PHONY: test-unit
test-unit: ## Run the unit tests only.
	$(GO) test $(TEST_FLAGS) $$($(GO) list ./... | grep -v /test/)

.PHONY: test-integration
test-integration: build ## Run the integration tests only.
	$(GO) test $(TEST_FLAGS) ./test/...

.PHONY: verify
verify: ## Check formatting, vet, go.mod tidiness and generated code.
	@test -z "$$(gofmt -l cmd pkg test hack)" || { gofmt -l cmd pkg test hack; echo "gofmt needed"; exit 1; }
	$(GO) vet ./...
	$(GO) mod tidy -diff
	@cp pkg/plugins/observe/zz_generated.wrappers.go /tmp/zz_generated.wrappers.go.orig
	@$(GO) run ./hack/wrappergen -out /tmp/zz_generated.wrappers.go.new ./... && \
		diff -u pkg/plugins/observe/zz_generated.wrappers.go /tmp/zz_generated.wrappers.go.new || { echo "wrappers out of date: make generate"; exit 1; }

.PHONY: run
run: build ## Run schedscope on this machine: a local cluster, the scheduler, a demo workload.
	$(GO) run ./hack/localstack

.PHONY: clean
clean: ## Remove built binaries.
	rm -rf $(BIN)
