#!/usr/bin/env bash
# tests/e2e/hardening_gpu.sh: issue 17's cases on a real GPU.
#
#   hardening_gpu.sh BIN_DIR OUT_DIR SUITE [RUNS]
#
# BIN_DIR holds libgpscope_inject.so, gpscope-analyze and launch_loop (a build
# tree works, as for run_gpu_tests.sh). Suites:
#   sigterm_loop      SIGTERM (after SIGTERM_AFTER_S, default 6) to loops that never
#                     sleep: PyTorch `while True: a = torch.tanh(a @ a * 1e-3)` and the
#                     CUDA C++ launch_loop (one thread launching forever), RUNS times each
#                     (default 5). Each run must die of SIGTERM (exit 143) within
#                     GPSCOPE_EXIT_TIMEOUT_MS (4 s) + 1 s of the signal, with an end record
#                     of reason SIGNAL whose flush did not time out, and kernels in it.
#                     With BIN_DIR/libgpscope_inject_base.so (the collector of 54d91a1,
#                     scripts/gpu_bundle.sh) two more PyTorch runs with it, for comparison
#                     (reported, not judged).
#   threads64         launch_loop --threads 64 --kernels 2000 (each thread its own stream)
#                     with the default buffers, RUNS times (default 2): exactly 128,000
#                     kernels in the trace, no drop notice, end record events_dropped 0.
#   jax_drops         tests/e2e/jax_train.py --steps 300 with the defaults, RUNS times
#                     (default 2): no drop notice, events_dropped 0, kernels > 1000.
#   profiler_refusal  torch_train.py --profiler in hold mode: the app exits 0, our kernels
#                     are there, and the trace records the refused cuptiSubscribe (the
#                     caller: Kineto's library).
# Every run's facts (tests/e2e/trace_facts.py) and the collector's info lines
# (GPSCOPE_LOG_LEVEL=info: the buffer pool line) are printed. Without a GPU it
# exits 77. Ends with one line "N passed, N failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bin=$(cd "$1" && pwd)
out=$(mkdir -p "$2" && cd "$2" && pwd)
suite=$3
. "$here/common.sh"
LIB=$(find_bin libgpscope_inject.so)
BASE_LIB=$(find_bin libgpscope_inject_base.so)
ANALYZE=$(find_bin gpscope-analyze)
LOOP=$(find_bin launch_loop)
TRAIN="$repo/bench/workloads/torch_train.py"
require_gpu
require_built "$LIB" "$ANALYZE"

pass=0; fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
facts() { python3 "$here/trace_facts.py" "$ANALYZE" "$1"; }
field() { python3 -c "import json,sys; f=json.loads(sys.argv[1]); print(eval(sys.argv[2]))" "$1" "$2"; }

# Starts "$@" traced into $1 (a fresh dir) in the background, waits for $2 (a
# file the workload creates when its loop runs; "-": none, 2 s) plus
# SIGTERM_AFTER_S, sends SIGTERM; sets rc, kill_to_exit_ms.
sigterm_run() {
  local d=$1 ready=$2 lib=$3; shift 3
  rm -rf "$d"; mkdir -p "$d"
  [ "$ready" != - ] && rm -f "$ready"
  GPSCOPE_OUTPUT=$d GPSCOPE_LOG_LEVEL=info CUDA_INJECTION64_PATH=$lib "$@" >"$d.out" 2>"$d.err" &
  local pid=$! i
  if [ "$ready" = - ]; then
    sleep 2
  else
    for i in $(seq 1 600); do [ -e "$ready" ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  fi
  sleep "${SIGTERM_AFTER_S:-6}"
  local t0; t0=$(now_ms)
  kill -TERM $pid 2>/dev/null
  # Bounded: a run that does not die within 30 s is killed (and fails).
  for i in $(seq 1 300); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  kill -0 $pid 2>/dev/null && kill -KILL $pid
  wait $pid; rc=$?
  kill_to_exit_ms=$(( $(now_ms) - t0 ))
}

TORCH_LOOP='
import sys, torch
a = torch.randn(2048, 2048, device="cuda")
open(sys.argv[1], "w").write("ready")
while True:
    a = torch.tanh(a @ a * 1e-3)
'

case $suite in
  sigterm_loop)
    runs=${4:-5}
    for kind in torch cuda; do
      if [ $kind = torch ] && ! python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
        bad "sigterm_loop torch: no PyTorch with CUDA"; continue
      fi
      if [ $kind = cuda ] && [ ! -x "$LOOP" ]; then bad "sigterm_loop cuda: launch_loop not built"; continue; fi
      for r in $(seq 1 "$runs"); do
        d=$out/sigterm_${kind}_$r
        if [ $kind = torch ]; then
          sigterm_run "$d" "$d.ready" "$LIB" python3 -c "$TORCH_LOOP" "$d.ready"
        else
          sigterm_run "$d" - "$LIB" "$LOOP" --threads 1 --kernels 0
        fi
        f=$(facts "$d")
        echo "  $kind run $r: rc=$rc kill_to_exit_ms=$kill_to_exit_ms $f"
        grep '^gpscope\[' "$d.err" | grep -v 'buffer pool\|activity buffers' | head -3 | sed 's/^/    /'
        if [ $rc -eq 143 ] && [ $kill_to_exit_ms -le 5000 ] &&
           [ "$(field "$f" 'f["missing_ends"]')" = 0 ] && [ "$(field "$f" 'f["processes"]')" -ge 1 ] &&
           [ "$(field "$f" 'all(e["reason"]=="signal" and e["signal"]==15 and not e["flush_timed_out"] for e in f["ends"])')" = True ] &&
           [ "$(field "$f" 'f["kernels"]')" -gt 100 ]; then
          ok "sigterm_loop $kind run $r: died of SIGTERM in $kill_to_exit_ms ms, end record SIGNAL, $(field "$f" 'f["kernels"]') kernels"
        else
          bad "sigterm_loop $kind run $r: rc=$rc ${kill_to_exit_ms} ms facts=$f"
        fi
      done
    done
    if [ -f "$BASE_LIB" ]; then
      for r in 1 2; do
        d=$out/sigterm_base_$r
        sigterm_run "$d" "$d.ready" "$BASE_LIB" python3 -c "$TORCH_LOOP" "$d.ready"
        echo "  BASE (54d91a1) torch run $r: rc=$rc kill_to_exit_ms=$kill_to_exit_ms $(facts "$d")"
      done
    fi ;;
  threads64)
    runs=${4:-2}
    require_built "$LOOP"
    for r in $(seq 1 "$runs"); do
      d=$out/threads64_$r; rm -rf "$d"
      GPSCOPE_OUTPUT=$d GPSCOPE_LOG_LEVEL=info CUDA_INJECTION64_PATH=$LIB timeout -k 5 120 \
        "$LOOP" --threads 64 --kernels 2000 >"$d.out" 2>"$d.err"
      rc=$?
      f=$(facts "$d")
      echo "  run $r: rc=$rc app=$(cat "$d.out") $f"
      grep 'buffer pool' "$d.err" | sed 's/^/    /'
      if [ $rc -eq 0 ] && [ "$(field "$f" 'f["kernels"]')" = 128000 ] &&
         [ "$(field "$f" 'len(f["dropped"])')" = 0 ] && [ "$(field "$f" 'f["events_dropped"]')" = 0 ] &&
         [ "$(field "$f" 'f["missing_ends"]')" = 0 ]; then
        ok "threads64 run $r: 128,000 kernels from 64 threads/streams, 0 dropped"
      else
        bad "threads64 run $r: rc=$rc facts=$f"
      fi
    done ;;
  jax_drops)
    runs=${4:-2}
    if ! python3 -c 'import jax' 2>/dev/null; then bad "jax_drops: JAX not importable"; runs=0; fi
    for r in $(seq 1 "$runs"); do
      d=$out/jax_$r; rm -rf "$d"
      XLA_PYTHON_CLIENT_MEM_FRACTION=.3 GPSCOPE_OUTPUT=$d GPSCOPE_LOG_LEVEL=info \
        CUDA_INJECTION64_PATH=$LIB timeout -k 5 150 python3 "$here/jax_train.py" --steps 300 \
        >"$d.out" 2>"$d.err"
      rc=$?
      f=$(facts "$d")
      echo "  run $r: rc=$rc app=$(tail -1 "$d.out") $f"
      grep 'buffer pool\|^gpscope\[.*\(drop\|refused\)' "$d.err" | head -5 | sed 's/^/    /'
      if [ $rc -eq 0 ] && [ "$(field "$f" 'f["kernels"]')" -gt 1000 ] &&
         [ "$(field "$f" 'len(f["dropped"])')" = 0 ] && [ "$(field "$f" 'f["events_dropped"]')" = 0 ] &&
         [ "$(field "$f" 'f["missing_ends"]')" = 0 ]; then
        ok "jax_drops run $r: $(field "$f" 'f["kernels"]') kernels, $(field "$f" 'f["api_calls"]') API calls, 0 dropped"
      else
        bad "jax_drops run $r: rc=$rc facts=$f"; tail -3 "$d.err" | sed 's/^/    /'
      fi
    done ;;
  profiler_refusal)
    d=$out/profiler; rm -rf "$d"
    GPSCOPE_OUTPUT=$d CUDA_INJECTION64_PATH=$LIB timeout -k 5 120 python3 "$TRAIN" --steps 50 --profiler \
      >"$d.out" 2>"$d.err"
    rc=$?
    f=$(facts "$d")
    echo "  rc=$rc app=$(tail -1 "$d.out") $f"
    grep '^gpscope\[' "$d.err" | head -5 | sed 's/^/    /'
    if [ $rc -eq 0 ] && [ "$(field "$f" 'f["kernels"]')" -ge 500 ] &&
       [ "$(field "$f" 'any(r["api"].startswith("cuptiSubscribe") and r["count"] >= 1 for r in f["refusals"])')" = True ]; then
      ok "profiler_refusal: the refused $(field "$f" '[r["api"] for r in f["refusals"]]') by $(field "$f" '[r["caller"] for r in f["refusals"]]') is in the trace"
    else
      bad "profiler_refusal: rc=$rc facts=$f"
    fi ;;
  *) echo "unknown suite $suite"; bad "suite $suite" ;;
esac
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
