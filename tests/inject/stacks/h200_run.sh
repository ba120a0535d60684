#!/usr/bin/env bash
# tests/inject/stacks/h200_run.sh: on the GPU machine, from the repo root
# with .carry/stacks carried (h200_bundle.sh): the stack machinery against
# the image's CPython (3.12.3) and CPU. Writes into $OUT (default
# /tmp/stacks-out): stacks_bench.txt, cpython-<version>.pyimg (commit it to
# tests/inject/stacks/data/), offsets-3.12.txt. Exits 1 if anything failed.
set -uo pipefail
c=.carry/stacks
out=${OUT:-/tmp/stacks-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$c/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The image's interpreter; GPSCOPE_PYTHON / GPSCOPE_PYTHON_ROOT only to try this elsewhere.
py=${GPSCOPE_PYTHON:-/usr/bin/python3.12}
root=${GPSCOPE_PYTHON_ROOT:-/nonexistent}
fail=0
echo "== built at $(cat $c/COMMIT)"
echo "== budget: CPU column, BM_PythonCapture and BM_NativeFastUnwind at /10 and /30 must be <= 1000 ns"
"$c/bin/stacks_bench" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>&1 |
  tee "$out/stacks_bench.txt" || fail=1
echo "== CPython $($py -c 'import platform; print(platform.python_version())'): walker vs traceback, lines, shutdown"
bash tests/inject/stacks/run_py_stacks_test.sh 12 "$c/bin/libgpscope_stacks_pytest.so" \
  tests/inject/stacks/py_stacks_test.py "$root" || fail=1
echo "== recording a memory image"
version=$($py -c 'import platform; print(platform.python_version())')
$py tests/inject/stacks/py_stacks_test.py "$c/bin/libgpscope_stacks_pytest.so" "$out/cpython-$version.pyimg" ||
  fail=1
echo "== native stacks"
"$c/bin/native_stacks_test" --gtest_brief=1 || fail=1
"$c/bin/native_stack_prog_fp" fp || fail=1
"$c/bin/native_stack_prog_nofp" nofp || fail=1
"$c/bin/python_walker_test" --gtest_brief=1 || fail=1
echo "== the 3.12 table against /usr/include/python3.12"
if command -v cc >/dev/null && [ -f /usr/include/python3.12/internal/pycore_frame.h ]; then
  if cc -w -I/usr/include/python3.12 tests/inject/stacks/python_offsets_probe.c -o "$out/probe" &&
     "$out/probe" >"$out/offsets-3.12.txt" &&
     diff <("$c/bin/python_offsets_probe_3_12") "$out/offsets-3.12.txt"; then
    echo "ok: /usr/include/python3.12 gives the offsets of the 3.12 table (checked here on 3.12.1)"
  else
    echo "FAIL: /usr/include/python3.12 differs from the 3.12 table (diff above: < table, > here)"
    fail=1
  fi
else
  echo "skipped: no C compiler or no /usr/include/python3.12/internal (the walk above used the interpreter itself)"
fi
[ $fail = 0 ] && echo "== all passed" || echo "== FAILED"
exit $fail
