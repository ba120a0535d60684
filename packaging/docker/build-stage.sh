#!/usr/bin/env bash
# The Dockerfile's build stage (packaging/docker/Dockerfile): the release
# tarball from the source tree SRC, unpacked into OUT/gpscope for the
# runtime stage to copy. tests/install/check_docker.sh runs this same script
# on a copy of the build context to check the stage without a container engine.
#
#   build-stage.sh SRC OUT [BUILD_DIR]
#
# GPSCOPE_VERSION (environment, optional): the version string to build in
# (the context carries no .git, so git describe cannot tell it).
set -euo pipefail
src=$(cd "$1" && pwd) out=$2 build=${3:-$src/build-release}
args=()
[ -n "${GPSCOPE_VERSION:-}" ] && args=(-DGPSCOPE_VERSION_OVERRIDE="$GPSCOPE_VERSION")
# The image's apt step installed the build's packages: no scripts/setup.sh here.
bash "$src/scripts/package.sh" --no-setup --build "$build" --out "$build/packages" -- ${args[@]+"${args[@]}"}
rm -rf "$out/gpscope"; mkdir -p "$out/gpscope"
tar -xzf "$build"/packages/gpscope-*-linux-x86_64.tar.gz -C "$out/gpscope" --strip-components=1
"$out/gpscope/bin/gpscope-monitor" --version
