#!/usr/bin/env bash
# tests/inject/stacks/run_py_stacks_test.sh MINOR LIB SCRIPT ROOT [SANITIZE CXX]
# Runs py_stacks_test.py under CPython 3.MINOR from ROOT (pyenv versions,
# /root/.pyenv/versions on the CI machines), else /usr/bin/python3.MINOR.
#
# A missing interpreter FAILS, naming it, unless GPSCOPE_SKIP_PYTHON lists
# that version ("3.9,3.10" or "all"): then the test reports SKIPPED (exit 77,
# ctest's SKIP_RETURN_CODE). In sanitizer builds the test library needs the
# sanitizer runtimes preloaded into the (uninstrumented) interpreter.
set -uo pipefail
minor=$1 lib=$2 script=$3 root=$4 sanitize=${5:-} cxx=${6:-c++}
version=3.$minor
py=""
for d in "$root"/"$version".*/; do
  [ -x "$d/bin/python$version" ] && { py="$d/bin/python$version"; break; }
done
# Else the system's interpreter (the H200 image's /usr/bin/python3.12).
[ -z "$py" ] && [ -x "/usr/bin/python$version" ] && py="/usr/bin/python$version"
if [ -z "$py" ]; then
  case ",${GPSCOPE_SKIP_PYTHON:-}," in
    *",$version,"*|*",all,"*)
      echo "SKIPPED: CPython $version not installed under $root (GPSCOPE_SKIP_PYTHON=${GPSCOPE_SKIP_PYTHON})"
      exit 77 ;;
  esac
  echo "FAIL: CPython $version not found under $root or as /usr/bin/python$version: install it" \
       "(pyenv install $version) or set GPSCOPE_SKIP_PYTHON=$version to skip this test"
  exit 1
fi
preload=""
case "$sanitize" in
  *address*) preload="$("$cxx" -print-file-name=libasan.so)" ;;
esac
case "$sanitize" in
  *undefined*) preload="${preload:+$preload:}$("$cxx" -print-file-name=libubsan.so)" ;;
esac
run() {
  if [ -n "$preload" ]; then
    # The interpreter leaks by design at exit; only our library is checked.
    LD_PRELOAD="$preload" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" "$py" "$script" "$lib" "$@"
  else
    "$py" "$script" "$lib" "$@"
  fi
}
echo "$py $script"
run || exit 1
# Interpreter shutdown with a daemon thread capturing in a loop.
out=$(run --finalize 2>&1)
rc=$?
echo "$out"
if [ $rc -ne 0 ]; then
  echo "FAIL: CPython $version: the shutdown run exited $rc"
  exit 1
fi
case "$out" in
  *"turned Python stacks off"*)
    echo "FAIL: CPython $version: a capture during shutdown found an inconsistent chain"; exit 1 ;;
esac
report=$(printf '%s\n' "$out" | grep -o 'capture loop: [0-9]* captures after shutdown began, [0-9]* walked a chain')
after=$(printf '%s' "$report" | awk '{print $3}')
walked=$(printf '%s' "$report" | awk '{print $8}')
if [ -z "$report" ] || [ "${after:-0}" -eq 0 ]; then
  echo "FAIL: CPython $version: the capture loop made no capture after shutdown began"; exit 1
fi
if [ "$walked" -ne 0 ]; then
  echo "FAIL: CPython $version: $walked captures walked a chain after shutdown began"; exit 1
fi
echo "PASS: CPython $version: $after captures after shutdown began, none walked a chain, exit 0"
