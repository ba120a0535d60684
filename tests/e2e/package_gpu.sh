#!/usr/bin/env bash
# tests/e2e/package_gpu.sh: the release tarball on a real GPU, as a user
# installs it (issue 22): unpacked in a fresh directory, nothing else on the
# library path.
#
#   package_gpu.sh TARBALL OUT_DIR
#
# TARBALL is gpscope-<version>-linux-x86_64.tar.gz (scripts/package.sh;
# scripts/gpu_bundle.sh carries it as .carry/gpscope-linux-x86_64.tar.gz).
# Every tool runs with LD_LIBRARY_PATH unset. Without a GPU (or without
# PyTorch with CUDA) it prints the reason and exits 77 (SKIPPED). Ends with
# one line "N passed, N failed".
#
# 1. CUDA_INJECTION64_PATH=<unpacked>/lib/libgpscope_inject.so on a PyTorch
#    training loop (bench/workloads/torch_train.py, 60 steps): the script exits
#    0 and its trace, read by the unpacked gpscope-analyze, holds > 100 kernels,
#    names the tarball's version and loses nothing.
# 2. the unpacked `gpscope run` (no --lib: it finds ../lib itself) on the same
#    loop: exit 0, a trace with > 100 kernels, report.html and the findings.
# 3. `gpscope run` keeps the command's exit code (7).
# 4. the unpacked gpscope-monitor on the real NVML for 3 s: a trace that the
#    unpacked gpscope-analyze metrics reads, with every GPU.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
tarball=$(realpath "$1")
out=$(mkdir -p "$2" && cd "$2" && pwd)
TRAIN="$repo/bench/workloads/torch_train.py"
unset LD_LIBRARY_PATH  # the unpacked tree must need nothing that gpu_bundle.sh carries

. "$here/common.sh"
require_gpu torch
[ -f "$tarball" ] || { echo "FAIL: $tarball missing (scripts/gpu_bundle.sh carries it)"; echo "0 passed, 1 failed"; exit 1; }

pass=0; fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

unpacked=$(mktemp -d /tmp/gpscope-package-gpu.XXXXXX)  # fresh, and not packed into the session archive
trap 'rm -rf "$unpacked"' EXIT
tar -xzf "$tarball" -C "$unpacked"
root=$(echo "$unpacked"/gpscope-*-linux-x86_64)
version=$(basename "$root" | sed 's/^gpscope-\(.*\)-linux-x86_64$/\1/')
ANALYZE=$root/bin/gpscope-analyze
LIB=$root/lib/libgpscope_inject.so
echo "== device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
echo "== unpacked $(basename "$tarball") into $root; ldd gpscope-analyze: $(ldd "$ANALYZE" | awk '{print $1}' | grep -v vdso | tr '\n' ' ')"
echo "== glibc here: $(ldd --version | head -1)"

kernels() { "$ANALYZE" dump "$@" 2>/dev/null | grep -c '"type":"kernel"'; }
dropped() { "$ANALYZE" summary --format json "$@" 2>/dev/null | python3 -c '
import json, sys
try:
    print(sum(p["completeness"]["dropped_total"] for p in json.load(sys.stdin)["processes"]))
except Exception:
    print(-1)'; }

# 1. The one variable, the collector from the unpacked lib/.
d=$out/direct; rm -rf "$d"
CUDA_INJECTION64_PATH=$LIB GPSCOPE_OUTPUT=$d python3 "$TRAIN" --mode train --steps 60 \
  >"$out/direct.out" 2>"$out/direct.err"
rc=$?
n=$(kernels "$d"/*.gpscope); nd=$(dropped "$d"/*.gpscope)
"$ANALYZE" info "$d"/*.gpscope >"$out/direct.info" 2>&1
if [ "$rc" = 0 ] && [ "$n" -gt 100 ] && [ "$nd" = 0 ] && grep -qF "$version" "$out/direct.info"; then
  ok "collector from the tarball: exit 0, $n kernels, 0 dropped, trace version $version"
else
  bad "collector from the tarball: rc=$rc kernels=$n dropped=$nd; version $version in info: $(grep -c "$version" "$out/direct.info") (see $out/direct.err)"
fi

# 2. The unpacked launcher finds ../lib by itself.
d=$out/run; rm -rf "$d"
"$root/bin/gpscope" run --no-progress --output "$d" -- python3 "$TRAIN" --mode train --steps 60 \
  >"$out/run.out" 2>"$out/run.err"
rc=$?
n=$(kernels "$d"/*.gpscope)
if [ "$rc" = 0 ] && [ "$n" -gt 100 ] && [ -s "$d/report.html" ] &&
   grep -q "^gpscope: report: $d/report.html" "$out/run.err" &&
   grep -Eq "^gpscope: (no findings|[0-9]+ findings?)" "$out/run.err"; then
  ok "gpscope run from the tarball: exit 0, $n kernels, report $(stat -c %s "$d/report.html") bytes, findings printed"
else
  bad "gpscope run from the tarball: rc=$rc kernels=$n (see $out/run.err)"
fi

# 3. Its exit code is the command's.
"$root/bin/gpscope" run --no-progress --no-report --output "$out/exit" -- \
  python3 "$TRAIN" --mode train --steps 5 --exit-code 7 >/dev/null 2>"$out/exit.err"
rc=$?
[ "$rc" = 7 ] && ok "gpscope run from the tarball: exit code 7 passed through" || bad "gpscope run: exit code $rc, wanted 7"

# 4. The monitor on the real NVML.
d=$out/monitor; rm -rf "$d"
gpus=$(nvidia-smi -L | grep -c '^GPU ')
"$root/bin/gpscope-monitor" --output "$d" --duration 3 --listen none 2>"$out/monitor.err"
rc=$?
"$ANALYZE" metrics --format json "$d"/*.gpscope >"$out/monitor.json" 2>"$out/metrics.err"
mrc=$?
seen=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1])).get("gpus", [])))' "$out/monitor.json" 2>/dev/null || echo -1)
if [ "$rc" = 0 ] && [ "$mrc" = 0 ] && [ "$seen" = "$gpus" ]; then
  ok "gpscope-monitor from the tarball: 3 s on NVML, gpscope-analyze metrics reads $seen of $gpus GPUs"
else
  bad "gpscope-monitor from the tarball: rc=$rc metrics rc=$mrc GPUs $seen of $gpus (see $out/monitor.err, $out/metrics.err)"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
