# agentkit developer entry points. `make help` lists them.
#
#   make deps     install (as root) or name (otherwise) the missing Debian packages
#   make build    configure once into build/, then build incrementally
#   make demo     build only build/examples/$(DEMO) (and what it links), then run it
#   make test     build and run every ctest case
#   make bench    build, install the JS peers (npm ci), run every build/tests/bench/bench_*
#   make asan     ASan+UBSan build in build-asan/ and its ctest run
#   make tsan     ThreadSanitizer build in build-tsan/ and its ctest run
#   make fuzz     libFuzzer targets (clang) in build-fuzz/, each run for FUZZ_SECONDS
#   make clean    remove build/, build-asan/, build-tsan/ and build-fuzz/

# Debian 12 packages the build needs; keep this the only list.
PACKAGES := cmake g++ make pkg-config ccache \
            libcurl4-openssl-dev nlohmann-json3-dev libspdlog-dev libyaml-cpp-dev libcli11-dev \
            catch2 libtrompeloeil-cpp-dev libsqlite3-dev libpq-dev postgresql libssl-dev openssl \
            clang-14 libclang-rt-14-dev chromium bubblewrap

DEMO            ?= example_06_switch_providers
BUILD_DIR       ?= build
BUILD_TYPE      ?= RelWithDebInfo
ASAN_DIR        ?= build-asan
# Debug, not RelWithDebInfo: compiling dominates the sanitizer run. Measured
# on 2 cores, cold ccache: Debug 177s end to end, RelWithDebInfo 492s.
ASAN_BUILD_TYPE ?= Debug
# Line tables only (-g1): sanitizer reports keep file:line, and the objects
# and links are much smaller than with full debug info.
SANITIZER_DEBUG_FLAGS ?= -g1
TSAN_DIR        ?= build-tsan
TSAN_BUILD_TYPE ?= Debug
TSAN_SUPPRESSIONS ?= $(CURDIR)/tests/tsan.supp
FUZZ_DIR        ?= build-fuzz
FUZZ_CXX        ?= clang++-14
FUZZ_BUILD_TYPE ?= RelWithDebInfo
FUZZ_SECONDS    ?= 60
# Extra libFuzzer flags, e.g. FUZZ_FLAGS=-jobs=2 or -only_ascii=1.
FUZZ_FLAGS      ?=
# Every tests/fuzz/fuzz_<name>.cpp is a target; FUZZ_TARGETS="sse egress" runs a few.
FUZZ_TARGETS    ?= $(patsubst tests/fuzz/fuzz_%.cpp,%,$(sort $(wildcard tests/fuzz/fuzz_*.cpp)))
JOBS            ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE           ?= cmake
CTEST           ?= ctest
CMAKE_FLAGS     ?=
CTEST_FLAGS     ?=
PEERS_DIR       ?= tests/bench/peers

# ccache: leave the build directory out of the hash (it is hashed because of
# -g), so the consumer.subdirectory_consumer test, which compiles the same
# sources with the same flags from another directory, reuses build/'s objects.
export CCACHE_NOHASHDIR ?= 1
# Paths under the checkout are hashed relative to it, so another clone or
# worktree of the project reuses the same cache entries.
export CCACHE_BASEDIR ?= $(CURDIR)
# The test executables use precompiled headers: without these ccache counts
# each of their objects as uncacheable and every clone compiles them again.
export CCACHE_SLOPPINESS ?= pch_defines,time_macros,include_file_mtime,include_file_ctime

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build
.DELETE_ON_ERROR:
MAKEFLAGS += --no-print-directory

.PHONY: help deps configure build demo test bench bench-peers asan asan-configure asan-build \
        tsan tsan-configure tsan-build fuzz fuzz-configure fuzz-build clean

help:
	@sed -n 's/^#   make /make /p' $(firstword $(MAKEFILE_LIST))

# node and npm (for the MCP tests' reference servers) may come from outside apt:
# Debian's nodejs/npm are named only when the command is missing from PATH.
deps:
	@missing=(); \
	for pkg in $(PACKAGES); do \
	  status=$$(dpkg-query -W -f='$${db:Status-Status}' "$$pkg" 2>/dev/null || true); \
	  [[ "$$status" == installed ]] || missing+=("$$pkg"); \
	done; \
	command -v node >/dev/null 2>&1 || missing+=(nodejs); \
	command -v npm >/dev/null 2>&1 || missing+=(npm); \
	if (( $${#missing[@]} )); then \
	  if [[ $$(id -u) -eq 0 ]]; then \
	    echo "deps: installing missing packages: $${missing[*]}"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get update && apt-get install -y --no-install-recommends "$${missing[@]}"; \
	  else \
	    echo "deps: missing Debian packages: $${missing[*]}" >&2; \
	    echo "deps: run: sudo apt-get update && sudo apt-get install -y --no-install-recommends $${missing[*]}" >&2; \
	    exit 1; \
	  fi; \
	fi

# Configure only when the build tree has no cache yet; afterwards the
# generated build system re-runs CMake itself when a CMakeLists changes.
# A failed configure removes the cache so the next run starts over.
$(BUILD_DIR)/CMakeCache.txt: | deps
	$(CMAKE) -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) || { rm -f $@; exit 1; }

$(ASAN_DIR)/CMakeCache.txt: | deps
	$(CMAKE) -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=$(ASAN_BUILD_TYPE) \
	  -DAGENTKIT_SANITIZE=ON -DAGENTKIT_BUILD_BENCHMARKS=OFF \
	  -DCMAKE_CXX_FLAGS_DEBUG="$(SANITIZER_DEBUG_FLAGS)" $(CMAKE_FLAGS) || { rm -f $@; exit 1; }

configure: deps $(BUILD_DIR)/CMakeCache.txt

build: configure
	$(CMAKE) --build $(BUILD_DIR) -j$(JOBS)

# Only the demo and the libraries it links, not every test: a fresh clone
# shows the demo's first line in minutes (`make build` and `make test` build
# everything).
demo: configure
	$(CMAKE) --build $(BUILD_DIR) -j$(JOBS) --target $(DEMO)
	./$(BUILD_DIR)/examples/$(DEMO)

# The crash harnesses' summary lines (tests/helpers/summary.h) follow ctest's.
SHOW_SUMMARIES = cat $(1)/summaries/*.txt 2>/dev/null || true

test: build
	@rm -rf $(BUILD_DIR)/summaries
	$(CTEST) --test-dir $(BUILD_DIR) --output-on-failure --no-tests=error -j$(JOBS) $(CTEST_FLAGS)
	@$(call SHOW_SUMMARIES,$(BUILD_DIR))

# The JS agent SDKs bench_peers compares against, installed from the
# committed lockfile; npm ci runs again only when the lockfile changes.
bench-peers:
	@lock=$$(sha256sum $(PEERS_DIR)/package-lock.json | cut -d' ' -f1); \
	stamp=$(PEERS_DIR)/node_modules/.agentkit-lock-sha256; \
	if [[ "$$(cat "$$stamp" 2>/dev/null)" != "$$lock" ]]; then \
	  command -v npm >/dev/null || { echo "bench: the peer comparison needs node (>= 20) and npm on PATH" >&2; exit 1; }; \
	  echo "bench: npm ci in $(PEERS_DIR)"; \
	  (cd $(PEERS_DIR) && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error); \
	  echo "$$lock" > "$$stamp"; \
	fi

bench: build bench-peers
	@shopt -s nullglob; benches=(); \
	for b in $(BUILD_DIR)/tests/bench/bench_*; do \
	  [[ -f "$$b" && -x "$$b" ]] && benches+=("$$b"); \
	done; \
	if (( ! $${#benches[@]} )); then echo "bench: no bench_* executables in $(BUILD_DIR)/tests/bench"; exit 0; fi; \
	failed=0; \
	for b in "$${benches[@]}"; do \
	  echo "==> $$b"; \
	  "$$b" || { echo "bench: $$b exited with status $$?" >&2; failed=1; }; \
	done; \
	exit $$failed

# The consumer-install cases (ctest label `consumer`) build agentkit again
# outside this tree without sanitizers, so the sanitizer run skips them.
asan-configure: deps $(ASAN_DIR)/CMakeCache.txt

asan-build: asan-configure
	$(CMAKE) --build $(ASAN_DIR) -j$(JOBS)

asan: asan-build
	@rm -rf $(ASAN_DIR)/summaries
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(CTEST) --test-dir $(ASAN_DIR) --output-on-failure --no-tests=error -j$(JOBS) -LE consumer $(CTEST_FLAGS)
	@$(call SHOW_SUMMARIES,$(ASAN_DIR))

# ThreadSanitizer over the same ctest cases as asan (the consumer cases build
# without sanitizers). Reports in third-party code only are suppressed, each
# with its reason, in tests/tsan.supp; halt_on_error fails the test at the
# first report.
$(TSAN_DIR)/CMakeCache.txt: | deps
	$(CMAKE) -S . -B $(TSAN_DIR) -DCMAKE_BUILD_TYPE=$(TSAN_BUILD_TYPE) \
	  -DAGENTKIT_TSAN=ON -DAGENTKIT_BUILD_BENCHMARKS=OFF \
	  -DCMAKE_CXX_FLAGS_DEBUG="$(SANITIZER_DEBUG_FLAGS)" $(CMAKE_FLAGS) || { rm -f $@; exit 1; }

tsan-configure: deps $(TSAN_DIR)/CMakeCache.txt

tsan-build: tsan-configure
	$(CMAKE) --build $(TSAN_DIR) -j$(JOBS)

tsan: tsan-build
	@rm -rf $(TSAN_DIR)/summaries
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(TSAN_SUPPRESSIONS)" \
	  $(CTEST) --test-dir $(TSAN_DIR) --output-on-failure --no-tests=error -j$(JOBS) -LE consumer $(CTEST_FLAGS)
	@$(call SHOW_SUMMARIES,$(TSAN_DIR))

# libFuzzer needs clang (Debian's clang-14); FUZZ_CXX names another one.
# Only the libraries the targets use and the targets are built.
$(FUZZ_DIR)/CMakeCache.txt: | deps
	@command -v $(FUZZ_CXX) >/dev/null || { echo "fuzz: $(FUZZ_CXX) is missing; run: sudo apt-get install -y clang-14" >&2; exit 1; }
	$(CMAKE) -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=$(FUZZ_BUILD_TYPE) -DCMAKE_CXX_COMPILER=$(FUZZ_CXX) \
	  -DAGENTKIT_FUZZ=ON $(CMAKE_FLAGS) || { rm -f $@; exit 1; }

fuzz-configure: deps $(FUZZ_DIR)/CMakeCache.txt

fuzz-build: fuzz-configure
	$(CMAKE) --build $(FUZZ_DIR) -j$(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))

# Each target runs for FUZZ_SECONDS with its dictionary (tests/fuzz/<name>.dict)
# from its committed seeds (tests/fuzz/corpus/<name>) plus what earlier runs found
# ($(FUZZ_DIR)/corpus/<name>); a crash is saved under $(FUZZ_DIR)/artifacts/
# and fails the run after every target has had its turn.
fuzz: fuzz-build
	@mkdir -p $(FUZZ_DIR)/logs $(FUZZ_DIR)/artifacts; failed=(); \
	printf '%-16s %12s %8s %8s\n' target executions corpus crashes > $(FUZZ_DIR)/fuzz-summary.txt; \
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_DIR)/corpus/$$t; log=$(FUZZ_DIR)/logs/$$t.log; \
	  echo "fuzz: fuzz_$$t for $(FUZZ_SECONDS)s"; \
	  status=0; dict=(); [[ -f tests/fuzz/$$t.dict ]] && dict=(-dict=tests/fuzz/$$t.dict); \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    ./$(FUZZ_DIR)/tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_DIR)/artifacts/$$t- "$${dict[@]}" $(FUZZ_FLAGS) \
	    $(FUZZ_DIR)/corpus/$$t tests/fuzz/corpus/$$t > $$log 2>&1 || status=$$?; \
	  runs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $$log | tail -n 1); \
	  corpus=$$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' $$log | tail -n 1); \
	  crashes=0; \
	  if (( status != 0 )); then crashes=1; failed+=($$t); tail -n 40 $$log >&2; fi; \
	  printf '%-16s %12s %8s %8s\n' $$t "$${runs:-?}" "$${corpus:-?}" $$crashes >> $(FUZZ_DIR)/fuzz-summary.txt; \
	done; \
	cat $(FUZZ_DIR)/fuzz-summary.txt; \
	if (( $${#failed[@]} )); then echo "fuzz: crashes in: $${failed[*]} (inputs in $(FUZZ_DIR)/artifacts/)" >&2; exit 1; fi

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(TSAN_DIR) $(FUZZ_DIR)
