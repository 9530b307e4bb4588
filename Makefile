# The two Quick-start commands: `make run` and `make test`. Both install what is missing first.
BUILD   ?= build
JOBS    ?= $(shell nproc)
WERROR  ?= ON
CMAKE_FLAGS ?=

.PHONY: deps configure build run test test-asan bench bench-e2e clean

deps:
	./scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD) -DRSIM_WERROR=$(WERROR) $(CMAKE_FLAGS) >/dev/null

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The main job: the group-convolution sweep of seed 000, tables into out/group_conv_sweep/.
run: build
	./$(BUILD)/rsim run scenarios/group_conv_sweep.yaml

# Every test.
test: build
	cd $(BUILD) && ctest --output-on-failure

# The test suite under AddressSanitizer and UndefinedBehaviorSanitizer.
test-asan:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DRSIM_SANITIZE=ON -DRSIM_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug"

bench: build
	./$(BUILD)/bench/rsim_bench
	./$(BUILD)/bench/rsim_bench_onnx

# End to end: `rsim run` against a Python loop and a plain C++ writer (add ARGS=--quick for 10x smaller).
bench-e2e: build
	python3 bench/e2e.py --rsim $(BUILD)/rsim $(ARGS)

clean:
	rm -rf build build-asan out
