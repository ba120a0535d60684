#!/usr/bin/env bash
# GPU end-to-end test of the node monitor (issue 8): on a machine with a GPU,
# gpscope-monitor must see a PyTorch job start and stop, attribute
# utilization and memory to the job's pid, and cost under 1% of one core at
# a 1 s interval. Runs at 1 s and at 100 ms.
#
#   tests/e2e/monitor_gpu.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds gpscope-monitor and gpscope-analyze (as scripts/gpu_bundle.sh
# puts them in .carry/bin, with the shared libraries gpscope-analyze needs in
# .carry/lib beside it). Needs only python3 with torch on the GPU machine.
# Exit 0 passed, 1 failed, 77 skipped ("SKIPPED: no GPU (reason)").
set -uo pipefail
bin=$(cd "${1:?usage: monitor_gpu.sh BIN_DIR OUT_DIR}" && pwd)
out=${2:?usage: monitor_gpu.sh BIN_DIR OUT_DIR}
[ -d "$bin/../lib" ] && export LD_LIBRARY_PATH="$(cd "$bin/../lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

if ! command -v nvidia-smi >/dev/null; then echo "SKIPPED: no GPU (nvidia-smi not found)"; exit 77; fi
if ! nvidia-smi -L >/dev/null 2>&1; then echo "SKIPPED: no GPU (nvidia-smi -L failed: no device or no NVML)"; exit 77; fi
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "SKIPPED: no GPU (python3 cannot use CUDA through torch)"; exit 77
fi
for t in gpscope-monitor gpscope-analyze; do
  [ -x "$bin/$t" ] || { echo "FAILED: $bin/$t missing (run scripts/gpu_bundle.sh)"; exit 1; }
done

rm -rf "$out"; mkdir -p "$out"
failures=0
now_ns() { date +%s%N; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime
ticks_per_s=$(getconf CLK_TCK)

run_case() {
  local iv=$1 dir="$out/interval_${1}ms"
  mkdir -p "$dir"
  "$bin/gpscope-monitor" --interval-ms "$iv" --output "$dir/files" --listen 127.0.0.1:0 \
    2>"$dir/monitor.log" &
  local mon=$! port=""
  local t_start_ns; t_start_ns=$(now_ns)
  local ticks_start; ticks_start=$(cpu_ticks "$mon")
  sleep 3  # NVML init and GPM probe done; an idle baseline
  local ticks_steady; ticks_steady=$(cpu_ticks "$mon")
  local t_steady_ns; t_steady_ns=$(now_ns)
  port=$(sed -n 's|.*serving http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$dir/monitor.log" | head -1)

  # The job: a bf16 matmul loop for ~8 s.
  local job_start_ns; job_start_ns=$(now_ns)
  python3 -c '
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn_like(a)
t = time.time()
while time.time() - t < 8:
    c = a @ b
    torch.cuda.synchronize()
' &
  local job=$!
  # Scrape while the job runs until a page lists its pid (the job needs a
  # few seconds for torch import and CUDA start-up before NVML sees it).
  if [ -n "$port" ] && command -v curl >/dev/null; then
    while kill -0 "$job" 2>/dev/null; do
      curl -s "http://127.0.0.1:$port/metrics" >"$dir/metrics_during_job.txt"
      grep -q "pid=\"$job\"" "$dir/metrics_during_job.txt" && break
      sleep 0.5
    done
  fi
  wait "$job"
  local job_rc=$? job_end_ns; job_end_ns=$(now_ns)
  sleep 4  # the monitor must see it gone
  local ticks_end; ticks_end=$(cpu_ticks "$mon")
  local t_end_ns; t_end_ns=$(now_ns)
  kill -TERM "$mon"; wait "$mon"
  local mon_rc=$?

  "$bin/gpscope-analyze" metrics --format json --window 1s "$dir"/files/*.gpscope >"$dir/metrics.json" \
    2>"$dir/analyze.err"
  local analyze_rc=$?
  python3 - "$dir/metrics.json" "$job" "$job_start_ns" "$job_end_ns" "$iv" \
    "$ticks_start" "$ticks_steady" "$ticks_end" "$t_start_ns" "$t_steady_ns" "$t_end_ns" \
    "$ticks_per_s" "$job_rc" "$mon_rc" "$analyze_rc" "$dir/metrics_during_job.txt" <<'EOF'
import json, os, sys
(path, job, js, je, iv, k0, k1, k2, t0, t1, t2, hz, job_rc, mon_rc, an_rc, page) = sys.argv[1:]
job, js, je, iv = int(job), int(js), int(je), int(iv)
k0, k1, k2, t0, t1, t2, hz = map(int, (k0, k1, k2, t0, t1, t2, hz))
fails = []
def check(ok, what):
    print(("  ok    " if ok else "  FAIL  ") + what)
    if not ok: fails.append(what)
check(int(job_rc) == 0, f"the PyTorch job exited 0 (rc {job_rc})")
check(int(mon_rc) == 0, f"the monitor stopped cleanly on SIGTERM (rc {mon_rc})")
check(int(an_rc) == 0, f"gpscope-analyze metrics exited 0 (rc {an_rc})")
d = json.load(open(path))
procs = [p for p in d["processes"] if p["pid"] == job]
check(len(procs) >= 1, f"job pid {job} appears among the GPU processes")
if procs:
    p = max(procs, key=lambda p: p["memory_bytes_max"] or 0)
    mem = p["memory_bytes_max"] or 0
    check(mem > 256 << 20, f"memory attributed to pid {job}: {mem / 2**30:.2f} GiB (> 0.25 GiB)")
    check(p["sm_util_samples"] > 0 and (p["sm_util_pct_max"] or 0) > 10,
          f"SM utilization attributed to pid {job}: max {p['sm_util_pct_max']}%, mean "
          f"{p['sm_util_pct_mean']}% over {p['sm_util_samples']} samples")
    slack = 2 * iv * 1_000_000 + 1_500_000_000
    check(js - 1_000_000_000 <= p["first_ns"] <= js + 10_000_000_000,
          f"first seen {(p['first_ns'] - js) / 1e9:+.2f} s after the job started")
    check(p["last_ns"] <= je + slack,
          f"last seen {(p['last_ns'] - je) / 1e9:+.2f} s after the job ended (disappeared)")
    check(d["end_ns"] >= p["last_ns"] + 2_000_000_000,
          f"the monitor sampled on for {(d['end_ns'] - p['last_ns']) / 1e9:.1f} s after it left")
    gpu = [g for g in d["gpus"] if g["uuid"] == p["uuid"]]
    if gpu:
        print(f"  info  its GPU {gpu[0]['gpu']}: util mean {gpu[0]['util_pct_mean']}%, SM mean "
              f"{gpu[0]['sm_util_pct_mean']}%, tensor mean {gpu[0]['tensor_util_pct_mean']}%")
if os.path.exists(page):
    text = open(page).read()
    check(f'pid="{job}"' in text and "gpscope_gpu_process_memory_bytes" in text,
          f"/metrics listed pid {job} while it ran")
steady = 100.0 * (k2 - k1) / hz / ((t2 - t1) / 1e9)
whole = 100.0 * (k2 - k0) / hz / ((t2 - t0) / 1e9)
print(f"  info  monitor CPU at {iv} ms: {steady:.2f}% of one core steady "
      f"({(t2 - t1) / 1e9:.1f} s), {whole:.2f}% over the whole run incl. NVML init "
      f"({(t2 - t0) / 1e9:.1f} s); /proc/PID/stat utime+stime, {hz} ticks/s")
if iv >= 1000:
    check(steady < 1.0, f"monitor CPU at {iv} ms below 1% of one core ({steady:.2f}%)")
sys.exit(1 if fails else 0)
EOF
}

for iv in 1000 100; do
  echo "== gpscope-monitor at ${iv} ms, PyTorch bf16 matmul job for 8 s"
  run_case "$iv" || failures=$((failures + 1))
done
echo "files, logs and JSON in $out"
if [ "$failures" -ne 0 ]; then echo "FAILED: $failures case(s)"; exit 1; fi
echo "PASSED: the monitor saw the job start and stop, with utilization and memory on its pid"
