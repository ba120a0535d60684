#!/usr/bin/env bash
# The test suite, as the README and CI run it:
#   1. build + every unit test (ctest label `gpu` excluded: no GPU here);
#   2. the unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. the concurrent code (label `concurrent`: rings, pool, appenders) under
#      ThreadSanitizer;
#   4. the HTML report's browser tests in headless Chromium;
#   5. the reader's libFuzzer target for 60 s and the structure-aware
#      analyzer fuzzer (every command) for 60 s (clang);
#   6. the GPU e2e tests, only with --gpu (on the GPU machine; they report
#      SKIPPED with the reason where there is no GPU).
# Installs what it needs first (scripts/setup.sh). Build trees: build/,
# build-asan/, build-tsan/, build-fuzz/. Exits non-zero on any failure.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
jobs=$(nproc)
gpu=0
[ "${1:-}" = "--gpu" ] && gpu=1

step() { printf '\n==== %s\n' "$*"; }

step "setup"
bash scripts/setup.sh

step "build (RelWithDebInfo) and unit tests"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest -LE gpu --output-on-failure -j"$jobs")

step "HTML report in headless Chromium"
bash scripts/test_report.sh --build build

step "unit tests under ASan + UBSan"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DGPSCOPE_SANITIZE="address;undefined" \
  -DGPSCOPE_WITH_CUDA=OFF -DGPSCOPE_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest -LE gpu --output-on-failure -j"$jobs")

step "concurrent code under TSan"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DGPSCOPE_SANITIZE=thread \
  -DGPSCOPE_WITH_CUDA=OFF -DGPSCOPE_BUILD_BENCH=OFF >/dev/null
tsan_targets=$(cd build-tsan && ctest -L concurrent -N | awk '/Test +#/ {print $3}')
cmake --build build-tsan -j"$jobs" --target $tsan_targets
(cd build-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  ctest -L concurrent --output-on-failure)

step "fuzzing (libFuzzer): the reader's bytes 60 s, the whole analyzer's structure 60 s"
if command -v clang++ >/dev/null; then
  cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DGPSCOPE_BUILD_FUZZ=ON -DGPSCOPE_WITH_CUDA=OFF -DGPSCOPE_BUILD_BENCH=OFF \
    -DGPSCOPE_BUILD_TESTS=ON >/dev/null
  cmake --build build-fuzz -j"$jobs" --target reader_fuzz analyzer_fuzz
  corpus=$(mktemp -d)
  build-fuzz/tests/fuzz/reader_fuzz -dict=tests/fuzz/reader_fuzz.dict -max_total_time=60 \
    -print_final_stats=1 "$corpus" tests/fuzz/corpus 2>&1 | tail -15
  rm -rf "$corpus"
  # Structure-aware: valid frames whose protobuf fields are mutated to
  # limits (tests/fuzz/analyzer_fuzz.cc), through every command.
  corpus=$(mktemp -d)
  build-fuzz/tests/fuzz/analyzer_fuzz -max_len=65536 -max_total_time=60 -timeout=30 \
    -rss_limit_mb=3072 -print_final_stats=1 "$corpus" tests/fuzz/analyzer_corpus 2>&1 | tail -15
  rm -rf "$corpus"
else
  echo "SKIPPED: clang++ not installed, no fuzzing"
fi

if [ $gpu = 1 ]; then
  step "GPU e2e tests"
  bash tests/e2e/run_gpu_tests.sh build build/e2e-out
fi
step "all tests passed"
