# Thin front door: every target does its own set-up, then hands over to CMake/CTest.
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
PLEXUS = $(BUILD)/plexus

.PHONY: all setup build run test test-asan bench clean

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

# Unit tests built with AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan:
	@bash scripts/setup.sh
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DPLEXUS_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) -L unit --timeout 900

bench: build
	@bash scripts/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
