#!/usr/bin/env bash
# Builds the release packages from the `release` preset (Release, static
# protobuf/abseil/zlib in the tools, no -Werror; CMakePresets.json):
#   gpscope-<version>-linux-x86_64.tar.gz   unpack anywhere: bin/, lib/, share/gpscope/
#   gpscope_<version>-1_amd64.deb           the same tree under /opt/gpscope
# <version> is what `gpscope --version` prints (git describe; cmake/Version.cmake).
# Builds only what ships (the three tools and the collector) and prints the
# two paths last. Needs the CUDA toolkit's headers for the collector.
#
#   scripts/package.sh [--build DIR] [--out DIR] [--no-setup] [-- CMAKE_ARGS...]
#
# --build: the build tree (default build-release); --out: where the packages
# go (default BUILD/packages). CMAKE_ARGS are added to the configure step
# (scripts/test.sh adds -DGPSCOPE_WERROR=ON). --no-setup skips scripts/setup.sh
# (the Docker build stage installs only the build's packages itself).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$repo/build-release
out=""
setup=1
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-setup) setup=0; shift ;;
    --) shift; extra=("$@"); break ;;
    *) echo "usage: $0 [--build DIR] [--out DIR] [--no-setup] [-- CMAKE_ARGS...]" >&2; exit 2 ;;
  esac
done
out=${out:-$build/packages}
if [ $setup = 1 ]; then bash "$repo/scripts/setup.sh"; fi
cd "$repo"
cmake --preset release -B "$build" ${extra[@]+"${extra[@]}"} >/dev/null
cmake --build "$build" -j"$(nproc)" --target gpscope gpscope-analyze gpscope-monitor gpscope_inject
if [ ! -f "$build/inject/libgpscope_inject.so" ]; then
  echo "package.sh: $build has no libgpscope_inject.so: the CUDA toolkit (cuda.h, cupti.h) was not" \
       "found; install it or pass -- -DCUDAToolkit_ROOT=DIR" >&2
  exit 1
fi
mkdir -p "$out"
rm -f "$out"/gpscope-*-linux-x86_64.tar.gz "$out"/gpscope_*_amd64.deb
(cd "$build" && cpack -G "TGZ;DEB" -B "$out" >"$build/cpack.log" 2>&1) ||
  { cat "$build/cpack.log" >&2; echo "package.sh: cpack failed (log above)" >&2; exit 1; }
rm -rf "$out/_CPack_Packages"
ls "$out"/gpscope-*-linux-x86_64.tar.gz "$out"/gpscope_*_amd64.deb
