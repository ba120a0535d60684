#!/usr/bin/env bash
# tests/tools/layering_test.sh: the layering check (cmake/CheckLayers.cmake,
# run before every tools library is built) accepts the tree as it is and
# rejects an upward include: model/ including render/, render/ including
# analyze/, the monitor including the model. Each bad include is put into a
# copy of tools/, never into the tree.
#   layering_test.sh REPO CMAKE
set -euo pipefail
repo=$1 cmake=${2:-cmake}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { "$cmake" -DTOOLS_DIR="$1" -P "$repo/cmake/CheckLayers.cmake" >"$tmp/out" 2>&1; }

check "$repo/tools" || { cat "$tmp/out"; echo "FAIL: the tree itself breaks the layers"; exit 1; }
echo "ok   the tree follows the layers"

failed=0
# bad FILE INCLUDE: FILE (relative to tools/) gets INCLUDE; the check must fail naming it.
bad() {
  rm -rf "$tmp/tools"
  cp -r "$repo/tools" "$tmp/tools"
  printf '#include "%s"\n' "$2" >>"$tmp/tools/$1"
  if check "$tmp/tools"; then
    echo "FAIL tools/$1 including $2 passed the check"; failed=1
  elif ! grep -q "tools/$1: includes $2" "$tmp/out"; then
    echo "FAIL tools/$1 including $2: the message does not name them:"; cat "$tmp/out"; failed=1
  else
    echo "ok   tools/$1 including $2 is rejected"
  fi
}
bad model/timeline.h tools/render/json_writer.h
bad reader/limits.cc tools/model/trace_model.h
bad render/text_format.cc tools/analyze/cli.h
bad analyses/windows.cc tools/render/text_format.h
bad monitor/monitor.cc tools/model/trace_model.h
exit $failed
