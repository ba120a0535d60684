#!/usr/bin/env bash
# The test suite, as the README and CI run it:
#   1. build + every unit test (ctest label `gpu` excluded: no GPU here);
#   2. the unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. the concurrent code (label `concurrent`: rings, pool, appenders) under
#      ThreadSanitizer;
#   4. the HTML report's browser tests in headless Chromium;
#   5. the reader's libFuzzer target for 60 s and the structure-aware
#      analyzer fuzzer (every command) for 60 s (clang);
#   6. the release packages (scripts/package.sh: the tarball and the .deb,
#      static tools, built against a Debian 11 root that it debootstraps,
#      about 3 minutes cold) checked as a user gets them
#      (tests/install/check_package.sh: layout, ldd, the glibc 2.31 floor
#      symbol by symbol, ...) and run inside that root, on glibc 2.31
#      (tests/install/check_old_glibc.sh: the collector dlopen'ed with the
#      stand-in CUPTI and without CUPTI, summary, report, gpscope run),
#      the Kubernetes manifests against the API schemas and the Dockerfile
#      (tests/install/check_manifests.sh);
#   7. the GPU e2e tests, only with --gpu (on the GPU machine; they report
#      SKIPPED with the reason where there is no GPU).
# Installs what it needs first (scripts/setup.sh). Build trees, one per CMake
# preset (CMakePresets.json): build/ (ci), build-asan/, build-tsan/,
# build-fuzz/, build-release/. Each step's header says the disk space left;
# build-asan/ (the largest tree; nothing after its step uses it) is removed once its
# tests pass unless GPSCOPE_KEEP_TREES=1. Exits non-zero on any failure.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
jobs=$(nproc)
gpu=0
[ "${1:-}" = "--gpu" ] && gpu=1

step() {
  printf '\n==== %s  [%s free here, %s in /tmp]\n' "$*" \
    "$(df -Ph . | awk 'NR==2 {print $4}')" "$(df -Ph "${TMPDIR:-/tmp}" | awk 'NR==2 {print $4}')"
}

step "setup"
bash scripts/setup.sh

step "build (RelWithDebInfo) and unit tests"
cmake --preset ci >/dev/null
cmake --build --preset ci -j"$jobs"
ctest --preset ci -j"$jobs"

step "HTML report in headless Chromium"
bash scripts/test_report.sh --build build

step "unit tests under ASan + UBSan"
cmake --preset asan >/dev/null
cmake --build --preset asan -j"$jobs"
ctest --preset asan -j"$jobs"  # ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
[ "${GPSCOPE_KEEP_TREES:-0}" = 1 ] || rm -rf build-asan

step "concurrent code under TSan"
cmake --preset tsan >/dev/null
tsan_targets=$(ctest --preset tsan -N | awk '/Test +#/ {print $3}')  # label concurrent
cmake --build --preset tsan -j"$jobs" --target $tsan_targets
ctest --preset tsan  # TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"

step "fuzzing (libFuzzer): the reader's bytes 60 s, the whole analyzer's structure 60 s, ELF/DWARF 30 s"
if command -v clang++ >/dev/null; then
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j"$jobs" --target reader_fuzz analyzer_fuzz elf_fuzz
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
  # Module files for offline symbolization (tools/model/elf_symbols.h).
  corpus=$(mktemp -d)
  build-fuzz/tests/fuzz/elf_fuzz -max_total_time=30 -timeout=10 -print_final_stats=1 \
    "$corpus" tests/fuzz/elf_corpus 2>&1 | tail -15
  rm -rf "$corpus"
else
  echo "SKIPPED: clang++ not installed, no fuzzing"
fi

step "release packages: tarball and .deb, checked as a user gets them"
# -Werror here too: CI keeps the Release (-O3) build of what ships warning-free.
bash scripts/package.sh --no-setup -- -DGPSCOPE_WERROR=ON >/dev/null
bash tests/install/check_package.sh build-release/packages/gpscope-*-linux-x86_64.tar.gz \
  build-release/packages/gpscope_*_amd64.deb

step "release packages on the oldest supported glibc (2.31, the Debian 11 root they were built against)"
bash tests/install/check_old_glibc.sh build-release/packages/gpscope-*-linux-x86_64.tar.gz \
  build-release/sysroot-bullseye

step "Kubernetes manifests (API schemas) and the Dockerfile (lint, dry run of its stages)"
bash tests/install/check_manifests.sh --release-tree build-release

if [ $gpu = 1 ]; then
  step "GPU e2e tests"
  bash tests/e2e/run_gpu_tests.sh build build/e2e-out
fi
step "all tests passed"
