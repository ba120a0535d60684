#!/usr/bin/env bash
# Runs the release tarball on the oldest system it supports: inside the
# Debian 11 root (glibc 2.31) that scripts/sysroot.sh made for the release
# build (chroot), from the tarball unpacked there, with a bare environment:
#   - the root's glibc is 2.31 (its libc.so.6 says so);
#   - every tool's --version runs and prints the package's version;
#   - `gpscope-analyze summary` of the bundled trace equals the golden
#     (tests/golden/summary/torch_train_starved.txt) and `report` writes a page;
#   - a C program built against the root (tests/install/old_glibc_host.c)
#     dlopens the unpacked collector and calls InitializeInjection the way
#     the CUDA driver does, with the stand-in CUPTI (tests/inject/fake_cupti.cc,
#     built with the root's g++) delivering 300 kernels: the program exits 0
#     and the unpacked gpscope-analyze finds the 300 kernels in its trace;
#   - the same without any CUPTI (a node without the CUDA toolkit's
#     libcupti): InitializeInjection returns, the program exits 0, the
#     collector says so in one stderr line;
#   - `gpscope run` hands a command the unpacked collector and keeps its
#     exit code.
#
#   tests/install/check_old_glibc.sh TARBALL [ROOT]
#
# ROOT defaults to build-release/sysroot-bullseye (scripts/package.sh makes
# it; nothing is downloaded here). Needs root for chroot (sudo otherwise).
# Prints one "ok:" line per check and "N passed, N failed" last; exits 1 if
# any failed.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 TARBALL [ROOT]" >&2; exit 2; }
tarball=$(realpath "$1")
root=$(realpath "${2:-$repo/build-release/sysroot-bullseye}")
[ -f "$root/.gpscope-sysroot" ] ||
  { echo "FAILED: $root is not a root that scripts/sysroot.sh made; run scripts/package.sh (or scripts/sysroot.sh $root) first"; exit 1; }
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
version=$(basename "$tarball" | sed -n 's/^gpscope-\(.*\)-linux-x86_64\.tar\.gz$/\1/p')
[ -n "$version" ] || { echo "FAILED: $tarball is not named gpscope-<version>-linux-x86_64.tar.gz"; exit 1; }

# The work directory lives inside the root: $work outside, $in inside.
work=$($SUDO mktemp -d "$root/tmp/gpscope-old-glibc.XXXXXX")
$SUDO chmod 0777 "$work"
in=/tmp/$(basename "$work")
proc_mounted=0
cleanup() {
  [ $proc_mounted = 1 ] && $SUDO umount "$root/proc"
  $SUDO rm -rf --one-file-system "$work"
}
trap cleanup EXIT
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAILED: $*"; failed=$((failed + 1)); }
# inside CMD...: CMD in the root, bare environment, from the work directory.
inside() { $SUDO chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/tmp sh -c "cd $in && $*"; }

# The collector reads /proc/self (identity, maps), as on any node.
if [ -z "$(ls -A "$root/proc" 2>/dev/null)" ] && $SUDO mount -t proc proc "$root/proc" 2>/dev/null; then
  proc_mounted=1
fi

libc=$($SUDO chroot "$root" /lib/x86_64-linux-gnu/libc.so.6 2>&1 | head -1)
case "$libc" in
  *"version 2.31"*) ok "the root's glibc: $libc" ;;
  *) bad "the root's libc.so.6 is not glibc 2.31: '$libc'"; echo "$passed passed, $failed failed"; exit 1 ;;
esac

# The tarball, unpacked inside the root; the bundled trace and its golden beside it.
tar -xzf "$tarball" -C "$work"
pkg=$in/gpscope-$version-linux-x86_64
mkdir -p "$work/tests/data" "$work/golden"
cp "$repo/tests/data/torch_train_starved.gpscope" "$work/tests/data/"
cp "$repo/tests/golden/summary/torch_train_starved.txt" "$work/golden/"

for t in gpscope gpscope-analyze gpscope-monitor; do
  v=$(inside "$pkg/bin/$t --version" 2>&1)
  [ "$v" = "$t $version" ] && ok "glibc 2.31: $t --version: $v" ||
    bad "glibc 2.31: $t --version printed '$v', expected '$t $version'"
done

if inside "$pkg/bin/gpscope-analyze summary tests/data/torch_train_starved.gpscope >summary.txt 2>summary.err"; then
  if cmp -s "$work/summary.txt" "$work/golden/torch_train_starved.txt"; then
    ok "glibc 2.31: gpscope-analyze summary tests/data/torch_train_starved.gpscope equals the golden"
  else
    bad "glibc 2.31: gpscope-analyze summary differs from the golden:"
    diff "$work/golden/torch_train_starved.txt" "$work/summary.txt" | head -20
  fi
else
  bad "glibc 2.31: gpscope-analyze summary failed: $(cat "$work/summary.err")"
fi
if inside "$pkg/bin/gpscope-analyze report tests/data/torch_train_starved.gpscope -o report.html >/dev/null 2>report.err" &&
   grep -qF "gpscope-analyze $version" "$work/report.html"; then
  ok "glibc 2.31: gpscope-analyze report wrote $(du -k "$work/report.html" | cut -f1) KiB"
else
  bad "glibc 2.31: gpscope-analyze report failed: $(cat "$work/report.err" 2>/dev/null)"
fi

# The "CUDA program" and the stand-in CUPTI, built against the root (its
# gcc-10, glibc 2.31 headers and libraries), as programs on that system are.
cc=("$root/usr/bin/gcc-10" --sysroot="$root")
cxx=("$root/usr/bin/g++-10" --sysroot="$root")
if ! "${cc[@]}" -O2 -Wall -Werror -o "$work/old_glibc_host" "$repo/tests/install/old_glibc_host.c" -ldl \
       2>"$work/cc.err" ||
   ! "${cxx[@]}" -std=c++17 -O2 -shared -fPIC -I"$root/usr/local/cuda/include" \
       -o "$work/libfake_cupti.so" "$repo/tests/inject/fake_cupti.cc" -lpthread 2>>"$work/cc.err"; then
  bad "building the test program or the stand-in CUPTI with the root's compiler: $(head -5 "$work/cc.err")"
else
  # With the stand-in CUPTI: 300 kernels end up in the trace.
  mkdir -p "$work/trace"
  out=$(inside "GPSCOPE_OUTPUT=$in/trace GPSCOPE_FILE_MODE=process GPSCOPE_CUPTI_PATH=$in/libfake_cupti.so" \
               "GPSCOPE_METRICS=0 FAKE_CUPTI_KERNELS=300 ./old_glibc_host $pkg/lib/libgpscope_inject.so" \
               "$in/libfake_cupti.so 2>host.err")
  rc=$?
  traces=$(ls "$work"/trace/*.gpscope 2>/dev/null)
  if [ $rc -ne 0 ] || [ "$out" != "$(printf 'init=1\nworkload=done')" ] || [ -z "$traces" ]; then
    bad "glibc 2.31: the collector with the stand-in CUPTI: exit $rc, printed '$out', traces '$traces': $(cat "$work/host.err")"
  else
    kernels=$(inside "$pkg/bin/gpscope-analyze dump trace/*.gpscope" 2>"$work/dump.err" | grep -c '"type":"kernel"')
    [ "$kernels" = 300 ] &&
      ok "glibc 2.31: dlopen + InitializeInjection with the stand-in CUPTI: exit 0, $kernels kernels in $(basename $traces)" ||
      bad "glibc 2.31: the trace holds $kernels kernels, the stand-in delivered 300: $(cat "$work/dump.err")"
  fi
  # Without CUPTI: InitializeInjection returns, the program is unharmed.
  mkdir -p "$work/trace-nocupti"
  out=$(inside "GPSCOPE_OUTPUT=$in/trace-nocupti ./old_glibc_host $pkg/lib/libgpscope_inject.so 2>nocupti.err")
  rc=$?
  lines=$(grep -c . "$work/nocupti.err")
  if [ $rc -eq 0 ] && [ "$out" = "init=1" ] && [ "$lines" -eq 1 ] && grep -qi 'cupti' "$work/nocupti.err"; then
    ok "glibc 2.31: no CUPTI: InitializeInjection returned, exit 0, one line: $(cat "$work/nocupti.err")"
  else
    bad "glibc 2.31: no CUPTI: exit $rc, printed '$out', $lines stderr lines: $(head -3 "$work/nocupti.err")"
  fi
fi

# gpscope run: the collector from ../lib; the command's exit code kept.
got=$(inside "$pkg/bin/gpscope run --no-report --no-progress --output $in/run -- /usr/bin/printenv CUDA_INJECTION64_PATH 2>run.err")
rc=$?
[ $rc -eq 0 ] && [ "$got" = "$pkg/bin/../lib/libgpscope_inject.so" ] &&
  ok "glibc 2.31: gpscope run gave the command CUDA_INJECTION64_PATH=$got" ||
  bad "glibc 2.31: gpscope run: rc $rc, CUDA_INJECTION64_PATH='$got': $(cat "$work/run.err")"
inside "$pkg/bin/gpscope run --no-report --no-progress --output $in/run -- /bin/sh -c 'exit 7' 2>/dev/null"
rc=$?
[ $rc -eq 7 ] && ok "glibc 2.31: gpscope run kept the command's exit code (7)" ||
  bad "glibc 2.31: gpscope run exited $rc for a command that exited 7"

[ $proc_mounted = 1 ] || echo "note: /proc could not be mounted in the root; the collector ran without it"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
