# tests/e2e/common.sh: sourced by the GPU end-to-end scripts (run_gpu_tests.sh,
# launcher_gpu.sh, rules_gpu.sh). Expects $bin (the binaries' folder: a
# build tree or scripts/gpu_bundle.sh's .carry/bin).

# The path of built file $1 under $bin (a build tree keeps them in
# subfolders), or "missing-$1".
find_bin() {
  local d
  for d in "$bin" "$bin/inject" "$bin/tools" "$bin/tools/gpscope" "$bin/tests/e2e" "$bin/bench"; do
    [ -f "$d/$1" ] && { echo "$d/$1"; return; }
  done
  echo "missing-$1"
}

# Exits 77 (ctest: SKIPPED) with the reason when there is no NVIDIA GPU or,
# with "torch" as $1, no PyTorch that can use it.
require_gpu() {
  if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q GPU; then
    echo "SKIPPED: no NVIDIA GPU here (nvidia-smi finds none); run this on the GPU machine"
    exit 77
  fi
  if [ "${1:-}" = torch ] && ! python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    echo "SKIPPED: no PyTorch with CUDA for python3"
    exit 77
  fi
}

# Fails the script (one summary line) unless every argument exists.
require_built() {
  local f
  for f in "$@"; do
    [ -e "$f" ] || { echo "FAIL: $f not built"; echo "0 passed, 1 failed"; exit 1; }
  done
}
