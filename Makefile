# The two Quick-start commands: `make run` and `make test`. Both install what is missing first:
# the package installer runs only when $(BUILD)/.deps-installed is missing or older than
# scripts/install-deps.sh (so `make -n build` after a build runs no installer), and cmake
# configures only when the build folder or its options are new. `make deps` runs it anyway.
BUILD   ?= build
JOBS    ?= $(shell nproc)
WERROR  ?= ON
CMAKE_FLAGS ?=
CMAKE_ARGS := -DRSIM_WERROR=$(WERROR) $(CMAKE_FLAGS)
STAMP   := $(BUILD)/.deps-installed
FLAGS   := $(BUILD)/.cmake-args

.PHONY: deps configure build run test check-sizes test-asan test-clang test-tsan python deb check-install bench bench-probe bench-e2e bench-roofline bench-torch bench-shard validation validation-serving validation-gpu validation-kernels clean

deps:
	./scripts/install-deps.sh
	@mkdir -p $(BUILD) && touch $(STAMP)

$(STAMP): scripts/install-deps.sh
	./scripts/install-deps.sh
	@mkdir -p $(BUILD) && touch $@

# rewritten (at parse time) only when the options differ from the last configure's
ifneq ($(shell cat $(FLAGS) 2>/dev/null),$(strip $(CMAKE_ARGS)))
$(shell mkdir -p $(BUILD) && echo '$(strip $(CMAKE_ARGS))' > $(FLAGS))
endif
$(FLAGS):
	@mkdir -p $(BUILD); echo '$(strip $(CMAKE_ARGS))' > $@

$(BUILD)/CMakeCache.txt: $(STAMP) $(FLAGS)
	cmake -S . -B $(BUILD) $(CMAKE_ARGS) >/dev/null && touch $@

configure: $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The main job: the group-convolution sweep of seed 000, tables into out/group_conv_sweep/.
run: build
	./$(BUILD)/rsim run scenarios/group_conv_sweep.yaml

# Every test, $(JOBS) at a time (the tests share no files: each writes under its own folder).
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The test suite under AddressSanitizer and UndefinedBehaviorSanitizer.
test-asan:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DRSIM_SANITIZE=ON -DRSIM_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug"

# The test suite built with clang 14 (its warnings as errors too), and without oneDNN: rsim must build
# and pass without it, `rsim measure` saying what is missing (the TSan build compiles the oneDNN
# timing with clang).
test-clang:
	$(MAKE) test BUILD=build-clang CMAKE_FLAGS="-DCMAKE_CXX_COMPILER=clang++-14 -DRSIM_BENCH=OFF -DRSIM_PYTHON=OFF -DRSIM_DNNL=OFF"

# ThreadSanitizer (clang 14): the parallel sweep tests ([parallel]) and a run with 2 workers.
# setarch -R: TSan's fixed memory layout does not survive the kernel's mmap randomization.
TSAN_ENV := TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" setarch -R
test-tsan:
	$(MAKE) configure BUILD=build-tsan CMAKE_FLAGS="-DCMAKE_CXX_COMPILER=clang++-14 -DRSIM_TSAN=ON -DRSIM_BENCH=OFF -DRSIM_PYTHON=OFF"
	cmake --build build-tsan -j $(JOBS) --target rsim rsim_tests
	$(TSAN_ENV) build-tsan/tests/rsim_tests "[parallel]"
	$(TSAN_ENV) build-tsan/rsim run scenarios/study_avx512_16core_grid.yaml --jobs 2 --quiet --no-plots --out build-tsan/out

# The Python module, into $(BUILD)/python: PYTHONPATH=$(BUILD)/python python3 -c 'import rsim'
python: configure
	cmake --build $(BUILD) -j $(JOBS) --target rsim_python

# The Debian package, in $(BUILD)/: rsim_<version>_<arch>.deb
deb: build
	cd $(BUILD) && cpack -G DEB

# From a copy of the checkout (then deleted): Release build, install, .deb, run both from elsewhere.
check-install: $(STAMP)
	./scripts/check-install.sh

# no source file over 800 lines, no function over 150, but those listed (which may only shrink); the
# rooms include one way
check-sizes:
	python3 scripts/check_sizes.py
	python3 scripts/check_rooms.py

bench: build
	./$(BUILD)/bench/rsim_bench
	./$(BUILD)/bench/rsim_bench_onnx
	./$(BUILD)/bench/rsim_bench_serving

# `rsim probe` beside reference kernels (STREAM Copy/Triad, a hand-written FMA chain): about 2 minutes
# (add ARGS=--quick for the quick probe only).
bench-probe: build
	./$(BUILD)/bench/rsim_bench_probe $(ARGS)

# docs/validation.md: probe, probe vs reference kernels, measure ResNet-18/50, MobileNetV2, VGG16 and
# the six seed sweeps, calibrate with cross-validation (a few minutes; ARGS=--threads 1 on a busy machine).
validation: build
	python3 scripts/validation.py --rsim $(BUILD)/rsim $(ARGS)

# End to end: `rsim run` against a Python loop and a plain C++ writer (add ARGS=--quick for 10x smaller).
bench-e2e: build
	python3 bench/e2e.py --rsim $(BUILD)/rsim $(ARGS)

# A 40,000-point roofline drawn by rsim (`rsim run` with the figure minus without) and by matplotlib
# from rsim's results.csv, in one run (≈ 10 s; needs python3-matplotlib, else says so and exits 0).
bench-roofline: build
	python3 bench/roofline_mpl.py --rsim $(BUILD)/rsim $(ARGS)

# rsim measure --backend torch (ResNet-18, CPU) beside a torchvision forward pass in one run: the
# ratio against issue 25's 1.5x (needs python3-torch and python3-torchvision; ≈ 1 minute).
# A sweep of 10^8 layer evaluations in 2 shards beside one process, and their merge (docs/cluster.md)
bench-shard: build
	python3 bench/shard.py --rsim $(BUILD)/rsim $(ARGS)

bench-torch: build
	/usr/bin/env $(TORCH_PYTHON) bench/torch_cpu.py --rsim $(BUILD)/rsim $(ARGS)

clean:
	rm -rf build build-asan build-clang build-tsan out

# docs/validation-gpu.md from the committed H200 measurements (tests/data/h200): calibrate, predict
# every measured network in every execution mode, the GEMM efficiency map (needs python3-matplotlib)
# (Debian's interpreter, where apt installs matplotlib, when there is one)
GPU_VALIDATION_PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
TORCH_PYTHON ?= $(GPU_VALIDATION_PYTHON)
validation-serving: build
	python3 scripts/validation_serving.py $(BUILD)/rsim

validation-kernels: build
	$(GPU_VALIDATION_PYTHON) scripts/validation_kernels.py --rsim $(BUILD)/rsim

validation-gpu: build
	$(GPU_VALIDATION_PYTHON) scripts/validation_gpu.py --rsim $(BUILD)/rsim
