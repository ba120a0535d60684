#!/usr/bin/env bash
# Diagnostic (issue 20): exit_race.py RUNS times per framework with gpscope (stacks on) and
# BASE_RUNS times without; one line per run (rc, seconds, crash words in stderr) and a tally.
#   exit_race.sh OUT_DIR [RUNS] [BASE_RUNS]     (from the repo root, .carry/ beside it)
set -u
out=$1; runs=${2:-20}; base_runs=${3:-5}
repo=$(cd "$(dirname "$0")/../../.." && pwd)
lib=$repo/.carry/bin/libgpscope_inject.so
mkdir -p "$out"
for fw in cupy jax; do
  for mode in gpscope none; do
    n=$runs; [ "$mode" = none ] && n=$base_runs
    bad=0
    for i in $(seq 1 "$n"); do
      d=$out/$fw-$mode-$i; mkdir -p "$d"
      secs=$(python3 -c "import random; print(round(random.uniform(1.0, 2.0), 2))")
      t0=$(date +%s.%N)
      if [ "$mode" = gpscope ]; then
        CUDA_INJECTION64_PATH=$lib GPSCOPE_OUTPUT=$d timeout -k 5 60 python3 "$repo/tests/e2e/probe/exit_race.py" "$fw" "$secs" >"$d/stdout" 2>"$d/stderr"
      else
        timeout -k 5 60 python3 "$repo/tests/e2e/probe/exit_race.py" "$fw" "$secs" >"$d/stdout" 2>"$d/stderr"
      fi
      rc=$?
      t1=$(date +%s.%N)
      crash=$(grep -c -E 'Segmentation|Fatal Python|AddressSanitizer|core dumped|Aborted|terminate called' "$d/stderr")
      [ "$rc" -ne 0 ] || [ "$crash" -ne 0 ] && bad=$((bad + 1))
      readable=-
      if [ "$mode" = gpscope ]; then
        "$repo/.carry/bin/gpscope-analyze" info "$d"/*.gpscope >"$d/info.txt" 2>&1 && readable=yes || readable=NO
      fi
      echo "$fw $mode run $i: sleep ${secs}s rc $rc crash_words $crash trace_readable $readable wall $(python3 -c "print(round($t1-$t0,2))") $(cat "$d/stdout")"
    done
    echo "TALLY $fw $mode: $bad of $n runs with a non-zero exit or crash words"
  done
done
