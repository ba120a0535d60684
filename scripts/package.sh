#!/usr/bin/env bash
# Builds the release packages from the `release` preset (Release, static
# protobuf/abseil/zlib in the tools, no -Werror; CMakePresets.json):
#   gpscope-<version>-linux-x86_64.tar.gz   unpack anywhere: bin/, lib/, share/gpscope/
#   gpscope_<version>-1_amd64.deb           the same tree under /opt/gpscope
# <version> is what `gpscope --version` prints (git describe; cmake/Version.cmake).
# Builds only what ships (the three tools and the collector) and prints the
# two paths last. Needs the CUDA toolkit's headers for the collector.
#
# What ships must run on the GPU nodes users have, not only on the machine
# that built it: it is compiled and linked against a Debian 11 (bullseye)
# root, glibc 2.31 (scripts/sysroot.sh makes it, cached in the build tree;
# cmake/toolchain-bullseye.cmake), and then checked: every binary needs
# glibc 2.31 at most and no shared libstdc++
# (tests/install/check_glibc_floor.sh). --host builds against this machine's
# own libraries instead (quicker; the packages then need this machine's
# glibc or newer, and are not checked for the floor).
#
#   scripts/package.sh [--build DIR] [--out DIR] [--sysroot DIR | --host] [--no-setup] [-- CMAKE_ARGS...]
#
# --build: the build tree (default build-release); --out: where the packages
# go (default BUILD/packages); --sysroot: the bullseye root (default
# BUILD/sysroot-bullseye, made when missing or out of date). CMAKE_ARGS are
# added to the configure step (scripts/test.sh adds -DGPSCOPE_WERROR=ON).
# --no-setup skips scripts/setup.sh (the Docker build stage installs only
# the build's packages itself).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$repo/build-release
out=""
sysroot=""
host=0
setup=1
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --sysroot) sysroot=$2; shift 2 ;;
    --host) host=1; shift ;;
    --no-setup) setup=0; shift ;;
    --) shift; extra=("$@"); break ;;
    *) echo "usage: $0 [--build DIR] [--out DIR] [--sysroot DIR | --host] [--no-setup] [-- CMAKE_ARGS...]" >&2
       exit 2 ;;
  esac
done
out=${out:-$build/packages}
if [ $setup = 1 ]; then bash "$repo/scripts/setup.sh"; fi
cd "$repo"
mkdir -p "$build"
build=$(cd "$build" && pwd)
toolchain=()
if [ $host = 0 ]; then
  sysroot=${sysroot:-$build/sysroot-bullseye}
  bash "$repo/scripts/sysroot.sh" "$sysroot"
  sysroot=$(cd "$sysroot" && pwd)
  toolchain=(-DCMAKE_TOOLCHAIN_FILE="$repo/cmake/toolchain-bullseye.cmake" -DGPSCOPE_SYSROOT="$sysroot")
fi
# A tree configured for the other compiler (host or root) starts afresh: CMake
# keeps a cache's compiler.
want=""
[ $host = 0 ] && want=$repo/cmake/toolchain-bullseye.cmake
have=$(sed -n 's/^CMAKE_TOOLCHAIN_FILE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
if [ -f "$build/CMakeCache.txt" ] && [ "$have" != "$want" ]; then
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
cmake --preset release -B "$build" ${toolchain[@]+"${toolchain[@]}"} ${extra[@]+"${extra[@]}"} >/dev/null
cmake --build "$build" -j"$(nproc)" --target gpscope gpscope-analyze gpscope-monitor gpscope_inject
if [ ! -f "$build/inject/libgpscope_inject.so" ]; then
  echo "package.sh: $build has no libgpscope_inject.so: the CUDA toolkit (cuda.h, cupti.h) was not" \
       "found; install it or pass -- -DCUDAToolkit_ROOT=DIR" >&2
  exit 1
fi
if [ $host = 0 ]; then
  bash "$repo/tests/install/check_glibc_floor.sh" "$build/inject/libgpscope_inject.so" \
    "$build/tools/gpscope/gpscope" "$build/tools/gpscope-analyze" "$build/tools/monitor/gpscope-monitor" >&2 ||
    { echo "package.sh: what $build built needs more than glibc 2.31 (above); nothing packaged" >&2; exit 1; }
fi
mkdir -p "$out"
rm -f "$out"/gpscope-*-linux-x86_64.tar.gz "$out"/gpscope_*_amd64.deb
(cd "$build" && cpack -G "TGZ;DEB" -B "$out" >"$build/cpack.log" 2>&1) ||
  { cat "$build/cpack.log" >&2; echo "package.sh: cpack failed (log above)" >&2; exit 1; }
rm -rf "$out/_CPack_Packages"
ls "$out"/gpscope-*-linux-x86_64.tar.gz "$out"/gpscope_*_amd64.deb
