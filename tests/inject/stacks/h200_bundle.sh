#!/usr/bin/env bash
# tests/inject/stacks/h200_bundle.sh [BUILD_DIR]: builds (here) what
# h200_run.sh runs on the GPU machine and copies it into .carry/stacks/
# (git-ignored, for the device tool's `carry`), with libbenchmark, which the
# GPU image lacks. No GPU is needed by any of it; the H200 matters for its
# CPU (the 1 us budget) and its CPython 3.12.3.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
build=${1:-$repo/build-gpu}
bash "$repo/scripts/setup.sh"
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target stacks_bench gpscope_stacks_pytest native_stacks_test \
  native_stack_prog_fp native_stack_prog_nofp python_walker_test python_offsets_probe_3_12
c="$repo/.carry/stacks"
rm -rf "$c"; mkdir -p "$c/bin" "$c/lib"
cp "$build/bench/stacks_bench" "$build/tests/inject/stacks/libgpscope_stacks_pytest.so" \
   "$build/tests/inject/stacks/native_stacks_test" "$build/tests/inject/stacks/native_stack_prog_fp" \
   "$build/tests/inject/stacks/native_stack_prog_nofp" "$build/tests/inject/stacks/python_walker_test" \
   "$build/tests/inject/stacks/python_offsets_probe_3_12" "$c/bin/"
ldd "$build/bench/stacks_bench" | awk '/=> \// {print $3}' | grep -E 'libbenchmark' | sort -u |
  xargs -r -I{} cp -L {} "$c/lib/"
git -C "$repo" rev-parse --short HEAD >"$c/COMMIT"
du -sh "$c"
