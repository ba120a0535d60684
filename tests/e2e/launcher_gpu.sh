#!/usr/bin/env bash
# tests/e2e/launcher_gpu.sh: the `gpscope` launcher on a real GPU.
#
#   launcher_gpu.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds gpscope, libgpscope_inject.so and gpscope-analyze (a build
# tree works: the script looks in BIN_DIR, BIN_DIR/inject, BIN_DIR/tools and
# BIN_DIR/tools/gpscope). Traces, reports and logs go to OUT_DIR. Without a
# GPU (or without PyTorch with CUDA) it prints the reason and exits 77, which
# ctest reports as SKIPPED. Ends with one line "N passed, N failed".
#
# 1. gpscope run -- python3 torch_train.py: the script's exit code, a trace
#    with kernels, report.html and the findings on stderr, no code change.
# 2. the command's own exit code comes back (7).
# 3. --delay/--duration: kernels only inside the window (needs the capture
#    window wired into the collector).
# 4. standby + gpscope attach --duration 3: a window of ~3 s, nothing traced
#    outside it, and the attach's wall time (the switch cost shows as the
#    first kernel's delay after `start`).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bin=$(cd "$1" && pwd)
out=$(mkdir -p "$2" && cd "$2" && pwd)

. "$here/common.sh"
GPSCOPE=$(find_bin gpscope)
LIB=$(find_bin libgpscope_inject.so)
ANALYZE=$(find_bin gpscope-analyze)
TRAIN="$repo/bench/workloads/torch_train.py"

require_gpu torch
require_built "$GPSCOPE" "$LIB" "$ANALYZE"

pass=0; fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
# Kernel start/end times (ns) of a trace file, one "start end" per line.
kernels() { "$ANALYZE" dump "$@" 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    e = json.loads(line)
    if e.get("type") == "kernel":
        print(e["start_ns"], e["end_ns"])'; }

# Kernel-launch API records (cudaLaunchKernel*, cuLaunchKernel*) of a trace file.
launches() { "$ANALYZE" dump "$@" 2>/dev/null | grep '"type":"api"' | grep -c 'LaunchKernel'; }

# Records the trace says were lost (all kinds of drop), summed over processes.
dropped() { "$ANALYZE" summary --format json "$@" 2>/dev/null | python3 -c '
import json, sys
try:
    print(sum(p["completeness"]["dropped_total"] for p in json.load(sys.stdin)["processes"]))
except Exception:
    print(-1)'; }

echo "== device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

# 1. A plain run: report and findings, the script unchanged.
d=$out/run; rm -rf "$d"
"$GPSCOPE" run --lib "$LIB" --output "$d" -- python3 "$TRAIN" --mode train --steps 60 \
  >"$out/run.out" 2>"$out/run.err"
rc=$?
n=$(kernels "$d"/*.gpscope | wc -l)
if [ "$rc" = 0 ] && [ "$n" -gt 100 ] && [ -s "$d/report.html" ] &&
   grep -q "^gpscope: report: $d/report.html" "$out/run.err" &&
   grep -Eq "^gpscope: (no findings|[0-9]+ findings?)" "$out/run.err" &&
   grep -q '"step_ms_median"' "$out/run.out"; then
  ok "run: exit 0, $n kernels, report $(stat -c %s "$d/report.html") bytes, findings printed"
else
  bad "run: rc=$rc kernels=$n (see $out/run.err)"
fi

# 2. The exit code is the command's own.
"$GPSCOPE" run --lib "$LIB" --output "$out/exit" --no-report -- \
  python3 "$TRAIN" --mode train --steps 5 --exit-code 7 >/dev/null 2>"$out/exit.err"
rc=$?
[ "$rc" = 7 ] && ok "run: exit code 7 passed through" || bad "run: exit code $rc, wanted 7"

# 3. A capture window: 3 s after an 8 s delay, in a ~20 s run (torch_train
# launches its first kernel ~6 s after CUDA starts on the H200: an earlier
# window finds nothing to trace).
d=$out/window; rm -rf "$d"
"$GPSCOPE" run --lib "$LIB" --output "$d" --no-report --delay 8 --duration 3 -- \
  python3 "$TRAIN" --mode train --steps 700 --sleep-ms 15 >/dev/null 2>"$out/window.err"
span=$(kernels "$d"/*.gpscope | python3 -c '
import sys
rows = [tuple(map(int, l.split())) for l in sys.stdin if l.strip()]
print("%.2f %d" % (((max(e for _, e in rows) - min(s for s, _ in rows)) / 1e9) if rows else 0, len(rows)))')
read -r span_s count <<<"$span"
nl=$(launches "$d"/*.gpscope)
nd=$(dropped "$d"/*.gpscope)
# Each kernel's launch call is recorded too (switched on mid-run, CUDA API
# records need the whole kinds: CuptiSession::SetApiRecords), and nothing is
# lost: the work still queued when the window closes is outside it.
if python3 -c "import sys; sys.exit(0 if 0 < $count and 2.0 <= $span_s <= 3.6 and $nl >= 0.9 * $count and $nd == 0 else 1)"; then
  ok "window: $count kernels over ${span_s} s (wanted ~3 s), $nl launch calls, $nd dropped"
else
  bad "window: $count kernels over ${span_s} s, wanted ~3 s; $nl launch calls, $nd dropped (wanted 0)"
fi

# 4. Standby, then attach for 3 s.
d=$out/standby; rm -rf "$d"; mkdir -p "$d"
CUDA_INJECTION64_PATH=$LIB GPSCOPE_OUTPUT=$d GPSCOPE_STANDBY=1 \
  python3 "$TRAIN" --mode train --steps 1200 --sleep-ms 10 >"$out/standby.out" 2>"$out/standby.err" &
app=$!
sock=""
for _ in $(seq 1 600); do
  for c in "${XDG_RUNTIME_DIR:-/nonexistent}/gpscope/$app.sock" "/tmp/gpscope-$(id -u)/$app.sock"; do
    [ -S "$c" ] && sock=$c
  done
  [ -n "$sock" ] && break
  sleep 0.1
done
if [ -z "$sock" ]; then
  bad "attach: no control socket for pid $app after 60 s (see $out/standby.err)"
else
  sleep 8  # the socket is up at CUDA start; the first kernels come ~6 s later
  t0=$(date +%s.%N)
  "$GPSCOPE" attach --pid "$app" --duration 3 --interval 100 --output "$d/attach" \
    >"$out/attach.out" 2>"$out/attach.err"
  rc=$?
  t1=$(date +%s.%N)
  win=$(ls "$d"/attach/*.gpscope 2>/dev/null | head -1)
  stats=$(kernels "$win" | python3 -c '
import sys
rows = [tuple(map(int, l.split())) for l in sys.stdin if l.strip()]
print("%.2f %d" % (((max(e for _, e in rows) - min(s for s, _ in rows)) / 1e9) if rows else 0, len(rows)))')
  read -r wspan wcount <<<"$stats"
  all=$(kernels "$d"/*.gpscope | wc -l)
  echo "   attach wall time $(python3 -c "print(round($t1 - $t0, 2))") s for a 3 s window"
  wl=$(launches "$win")
  wd=$(dropped "$win")
  if [ "$rc" = 0 ] && [ -s "$d/attach/report.html" ] && [ "$wcount" -gt 0 ] && [ "$all" = "$wcount" ] &&
     python3 -c "import sys; sys.exit(0 if 2.0 <= $wspan <= 3.6 and $wl >= 0.9 * $wcount and $wd == 0 else 1)"; then
    ok "attach: $wcount kernels over ${wspan} s, $wl launch calls, $wd dropped, none outside the window, report written"
  else
    bad "attach: rc=$rc window kernels=$wcount launch calls=$wl dropped=$wd span=${wspan}s, node-file kernels=$all (see $out/attach.err)"
  fi
fi
kill "$app" 2>/dev/null; wait "$app" 2>/dev/null

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
