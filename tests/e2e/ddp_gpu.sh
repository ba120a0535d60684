#!/usr/bin/env bash
# tests/e2e/ddp_gpu.sh: issue 9's multi-GPU must-show on one node with 2 or
# more GPUs: a DistributedDataParallel job (ddp_train.py) under torchrun with
# NCCL, traced with no code change (CUDA_INJECTION64_PATH in the launcher's
# environment; every worker inherits it).
#
#   ddp_gpu.sh BIN_DIR OUT_DIR ["VARIANT ..."]
#
# Variants (default: balanced straggler launcher):
#   balanced   every rank does the same work: no straggler may be named
#   straggler  the last rank burns DDP_STRAGGLE_MS (default 30) ms of host CPU
#              before every step: it must be named the straggler, with evidence
#   launcher   the balanced job under `gpscope run -- torchrun ...`: report and
#              findings at exit, exit code kept
# Checks per variant (tests/e2e/check_ddp.py on `gpscope-analyze summary
# --format json`): torchrun exit 0; exactly one trace file in the output
# folder (every rank appends to the per-node file) holding one process per
# rank, each with its rank, local rank, world size and the same job id;
# every rank's NCCL kernels classified as communication (collectives
# matched across ranks; comm/compute overlap reported per rank); collective
# end times of all ranks agree on the aligned timeline within the tolerance
# (median <= DDP_END_SPREAD_US, default 100 us; P95 <= 2x that); the
# straggler variant names the planted rank (finding straggler-rank with
# mean lateness >= half the planted host time), the others name none. The
# report's timeline stacks one process lane group per rank, in rank order,
# on one time base (`report --data-only`); report.html is kept beside it.
#
# Without 2 GPUs, or without PyTorch with CUDA, prints "SKIPPED: <reason>"
# and exits 77. NCCL's NVLink multicast (NVLS) stays off: NCCL_NVLS_ENABLE=0.
# Environment: DDP_STEPS (default 60), DDP_TIMEOUT (default 150 s per run).
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 BIN_DIR OUT_DIR [\"VARIANT ...\"]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$1" && pwd)
out=$(mkdir -p "$2" && cd "$2" && pwd)
variants=${3:-balanced straggler launcher}
steps=${DDP_STEPS:-60}
limit=${DDP_TIMEOUT:-150}
straggle_ms=${DDP_STRAGGLE_MS:-30}
spread_us=${DDP_END_SPREAD_US:-100}

. "$here/common.sh"
LIB=$(find_bin libgpscope_inject.so)
ANALYZE=$(find_bin gpscope-analyze)
GPSCOPE=$(find_bin gpscope)
require_gpu torch
ngpu=$(nvidia-smi -L | grep -c '^GPU')
if [ "$ngpu" -lt 2 ]; then
  echo "SKIPPED: $ngpu GPU here; DDP across GPUs needs 2 or more (nvidia-h200-x2 or larger)"
  exit 77
fi
require_built "$LIB" "$ANALYZE" "$GPSCOPE" "$here/ddp_train.py" "$here/check_ddp.py"
export NCCL_NVLS_ENABLE=0

echo "== device: $ngpu x $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
echo "== torch: $(python3 -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, "NCCL", ".".join(map(str, torch.cuda.nccl.version())))')"
torchrun=(python3 -m torch.distributed.run --standalone --nproc_per_node "$ngpu")
pass=0; fail=0
for v in $variants; do
  d=$out/$v; rm -rf "$d"; mkdir -p "$d/trace"
  args=("$here/ddp_train.py" --steps "$steps")
  planted=-1
  t0=$(date +%s)
  case $v in
    balanced)
      CUDA_INJECTION64_PATH=$LIB GPSCOPE_OUTPUT=$d/trace timeout -k 10 "$limit" \
        "${torchrun[@]}" "${args[@]}" >"$d/app.out" 2>"$d/app.err" ;;
    straggler)
      planted=$((ngpu - 1))
      CUDA_INJECTION64_PATH=$LIB GPSCOPE_OUTPUT=$d/trace timeout -k 10 "$limit" \
        "${torchrun[@]}" "${args[@]}" --straggle-rank "$planted" --straggle-ms "$straggle_ms" \
        >"$d/app.out" 2>"$d/app.err" ;;
    launcher)
      timeout -k 10 "$limit" "$GPSCOPE" run --lib "$LIB" --output "$d/trace" -- \
        "${torchrun[@]}" "${args[@]}" >"$d/app.out" 2>"$d/app.err" ;;
    *) echo "FAIL: unknown variant '$v' (known: balanced straggler launcher)"
       fail=$((fail + 1)); continue ;;
  esac
  rc=$?
  files=("$d"/trace/*.gpscope)
  if [ -e "${files[0]}" ]; then
    "$ANALYZE" summary --format json "${files[@]}" >"$d/summary.json" 2>"$d/analyze.err"
    "$ANALYZE" summary "${files[@]}" >"$d/summary.txt" 2>>"$d/analyze.err"
    "$ANALYZE" report -o "$d/report.html" "${files[@]}" 2>>"$d/analyze.err"
    "$ANALYZE" report --data-only -o "$d/report_data.json" "${files[@]}" 2>>"$d/analyze.err"
  fi
  if python3 "$here/check_ddp.py" --summary "$d/summary.json" --variant "$v" --rc "$rc" \
      --world "$ngpu" --planted "$planted" --straggle-ms "$straggle_ms" --steps "$steps" \
      --end-spread-us "$spread_us" --report-data "$d/report_data.json" \
      --files "${#files[@]}" --app-err "$d/app.err"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    grep -v '^\s*$' "$d/app.err" | tail -n 6 | sed 's/^/     app| /'
  fi
  echo "     ($(( $(date +%s) - t0 )) s; output $d)"
  sed -n '/^RANKS/,/^$/p' "$d/summary.txt" 2>/dev/null | sed 's/^/     /'
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
