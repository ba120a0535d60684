#!/usr/bin/env bash
# Makes (or checks) the Debian 11 "bullseye" root that the release packages
# are built against (cmake/toolchain-bullseye.cmake) and that
# tests/install/check_old_glibc.sh runs them in: glibc 2.31, the floor of
# what gpscope ships (README.md, "Install").
#
#   scripts/sysroot.sh [ROOT]        (default build-release/sysroot-bullseye)
#
# The root is debootstrap'ed from deb.debian.org (minbase and the packages
# below: bullseye's gcc-10 and g++-10 with their static libstdc++ and
# libgcc_eh, glibc 2.31, static abseil, protobuf, zstd, zlib and sqlite, protoc),
# then gets a copy of the CUDA toolkit's headers (the collector includes
# cuda.h and cupti.h and links nothing of CUDA) and a wrapper that runs the
# root's protoc on this machine through the root's own loader and libraries.
# A stamp (.gpscope-sysroot) records the package list and the CUDA headers
# copied; a root whose stamp matches is reused as it is (seconds), any
# other is made again (about 2-3 minutes, mostly the download).
#
# Needs root (debootstrap; sudo otherwise), debootstrap (scripts/setup.sh)
# and the network to deb.debian.org. GPSCOPE_DEBIAN_MIRROR overrides the
# mirror, CUDA_HOME (default /usr/local/cuda) the toolkit the headers come from.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-$repo/build-release/sysroot-bullseye}
mkdir -p "$(dirname "$root")"
root=$(cd "$(dirname "$root")" && pwd)/$(basename "$root")
mirror=${GPSCOPE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cuda=${CUDA_HOME:-/usr/local/cuda}
pkgs=(gcc-10 g++-10 libc6-dev libstdc++-10-dev binutils
      libprotobuf-dev protobuf-compiler libabsl-dev libzstd-dev zlib1g-dev libsqlite3-dev)

cuda_include=$cuda/include
[ -f "$cuda_include/cuda.h" ] && [ -f "$cuda_include/cupti.h" ] ||
  { echo "sysroot.sh: no cuda.h and cupti.h in $cuda_include: install the CUDA toolkit or set CUDA_HOME" >&2; exit 1; }
# The stamp: the package list, the script itself, the CUDA headers' version.
stamp_text="bullseye ${pkgs[*]}
script $(sha256sum "$0" | cut -c1-16)
cuda $(grep -m1 -E '^#define CUDA_VERSION ' "$cuda_include/cuda.h" | awk '{print $3}') $(grep -m1 -E '^#define CUPTI_API_VERSION ' "$cuda_include/cupti_version.h" 2>/dev/null | awk '{print $3}')"
if [ -f "$root/.gpscope-sysroot" ] && [ "$(cat "$root/.gpscope-sysroot")" = "$stamp_text" ]; then
  echo "sysroot.sh: $root is up to date" >&2
  exit 0
fi

SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] ||
  { echo "sysroot.sh: debootstrap is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
# unmount_under DIR: what a debootstrap that was stopped left mounted there (/proc).
unmount_under() {
  local m
  for m in $(awk -v d="$1/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r); do
    $SUDO umount "$m" || $SUDO umount -l "$m"
  done
}
start=$(date +%s)
if [ -e "$root" ]; then
  unmount_under "$root"
  echo "sysroot.sh: $root is out of date or incomplete: making it again" >&2
  $SUDO rm -rf --one-file-system "$root"
fi
tmp=$root.tmp
unmount_under "$tmp"
$SUDO rm -rf --one-file-system "$tmp"
echo "sysroot.sh: debootstrap bullseye into $root (${pkgs[*]})" >&2
if ! $SUDO env PATH="/usr/sbin:/sbin:$PATH" debootstrap --variant=minbase \
      --include="$(IFS=,; echo "${pkgs[*]}")" bullseye "$tmp" "$mirror" >"$root.log" 2>&1; then
  unmount_under "$tmp"
  tail -20 "$root.log" >&2
  echo "sysroot.sh: debootstrap of bullseye from $mirror failed (log: $root.log)" >&2
  exit 1
fi
# What the build does not read: the package cache, manuals and translations.
$SUDO rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/usr/share/man "$tmp"/usr/share/info \
  "$tmp"/usr/share/locale
# Of the documentation only the copyright files stay: the packages' notices
# are made from them (cmake/Install.cmake).
$SUDO find "$tmp"/usr/share/doc -type f ! -name copyright -delete
# Links with an absolute target (/usr/lib64/ld-linux-x86-64.so.2 ->
# /lib/x86_64-linux-gnu/ld-2.31.so) point into this machine once the root
# is read from outside (the linker, with --sysroot): made relative, they
# point into the root from outside and inside (chroot) alike.
$SUDO find "$tmp" -xdev -type l -lname '/*' -print0 | while IFS= read -r -d '' link; do
  $SUDO ln -snf "$(realpath -s -m --relative-to="$(dirname "$link")" "$tmp$(readlink "$link")")" "$link"
done
# Debian 11's abseil was compiled as C++14: its archives define class
# constants such as Status::kMovedFromString out of line, as strong
# symbols; gpscope is C++17, where the same `static constexpr` members are
# inline variables that every user emits too, so a static link sees two
# definitions of each (`multiple definition of ...kMovedFromString`). Both
# are the same constant (the headers fix abseil's ABI: options.h, no std::
# types), so the archives' data symbols are made weak, and the link takes one.
for archive in "$tmp"/usr/lib/x86_64-linux-gnu/libabsl_*.a; do
  nm -g --defined-only "$archive" 2>/dev/null | awk '$2 ~ /^[RDBGS]$/ {print $3}' | sort -u >"$root.weak"
  if [ -s "$root.weak" ]; then $SUDO objcopy --weaken-symbols="$root.weak" "$archive"; fi
done
rm -f "$root.weak"
# The CUDA headers (no libraries, no nvcc).
# (-L: the toolkit's include/ is often a link to targets/x86_64-linux/include.)
$SUDO mkdir -p "$tmp/usr/local/cuda/include"
$SUDO cp -RL "$cuda_include/." "$tmp/usr/local/cuda/include/"
# protoc of the root (it must match the root's libprotobuf headers), run here.
$SUDO mkdir -p "$tmp/opt/gpscope-sysroot/bin"
$SUDO tee "$tmp/opt/gpscope-sysroot/bin/protoc" >/dev/null <<'EOF'
#!/bin/sh
# The root's protoc through the root's loader and libraries (scripts/sysroot.sh).
root=$(cd "$(dirname "$0")/../../.." && pwd)
exec "$root/lib64/ld-linux-x86-64.so.2" --library-path "$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu" \
  "$root/usr/bin/protoc" "$@"
EOF
$SUDO chmod 0755 "$tmp/opt/gpscope-sysroot/bin/protoc"
# The root's compiler runs on this machine: its cc1plus needs libisl, libmpc,
# libmpfr, libgmp, libz and libzstd of the same sonames here.
cc1plus=$tmp/usr/lib/gcc/x86_64-linux-gnu/10/cc1plus
if missing=$(ldd "$cc1plus" | grep 'not found'); then
  echo "sysroot.sh: bullseye's cc1plus cannot run on this machine, it lacks: $(echo $missing)" \
       "(install the matching libisl/libmpc/libmpfr/libgmp packages)" >&2
  exit 1
fi
printf '%s' "$stamp_text" | $SUDO tee "$tmp/.gpscope-sysroot" >/dev/null
$SUDO mv "$tmp" "$root"
echo "sysroot.sh: made $root in $(( $(date +%s) - start )) s ($(du -sh "$root" | cut -f1))" >&2
