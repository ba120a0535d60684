#!/bin/sh
# tests/golden/summary/refresh.sh: rewrites the `gpscope-analyze summary`
# goldens (<case>.txt and <case>.json for each trace in tests/data) from the
# current build. Run it after an intended change to the report, then review
# the diff before committing.
#
#   tests/golden/summary/refresh.sh [BUILD_DIR]     (default: build)
set -eu
root=$(cd "$(dirname "$0")/../../.." && pwd)
build=${1:-$root/build}
cmake --build "$build" --target summary_test
GPSCOPE_UPDATE_GOLDENS=1 "$build/tests/tools/summary_test" --gtest_filter='GoldenTest.*'
git -C "$root" status --short -- tests/golden/summary || true
