#!/usr/bin/env bash
# Builds what the GPU machine needs and copies it into .carry/ (git-ignored),
# for the device tool's `carry`: the collector, gpscope-analyze, the e2e and
# benchmark programs, and the shared libraries gpscope-analyze loads that the
# GPU image lacks (abseil). Usage: scripts/gpu_bundle.sh [BUILD_DIR]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build-gpu}
bash "$repo/scripts/setup.sh"
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target gpscope_inject gpscope-analyze e2e_workload \
  tiny_kernels gpscope_cupti_floor gpscope_inject_diag_discard gpscope_inject_diag_process_tid \
  gpscope_inject_diag_no_marker gpscope_inject_diag_no_memset nvml_probe
rm -rf "$repo/.carry"; mkdir -p "$repo/.carry/bin" "$repo/.carry/lib"
cp "$build/inject/libgpscope_inject.so" "$build/tools/gpscope-analyze" \
   "$build/tests/e2e/e2e_workload" "$build/bench/tiny_kernels" \
   "$build/bench/libgpscope_cupti_floor.so" "$build"/bench/libgpscope_inject_diag_*.so \
   "$build/inject/metrics/nvml_probe" "$repo/.carry/bin/"
# The node monitor, for tests/e2e/monitor_gpu.sh (links neither abseil nor libprotobuf).
cmake --build "$build" -j"$(nproc)" --target gpscope-monitor
cp "$build/tools/monitor/gpscope-monitor" "$repo/.carry/bin/"
ldd "$build/tools/gpscope-analyze" | awk '/=> \// {print $3}' |
  grep -E 'libabsl|libprotobuf|libzstd' | xargs -r -I{} cp -L {} "$repo/.carry/lib/"
du -sh "$repo/.carry"
