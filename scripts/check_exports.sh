#!/usr/bin/env bash
# Checks that the injected library exports only its entry points and depends
# on nothing but the C runtime family (CUPTI and NVML are dlopen'ed).
set -euo pipefail
lib=$1
exports=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort)
allowed="InitializeInjection"
bad=$(comm -23 <(echo "$exports") <(echo "$allowed" | tr ' ' '\n' | sort))
if [ -n "$bad" ]; then
  echo "FAIL: $lib exports more than its entry points:"; echo "$bad"; exit 1
fi
needed=$(readelf -d "$lib" | awk '/NEEDED/ {gsub(/[\[\]]/, "", $5); print $5}')
for so in $needed; do
  case "$so" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*.so.*) ;;
    *) echo "FAIL: $lib needs $so (only the C runtime family is allowed)"; exit 1 ;;
  esac
done
echo "ok: exports [$exports], needs [$(echo $needed)]"
