#!/usr/bin/env bash
# Builds what the GPU machine needs and copies it into .carry/ (git-ignored),
# for the device tool's `carry`: the collector, gpscope-analyze, the e2e and
# benchmark programs, and the shared libraries gpscope-analyze loads that the
# GPU image lacks (abseil); and the release tarball (scripts/package.sh, its
# own tree build-release/) as .carry/gpscope-linux-x86_64.tar.gz for the
# `package` suite. Usage: scripts/gpu_bundle.sh [BUILD_DIR]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build-gpu}
bash "$repo/scripts/setup.sh"
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target gpscope_inject gpscope_inject_diag gpscope-analyze \
  e2e_workload \
  tiny_kernels gpscope_cupti_floor gpscope_inject_diag_discard gpscope_inject_diag_process_tid \
  gpscope_inject_diag_no_marker gpscope_inject_diag_no_memset nvml_probe rule_kernels launch_loop \
  corpus_sync_memcpy corpus_malloc_free corpus_sgemm corpus_small_gemm corpus_cufft \
  stack_facts stack_sync_loop
rm -rf "$repo/.carry"; mkdir -p "$repo/.carry/bin" "$repo/.carry/lib"
cp "$build/inject/libgpscope_inject.so" "$build/inject/libgpscope_inject_diag.so" \
   "$build/tools/gpscope-analyze" \
   "$build/tests/e2e/e2e_workload" "$build/tests/e2e/rule_kernels" "$build/bench/tiny_kernels" \
   "$build/bench/libgpscope_cupti_floor.so" "$build"/bench/libgpscope_inject_diag_*.so \
   "$build/metrics/nvml_probe" "$build"/bench/corpus/corpus_* "$build/tests/e2e/launch_loop" \
   "$build/tests/e2e/stack_facts" "$build/tests/e2e/stack_sync_loop" \
   "$repo/.carry/bin/"
# The collector of 54d91a1 (before issue 17), for the overhead_compare suite and
# hardening_gpu.sh's comparison runs: built from that commit's tree.
base_commit=${GPSCOPE_BASE_COMMIT:-54d91a1}
base_src=$(mktemp -d /tmp/gpscope-base-src.XXXXXX)
if git -C "$repo" archive "$base_commit" | tar -x -C "$base_src"; then
  cmake -S "$base_src" -B "$base_src/build" -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    cmake --build "$base_src/build" -j"$(nproc)" --target gpscope_inject >/dev/null &&
    cp "$base_src/build/inject/libgpscope_inject.so" "$repo/.carry/bin/libgpscope_inject_base.so"
fi
rm -rf "$base_src"
# The node monitor (tests/e2e/monitor_gpu.sh) and the launcher (tests/e2e/launcher_gpu.sh).
cmake --build "$build" -j"$(nproc)" --target gpscope-monitor gpscope
cp "$build/tools/monitor/gpscope-monitor" "$build/tools/gpscope/gpscope" "$repo/.carry/bin/"
ldd "$build/tools/gpscope-analyze" "$build/tools/gpscope/gpscope" "$build/tests/e2e/stack_facts" |
  awk '/=> \// {print $3}' |
  grep -E 'libabsl|libprotobuf|libzstd' | sort -u | xargs -r -I{} cp -L {} "$repo/.carry/lib/"
# stack_sync_loop uses the shared CUDA runtime (stacks_gpu.sh): the toolkit's, carried.
ldd "$build/tests/e2e/stack_sync_loop" | awk '/libcudart/ && /=> \// {print $3}' |
  xargs -r -I{} cp -L {} "$repo/.carry/lib/"
# The release tarball, as a user downloads it (tests/e2e/package_gpu.sh).
bash "$repo/scripts/package.sh" --no-setup >/dev/null
cp "$repo"/build-release/packages/gpscope-*-linux-x86_64.tar.gz "$repo/.carry/gpscope-linux-x86_64.tar.gz"
du -sh "$repo/.carry"
echo "$(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet HEAD -- inject tools proto bench || echo -dirty)" >"$repo/.carry/COMMIT"
