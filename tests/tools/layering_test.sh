#!/usr/bin/env bash
# tests/tools/layering_test.sh: the layering check (cmake/CheckLayers.cmake,
# run before every gpscope library is built) accepts the tree as it is and
# rejects an upward include: in the pipeline (model/ including render/, ...),
# the monitor or the launcher including the collector (inject/), the shared
# layers including what sits above them. Each bad include is put into a
# copy of the checked folders, never into the tree.
#   layering_test.sh REPO CMAKE
set -euo pipefail
repo=$1 cmake=${2:-cmake}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { "$cmake" -DSOURCE_DIR="$1" -P "$repo/cmake/CheckLayers.cmake" >"$tmp/out" 2>&1; }

check "$repo" || { cat "$tmp/out"; echo "FAIL: the tree itself breaks the layers"; exit 1; }
echo "ok   the tree follows the layers"

failed=0
# bad FILE INCLUDE: FILE (relative to the repo) gets INCLUDE; the check must fail naming it.
bad() {
  rm -rf "$tmp/src"
  mkdir -p "$tmp/src"
  for d in proto common metrics inject tools; do cp -r "$repo/$d" "$tmp/src/$d"; done
  printf '#include "%s"\n' "$2" >>"$tmp/src/$1"
  if check "$tmp/src"; then
    echo "FAIL $1 including $2 passed the check"; failed=1
  elif ! grep -q "$1: includes $2" "$tmp/out"; then
    echo "FAIL $1 including $2: the message does not name them:"; cat "$tmp/out"; failed=1
  else
    echo "ok   $1 including $2 is rejected"
  fi
}
# The offline pipeline.
bad tools/model/timeline.h tools/render/json_writer.h
bad tools/reader/limits.cc tools/model/trace_model.h
bad tools/render/text_format.cc tools/analyze/cli.h
bad tools/analyses/windows.cc tools/render/text_format.h
bad tools/model/model_builder.cc metrics/sampler.h
# The monitor and the launcher: never the collector; the monitor uses the
# pipeline only up to analyses/ (its window summaries).
bad tools/monitor/monitor.cc tools/render/json_writer.h
bad tools/monitor/window_tracker.cc tools/analyze/cli.h
bad tools/monitor/monitor.cc inject/config.h
bad tools/monitor/trace_files.h inject/stacks/stack_table.h
bad tools/gpscope/attach.cc inject/collector.h
bad tools/gpscope/run.cc inject/config.h
# The shared layers include only what is below them.
bad proto/chunk_writer.cc common/raw_log.h
bad common/identity.cc common/control/control_channel.h
bad common/posix.cc metrics/sampler.h
bad common/control/capture_window.cc inject/config.h
bad metrics/sampler.cc common/control/capture_window.h
bad metrics/sampler.cc inject/buffer_pool.h
bad inject/config.cc tools/reader/limits.h
exit $failed
