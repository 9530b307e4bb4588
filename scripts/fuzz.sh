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
for t in scenario units expr lua_values onnx hf_config calibrate_csv; do
  mkdir -p "build-fuzz/corpus/$t"
  echo "fuzz: $t for ${secs}s"
  if (cd build-fuzz && "./fuzz/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 "corpus/$t" "../fuzz/corpus/$t" >"fuzz-$t.log" 2>&1); then
    tail -n 7 "build-fuzz/fuzz-$t.log"
  else
    # the sanitizer's report and the input that caused it, not just libFuzzer's statistics
    grep -E -A 30 "ERROR: |runtime error|deadly signal|timeout after|out-of-memory" "build-fuzz/fuzz-$t.log" | head -n 60
    grep -E "Test unit written to|^0x|Base64:" "build-fuzz/fuzz-$t.log" | head -n 5
    echo "fuzz: $t failed (full log: build-fuzz/fuzz-$t.log)"
    exit 1
  fi
done
