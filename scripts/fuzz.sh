#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-14 (ASan + UBSan) in build-fuzz/ and runs each for
# SECONDS (default 60) from its committed seed corpus (fuzz/corpus/TARGET). New inputs go to
# build-fuzz/corpus/TARGET; a crash leaves its input in build-fuzz/ and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++-14 -DRSIM_FUZZ=ON -DBUILD_TESTING=OFF -DRSIM_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j "$(nproc)"
for t in scenario units expr lua_values onnx; do
  mkdir -p "build-fuzz/corpus/$t"
  echo "fuzz: $t for ${secs}s"
  (cd build-fuzz && "./fuzz/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
     -print_final_stats=1 "corpus/$t" "../fuzz/corpus/$t" 2>&1 | tail -n 12)
done
