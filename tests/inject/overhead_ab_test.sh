#!/usr/bin/env bash
# tests/inject/overhead_ab_test.sh: bench/overhead_ab.py end to end without a GPU.
# The stand-in workload (ab_fake_workload.py) loads the real libgpscope_inject.so with the
# stand-in libcupti in standby; the harness attaches three 1 s windows with the real
# `gpscope attach` (then four 0.8 s windows through the control socket, --via socket),
# alternating with untraced blocks. Checks: the harness succeeds, every
# block has its steps, each window's trace holds the stand-in's kernels (2000/s), and the
# traced/untraced step ratio of a sleep-bound workload is ~1.
#
#   overhead_ab_test.sh LIBGPSCOPE_INJECT FAKE_CUPTI GPSCOPE_BINARY GPSCOPE_ANALYZE
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/gpscope-ab-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
GPSCOPE_CUPTI_PATH=$2 FAKE_CUPTI_KERNELS=forever FAKE_CUPTI_RATE=2000 GPSCOPE_METRICS=0 \
  python3 "$repo/bench/overhead_ab.py" --inject "$1" --gpscope "$3" --blocks 3 --block-s 1 \
  --margin-s 0.2 --warmup-s 1 --keep "$work/run" --out "$work/ab.json" \
  -- python3 "$repo/tests/inject/ab_fake_workload.py"
python3 - "$work" <<'PY'
import glob, json, sys
work = sys.argv[1]
r = json.load(open(f"{work}/ab.json"))
assert len(r["blocks"]) == 3, r
for b in r["blocks"]:
    assert b["attach_rc"] == 0, b
    assert b["traced_steps"] >= 30 and b["untraced_steps"] >= 30, b
    assert 0.75 < b["ratio"] < 1.25, b
for k in range(3):
    files = glob.glob(f"{work}/run/attach-{k}/*.gpscope")
    assert files, f"attach-{k}: no window trace"
print(f"ok: 3 pairs, ratio median {r['ratio_median']:.4f}")
PY
# The same through the control socket (--via socket), with shorter blocks.
GPSCOPE_CUPTI_PATH=$2 FAKE_CUPTI_KERNELS=forever FAKE_CUPTI_RATE=2000 GPSCOPE_METRICS=0 \
  python3 "$repo/bench/overhead_ab.py" --inject "$1" --gpscope "$3" --via socket --blocks 4 \
  --block-s 0.8 --margin-s 0.15 --warmup-s 1 --keep "$work/sock" --out "$work/sock.json" \
  -- python3 "$repo/tests/inject/ab_fake_workload.py"
python3 - "$work" <<'PY'
import glob, json, os, sys
work = sys.argv[1]
r = json.load(open(f"{work}/sock.json"))
assert len(r["blocks"]) == 4, r
for b in r["blocks"]:
    assert b["attach_rc"] == 0, b
    assert b["traced_steps"] >= 20 and b["untraced_steps"] >= 20, b
    assert 0.75 < b["ratio"] < 1.25, b
PY
# Four 0.8 s windows of 2,000 kernels/s in the process's own trace, and the
# time around them recorded as outside the capture window (5 intervals).
"$4" dump "$work"/sock/trace/*.gpscope | python3 -c '
import json, sys
ev = [json.loads(l) for l in sys.stdin]
k = sum(1 for e in ev if e["type"] == "kernel")
lost = sum(1 for e in ev if e["type"] == "lost" and e["reason"] == "TRACING_DISABLED")
assert 4 * 0.8 * 2000 * 0.85 < k < 4 * 0.8 * 2000 * 1.15, k
assert lost == 5, lost
print(f"ok: socket, 4 pairs, {k} kernels in 4 windows")'
