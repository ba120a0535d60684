#!/usr/bin/env bash
# tests/install/check_glibc_floor.sh against libraries whose symbol versions
# are known: a stand-in "libc" (a version script gives old_call GLIBC_2.2.5
# and new_call GLIBC_2.36) and a stand-in "libstdc++" (cxx_call,
# GLIBCXX_3.4.30), and three users of them. The check must pass the user of
# old_call alone, fail the user of new_call naming new_call@GLIBC_2.36 (and
# not old_call), fail the user of cxx_call naming it, and pass new_call
# under --floor 2.36. Independent of this machine's own glibc.
#
#   tests/install/glibc_floor_test.sh CC WORKDIR
set -uo pipefail
cc=$1 work=$2
check=$(cd "$(dirname "$0")" && pwd)/check_glibc_floor.sh
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
failed=0
expect() {  # expect WHAT RC PATTERN [ANTI] -- ARGS...: the check's exit code and output
  local what=$1 want_rc=$2 pattern=$3 anti=$4; shift 5
  local out rc
  out=$(bash "$check" "$@" 2>&1); rc=$?
  if [ $rc -ne "$want_rc" ] || ! grep -qF -- "$pattern" <<<"$out" || { [ -n "$anti" ] && grep -qF -- "$anti" <<<"$out"; }; then
    echo "FAILED: $what: exit $rc (expected $want_rc), output: $out"; failed=1
  else
    echo "ok: $what: $out"
  fi
}
printf 'GLIBC_2.2.5 { global: old_call; local: *; };\nGLIBC_2.36 { global: new_call; } GLIBC_2.2.5;\n' >c.map
printf 'GLIBCXX_3.4.30 { global: cxx_call; local: *; };\n' >cxx.map
printf 'void old_call(void) {}\nvoid new_call(void) {}\n' >c.c
printf 'void cxx_call(void) {}\n' >cxx.c
printf 'void old_call(void);\nvoid use(void) { old_call(); }\n' >old.c
printf 'void old_call(void); void new_call(void);\nvoid use(void) { old_call(); new_call(); }\n' >new.c
printf 'void cxx_call(void);\nvoid use(void) { cxx_call(); }\n' >cxxuser.c
"$cc" -shared -fPIC -Wl,--version-script=c.map -Wl,-soname,libfakec.so -o libfakec.so c.c &&
"$cc" -shared -fPIC -Wl,--version-script=cxx.map -Wl,-soname,libfakecxx.so -o libfakecxx.so cxx.c &&
"$cc" -shared -fPIC -o old.so old.c -L. -lfakec &&
"$cc" -shared -fPIC -o new.so new.c -L. -lfakec &&
"$cc" -shared -fPIC -o cxxuser.so cxxuser.c -L. -lfakecxx || { echo "FAILED: building the test libraries"; exit 1; }
expect "GLIBC_2.2.5 only passes" 0 "newest glibc symbol version 2.2.5 (floor 2.31)" "" -- old.so
expect "GLIBC_2.36 fails, named" 1 "new_call@GLIBC_2.36" "old_call" -- new.so
expect "GLIBCXX fails, named" 1 "cxx_call@GLIBCXX_3.4.30" "" -- cxxuser.so
expect "--floor 2.36 passes GLIBC_2.36" 0 "newest glibc symbol version 2.36 (floor 2.36)" "" -- --floor 2.36 new.so
expect "one bad file of two fails" 1 "new_call@GLIBC_2.36" "" -- old.so new.so
exit $failed
