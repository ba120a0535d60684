#!/usr/bin/env bash
# Browser tests of `gpscope-analyze report` (tests/report/run.mjs) in headless
# Chromium:
#   1. installs Debian's chromium with apt when /usr/bin/chromium is missing
#      (no browser is downloaded by npm or playwright);
#   2. builds gpscope-analyze and gen_trace (the 1M-event trace);
#   3. npm ci in report/ (playwright-core, the locked front-end packages);
#   4. writes reports of the bundled traces (single GPU, the two-GPU DDP
#      runs, a power-capped H200), a hostile-strings trace, two- and
#      eight-rank traces and a 1M-event trace, and runs the browser tests;
#      checks that the committed report/dist/ matches a fresh build;
#   5. loads export's Chrome JSON of five traces in speedscope's own web app
#      (tests/export/speedscope_check.mjs: a real consumer; it fails on
#      the slices that overlapped on one lane before the export's lanes).
# Prints "N passed, N failed" last; exits non-zero when any failed.
#
#   scripts/test_report.sh [--build DIR] [--out DIR] [--screenshots]
#
# --screenshots also refreshes docs/report-overview.png and
# docs/report-timeline.png from the bundled trace's report,
# docs/report-ranks.png from the two-GPU straggler trace's and
# docs/report-metrics.png from the power-capped H200 trace's.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
build=build
out=""
docs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --screenshots) docs=(--docs "$repo/docs"); shift ;;
    *) echo "usage: $0 [--build DIR] [--out DIR] [--screenshots]" >&2; exit 2 ;;
  esac
done

if [ -z "$out" ]; then
  # Our own scratch directory: removed when every test passed, kept (and
  # named) when one failed, for its screenshots and logs.
  out=$(mktemp -d "${TMPDIR:-/tmp}/gpscope-report-test.XXXXXX")
  trap 'rc=$?; if [ $rc -eq 0 ]; then rm -rf "$out"; else echo "test_report.sh: outputs kept in $out" >&2; fi' EXIT
fi

step() { printf '\n==== %s\n' "$*"; }

step "chromium"
if [ ! -x /usr/bin/chromium ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends chromium
fi
/usr/bin/chromium --version 2>/dev/null | head -1

step "build gpscope-analyze and gen_trace ($build)"
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" -j"$(nproc)" --target gpscope-analyze
cmake --build "$build" -j"$(nproc)" --target gen_trace ||
  echo "gen_trace not available in $build (GPSCOPE_BUILD_BENCH=OFF?): the 1M-event test is skipped"

step "npm ci (report/)"
(cd report && npm ci --no-audit --no-fund)

step "browser tests"
node tests/report/run.mjs --analyze "$build/tools/gpscope-analyze" \
  --gen-trace "$build/bench/gen_trace" --out "$out" --check-dist "${docs[@]}"

step "export's Chrome JSON in a real consumer: speedscope (report/package.json) in Chromium"
node tests/export/speedscope_check.mjs --analyze "$build/tools/gpscope-analyze" \
  tests/export/sample.gpscope tests/data/torch_train_starved.gpscope \
  tests/data/torch_train_sync.gpscope tests/data/h200x2_ddp_straggler.gpscope \
  tests/data/stacks/item_then_host.gpscope
