# The two set-up commands (`make run`, `make test`) and the build. Every target installs missing
# Debian packages first (scripts/setup), so they work on a fresh machine.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
# The node's container runtime for `make run`: kvol's own (the node's binaries) or containerd
# (pods from their images). The tests use both, so `make test` installs containerd's packages.
CONTAINER_RUNTIME ?= kvol

.PHONY: all setup configure build build-kvol test unit run e2e-upstream clean

all: build

setup:
	@scripts/setup --container-runtime $(CONTAINER_RUNTIME)

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

configure: setup $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The kvol binary alone: what `make run` needs (no tests, benchmarks or fuzz build).
build-kvol: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target kvol

# Every test: unit tests, integration tests and the bounded fuzz run.
test unit: CONTAINER_RUNTIME = containerd
test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# Unit tests only (fast).
unit: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -L unit

# kvol server on ./data (embedded SQLite store, HTTPS on 127.0.0.1:6443) until Ctrl-C.
run: build-kvol
	@mkdir -p data
	@echo "Starting kvol server on ./data. To use it from another shell:"
	@echo "  export KUBECONFIG=$(CURDIR)/data/kubeconfig"
	@echo "  kubectl get pv"
	./$(BUILD_DIR)/kvol server --data-dir data --container-runtime $(CONTAINER_RUNTIME)

# Kubernetes' own e2e suite (e2e.test v1.20, built from Debian's kubernetes source package) run
# against a fresh kvol server: its [sig-storage] specs by default (KVOL_E2E_FOCUS, KVOL_E2E_SKIP
# override them). The first build of e2e.test takes about ten minutes. Not part of `make test`.
e2e-upstream: build-kvol
	KVOL_BIN=$(BUILD_DIR)/kvol E2E_DIR=$${E2E_DIR:-$(BUILD_DIR)/e2e-upstream} scripts/e2e-upstream

clean:
	rm -rf $(BUILD_DIR)
