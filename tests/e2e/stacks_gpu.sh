#!/usr/bin/env bash
# tests/e2e/stacks_gpu.sh: call-site stacks (issue 20) on a real GPU.
#
#   stacks_gpu.sh BIN_DIR OUT_DIR [CASE...]
#
# BIN_DIR holds libgpscope_inject.so, stack_facts and stack_sync_loop (a build
# tree works, as does scripts/gpu_bundle.sh's .carry/bin). Each case runs one
# workload traced with the defaults (GPSCOPE_STACKS=1, 1 ms samples) under its
# own timeout, reads the trace's stacks with stack_facts and checks with
# check_stacks.py that the workload's synchronizing calls (or the calls
# ending its idle gaps) carry stacks whose innermost user frame is the line
# written down here, for >= 90% of the steps; that every sample joins its API
# record; that no id comes before its definition. Cases (default: all):
#   item        PyTorch: loss.item() every step, then 5 ms of host Python
#               -> stacks_workloads.py:33 (SYNC)
#   empty_cache PyTorch: torch.cuda.empty_cache() every step (cudaFree)
#               -> stacks_workloads.py:45 (SYNC)
#   dataloader  PyTorch: a DataLoader with a slow __getitem__, num_workers=0; the
#               batch's copy to the GPU ends each starved gap
#               -> stacks_workloads.py:64 (SYNC or AFTER_IDLE)
#   cuda        CUDA C++: a synchronous cudaMemcpy in a loop (stack_sync_loop)
#               -> stack_sync_loop.cu:23 (SYNC; without addr2line on the
#               machine the function copy_result is checked instead)
#   jax         JAX: float(loss) every step -> stacks_workloads.py:84 (any
#               trigger: XLA makes the host transfer's CUDA calls on a thread
#               of its own, whose syncs carry the waiting main thread's stack,
#               SYNC_MAIN_THREAD)
# One PASS/FAIL line per case with the numbers, then "N passed, N failed".
# About 60-90 s on the H200 (each case's timeout below). Exits 77 without a GPU.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$1" && pwd)
out=$(mkdir -p "$2" && cd "$2" && pwd)
shift 2
cases=${*:-item empty_cache dataloader cuda jax}
. "$here/common.sh"
LIB=$(find_bin libgpscope_inject.so)
FACTS=$(find_bin stack_facts)
LOOP=$(find_bin stack_sync_loop)
WORK="$here/stacks_workloads.py"
require_gpu
require_built "$LIB" "$FACTS" "$LOOP"

# The lines the stacks must name (checked against the workloads' markers).
SITE_item=stacks_workloads.py:33
SITE_empty_cache=stacks_workloads.py:45
SITE_dataloader=stacks_workloads.py:64
SITE_jax=stacks_workloads.py:84
SITE_cuda=stack_sync_loop.cu:23
pass=0; fail=0
for c in item empty_cache dataloader jax; do
  site=SITE_$c; want=${!site#*:}
  got=$(grep -n "# site: $c\$" "$WORK" | cut -d: -f1)
  if [ "$got" != "$want" ]; then
    echo "FAIL markers: '# site: $c' is on line ${got:-none} of $WORK, this script says $want"
    fail=$((fail + 1))
  fi
done
got=$(grep -n "// sync copy site" "$here/stack_sync_loop.cu" | cut -d: -f1)
[ "$got" = "${SITE_cuda#*:}" ] || { echo "FAIL markers: sync copy site on line $got"; fail=$((fail + 1)); }

# run CASE TIMEOUT_S STEPS TRIGGERS CMD...: traced into $out/CASE, checked.
run_case() {
  local c=$1 limit=$2 steps=$3 triggers=$4; shift 4
  local d=$out/$c site=SITE_$c
  rm -rf "$d"; mkdir -p "$d/trace"
  local t0; t0=$(date +%s)
  GPSCOPE_OUTPUT=$d/trace GPSCOPE_LOG_LEVEL=info CUDA_INJECTION64_PATH=$LIB \
    timeout -k 5 "$limit" "$@" >"$d/app.out" 2>"$d/app.err"
  local rc=$? secs=$(( $(date +%s) - t0 ))
  if [ $rc -ne 0 ]; then
    echo "FAIL $c: the workload exited $rc after ${secs}s (timeout ${limit}s); stderr:"
    tail -5 "$d/app.err" | sed 's/^/  /'
    fail=$((fail + 1)); return
  fi
  if ! "$FACTS" "$d"/trace/*.gpscope >"$d/facts.jsonl" 2>"$d/facts.err"; then
    echo "FAIL $c: stack_facts: $(head -1 "$d/facts.err")"; fail=$((fail + 1)); return
  fi
  local extra=()
  [ "$c" = cuda ] && extra=(stack_sync_loop copy_result)
  if python3 "$here/check_stacks.py" "$d/facts.jsonl" "$c (${secs}s)" "${!site}" "$steps" \
      "$triggers" "${extra[@]}"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
  fi
  grep -E '^gpscope.*(stacks|python)' "$d/app.err" | head -4 | sed "s/^/  $c| /"
}

for c in $cases; do
  case $c in
    item) run_case item 40 100 SYNC python3 "$WORK" item 100 ;;
    empty_cache) run_case empty_cache 40 100 SYNC python3 "$WORK" empty_cache 100 ;;
    dataloader) run_case dataloader 40 50 SYNC,AFTER_IDLE python3 "$WORK" dataloader 50 ;;
    cuda) run_case cuda 20 200 SYNC "$LOOP" 200 ;;
    jax)
      if ! python3 -c 'import jax' 2>/dev/null; then
        echo "FAIL jax: python3 cannot import jax here"; fail=$((fail + 1))
      else
        XLA_PYTHON_CLIENT_PREALLOCATE=false run_case jax 45 100 SYNC,AFTER_IDLE,SAMPLED,SYNC_MAIN_THREAD \
          python3 "$WORK" jax 100
      fi ;;
    *) echo "FAIL $c: unknown case"; fail=$((fail + 1)) ;;
  esac
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
