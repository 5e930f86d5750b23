# Thin front door: every target does its own set-up, then hands over to CMake/CTest.
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
JOBS ?= $(shell nproc)
PLEXUS = $(BUILD)/plexus

.PHONY: all setup build run test test-asan fuzz bench clean

all: build

setup:
	@bash scripts/setup.sh

$(BUILD)/build.ninja:
	@bash scripts/setup.sh
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# The main job: the tour on the demo model (builds only the plexus binary, not the tests).
run: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target plexus
	@bash scripts/demo.sh $(PLEXUS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900

# Unit tests built with AddressSanitizer + UndefinedBehaviorSanitizer. Without the CUDA backend
# (its tests skip without a GPU; `make test` builds it), the benchmarks and the test executables
# holding no unit tests (no test here runs them). Unit tests labelled slow as well (CLI tests that
# run the plexus binary dozens of times: 10-50 s each under the sanitizers) run in make test only.
test-asan:
	@bash scripts/setup.sh
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DPLEXUS_SANITIZE=ON -DPLEXUS_CUDA=OFF -DPLEXUS_BENCHMARKS=OFF -DPLEXUS_UNIT_TESTS_ONLY=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) -L unit -LE slow --timeout 900

# libFuzzer harnesses with every library instrumented (clang), each run for FUZZ_SECONDS;
# corpora in fuzz/corpus (replayed by ctest in every build). See docs/fuzzing.md.
fuzz:
	@bash scripts/setup.sh
	CXX=clang++ CC=clang cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPLEXUS_FUZZ=ON
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_all
	@bash scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

bench: build
	@bash scripts/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
