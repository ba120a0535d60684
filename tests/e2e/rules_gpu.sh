#!/usr/bin/env bash
# tests/e2e/rules_gpu.sh: issue 5's "must show" on a real GPU: for each rule
# that one GPU can reproduce, a real PyTorch workload (rule_workloads.py)
# whose top finding in `gpscope-analyze summary` is that rule, and a healthy
# control with no finding of warning level or above.
#
#   rules_gpu.sh BIN_DIR OUT_DIR ["SCENARIO SCENARIO ..."]
#
# BIN_DIR holds libgpscope_inject.so and gpscope-analyze (a build tree works:
# the script looks in BIN_DIR, BIN_DIR/inject, BIN_DIR/tools and
# BIN_DIR/tests/e2e). The optional third argument is a space-separated list
# of scenarios (default: all of healthy data-starvation launch-bound
# host-sync pageable-copies copy-heavy long-gaps memory-bandwidth-bound
# low-sm-efficiency low-occupancy gpu-shared-nvml gpu-shared incomplete-data;
# each but healthy is named after the rule it must put first, and
# rule_workloads.py says how; low-occupancy runs rule_kernels.cu instead,
# since PyTorch's low-occupancy kernels are GEMM/attention tiles that the
# rule leaves out by design). Each scenario runs traced
# (CUDA_INJECTION64_PATH, GPSCOPE_OUTPUT=OUT_DIR/SCENARIO) under `timeout`;
# then `gpscope-analyze summary --format json` on its trace goes to
# OUT_DIR/SCENARIO.json and the check wants the expected rule as findings[0]
# (healthy: no finding of severity warning or critical). One line per
# scenario: PASS/FAIL, the top 3 findings (rule, severity, estimated cost)
# and the expected finding's evidence; the workload's log is OUT_DIR/
# SCENARIO.log. Ends with one line "N passed, N failed"; exits 1 on any
# failure. Without a GPU, or without PyTorch with CUDA, it prints
# "SKIPPED: <reason>" and exits 77 (ctest reports SKIPPED).
#
# Environment: RULES_SECONDS (default 5) steady seconds per workload;
# RULES_TIMEOUT (default 120) the limit per workload. All scenarios take
# about 3 minutes on an H200.
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 BIN_DIR OUT_DIR [\"SCENARIO ...\"]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$1" && pwd)
out=$(mkdir -p "$2" && cd "$2" && pwd)
ALL="healthy data-starvation launch-bound host-sync pageable-copies copy-heavy long-gaps
memory-bandwidth-bound low-sm-efficiency low-occupancy gpu-shared-nvml gpu-shared incomplete-data"
scenarios=${3:-$ALL}
secs=${RULES_SECONDS:-5}
limit=${RULES_TIMEOUT:-120}
WORKLOADS=$here/rule_workloads.py

. "$here/common.sh"
LIB=$(find_bin libgpscope_inject.so)
ANALYZE=$(find_bin gpscope-analyze)
KERNELS=$(find_bin rule_kernels)  # CUDA C++: launch shapes no PyTorch op has

require_gpu torch
require_built "$LIB" "$ANALYZE" "$WORKLOADS" "$KERNELS"
for s in $scenarios; do
  case " $(echo $ALL) " in
    *" $s "*) ;;
    *) echo "FAIL: unknown scenario '$s' (known: $(echo $ALL))"
       echo "0 passed, 1 failed"; exit 1 ;;
  esac
done

# The rule each scenario must put first ("none": no warning or critical finding).
expected() {
  case $1 in
    healthy) echo none ;;
    *) echo "$1" ;;  # the other scenarios are named after their rule
  esac
}
# Extra environment per scenario.
scenario_env() {
  case $1 in
    # Several failed flushes while the "disk" is full, and a tight lost interval.
    incomplete-data) echo "GPSCOPE_FLUSH_INTERVAL_MS=200" ;;
  esac
}

# Prints one line about OUT_DIR/SCENARIO.json; exit 0 when the scenario passes.
check() {
  E2E_DIR=$here python3 - "$@" <<'PY'
import json
import os
import sys

sys.path.insert(0, os.environ["E2E_DIR"])
from fmt import t  # tests/e2e/fmt.py

path, scenario, expect, rc = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])


def value(e):
    v, u = e["value"], e["unit"]
    if u == "ratio":
        return f"{100 * v:.1f}%"
    if u == "ns":
        return t(v)
    if u == "bytes":
        return f"{v / 1e6:.1f} MB"
    if u == "GB/s":
        return f"{v:.1f} GB/s"
    if u in ("per_step", "per_s"):
        return f"{v:.2f}/{u[4:]}"
    if u == "bool":
        return "yes" if v else "no"
    return f"{v:.0f}" if abs(v - round(v)) < 1e-6 or abs(v) >= 100 else f"{v:.2f}"


def evidence(f, n=7):
    return ", ".join(f"{e['key']}={value(e)}" for e in f.get("evidence", [])[:n])


verdict = "FAIL"
try:
    with open(path) as fh:
        d = json.load(fh)
except (OSError, ValueError) as err:
    print(f"FAIL {scenario}: no summary ({err}); workload rc={rc}")
    sys.exit(1)
findings = d.get("findings", [])
top = " | ".join(f"{f['rule']} ({f['severity']}, {t(f['cost_ns'])})" for f in findings[:3])
top = top or "no findings"
notes = []
if rc != 0:
    notes.append(f"workload rc={rc}" + (" (timed out)" if rc in (124, 137) else ""))
if expect == "none":
    loud = [f for f in findings if f["severity"] in ("warning", "critical")]
    ok = not loud
    shown = loud[0] if loud else (findings[0] if findings else None)
    if loud:
        notes.append("warning-level findings: " + ", ".join(f["rule"] for f in loud))
else:
    ranks = [i for i, f in enumerate(findings) if f["rule"] == expect]
    ok = bool(findings) and findings[0]["rule"] == expect
    shown = findings[ranks[0]] if ranks else None
    if not ok:
        notes.append(f"{expect} is " + (f"#{ranks[0] + 1}" if ranks else "absent"))
ok = ok and rc == 0
gpus = d.get("gpus", [])
procs = d.get("processes", [])
ctx = f"{len(procs)} process(es), {len(gpus)} GPU(s)"
if gpus:
    ctx += f", window {t(gpus[0]['window']['length_ns'])} ({gpus[0]['window']['basis']})"
line = f"{'PASS' if ok else 'FAIL'} {scenario}: top {top}"
if shown is not None:
    line += f"\n     {shown['rule']}: {evidence(shown)}"
line += f"\n     {ctx}" + ("; " + "; ".join(notes) if notes else "")
print(line)
sys.exit(0 if ok else 1)
PY
}

echo "== device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
echo "== torch: $(python3 -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)')"
pass=0; fail=0
for s in $scenarios; do
  d=$out/$s; rm -rf "$d" "$out/$s.json"; mkdir -p "$d"
  read -r -a extra <<<"$(scenario_env "$s")"
  t0=$(date +%s)
  if [ "$s" = low-occupancy ]; then
    cmd=("$KERNELS" low-occupancy "$secs")
  else
    cmd=(python3 "$WORKLOADS" --scenario "$s" --seconds "$secs")
  fi
  env ${extra[@]+"${extra[@]}"} CUDA_INJECTION64_PATH="$LIB" GPSCOPE_OUTPUT="$d" \
    timeout -k 10 "$limit" "${cmd[@]}" >"$out/$s.log" 2>&1
  rc=$?
  files=("$d"/*.gpscope)
  if [ -e "${files[0]}" ]; then
    "$ANALYZE" summary --format json "${files[@]}" >"$out/$s.json" 2>"$out/$s.analyze.err"
  fi
  if check "$out/$s.json" "$s" "$(expected "$s")" "$rc"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    tail -n 4 "$out/$s.log" | sed 's/^/     log| /'
  fi
  echo "     ($(( $(date +%s) - t0 )) s; trace $d, log $out/$s.log)"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
