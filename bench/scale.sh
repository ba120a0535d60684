#!/usr/bin/env bash
# The analyzer's scale benchmark (issue 5): a synthetic 50-million-event trace
# (bench/gen_trace.cc), then `gpscope-analyze summary` on it, timed, with its
# peak RSS. Target: <= 30 s and <= 2 GiB here (2 cores).
#   bash bench/scale.sh [BUILD_DIR] [EVENTS]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
events=${2:-50000000}
trace=$(mktemp -d)/scale.gpscope
"$build/bench/gen_trace" --events "$events" --out "$trace"
ls -la "$trace"
python3 - "$build/tools/gpscope-analyze" "$trace" <<'PY'
import resource, subprocess, sys, time
t0 = time.monotonic()
p = subprocess.run([sys.argv[1], "summary", sys.argv[2]], capture_output=True, text=True)
dt = time.monotonic() - t0
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(p.stdout[:3000])
print(f"summary: exit {p.returncode}, {dt:.1f} s wall, peak RSS {rss:.0f} MiB")
sys.exit(p.returncode)
PY
rm -f "$trace"
