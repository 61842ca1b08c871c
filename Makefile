# dynprof: the commands a newcomer types.
#
#   make demo    install what the build and the demo need, build, run a local
#                cluster end to end (no PyTorch, no Node.js)
#   make test    install the rest, build, run every test (then again under
#                ASan+UBSan)
#   make bench   run every benchmark and print its figures
#
# BUILD (default build) and ASAN_BUILD (default build-asan) name the build trees.

BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
# SANITIZE=0 skips the ASan+UBSan pass of make test.
SANITIZE ?= 1
CTEST_FLAGS ?= --output-on-failure

.PHONY: all deps deps-demo deps-test build test test-fast test-asan demo bench \
	install clean

all: build

deps:
	@sh scripts/deps.sh

deps-demo:
	@DEPS_EXTRA="" sh scripts/deps.sh

deps-test:
	@DEPS_EXTRA="test torch node" sh scripts/deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DDYNPROF_WERROR=ON $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

test: deps-test
	@$(MAKE) --no-print-directory test-fast
	@if [ "$(SANITIZE)" = 1 ]; then $(MAKE) --no-print-directory test-asan; fi

test-fast: build
	cd $(BUILD) && ctest $(CTEST_FLAGS) -j$(JOBS)

test-asan:
	cmake -S . -B $(ASAN_BUILD) -DDYNPROF_WERROR=ON -DDYNPROF_SANITIZE=ON \
	    -DCMAKE_BUILD_TYPE=Debug $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    DYNPROF_SANITIZED=1 ctest $(CTEST_FLAGS) -j$(JOBS) -LE nosan

demo: deps-demo build
	@sh scripts/demo.sh $(BUILD)

bench: deps build
	@sh bench/run.sh $(BUILD)

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
