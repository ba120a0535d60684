#!/usr/bin/env bash
# Installs every Debian package gpscope's build, tests and benchmarks need.
# Idempotent: skips apt entirely when everything is already there.
set -euo pipefail
pkgs=(cmake g++ make pkg-config git
      protobuf-compiler libprotobuf-dev libabsl-dev libzstd-dev zstd zlib1g-dev
      libsqlite3-dev sqlite3  # export --format sqlite; its test runs the sqlite3 CLI
      libgtest-dev libgmock-dev libbenchmark-dev
      clang libclang-rt-14-dev binutils python3
      prometheus curl  # the node monitor's Prometheus integration test
      dpkg-dev file lintian  # scripts/package.sh (CPack's .deb) and its checks
      nodejs  # export_chrome_nests_and_pairs (check_chrome.mjs) and the report tests
      debootstrap)  # scripts/sysroot.sh: the Debian 11 root the release is built against
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "gpscope setup: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
