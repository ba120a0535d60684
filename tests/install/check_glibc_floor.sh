#!/usr/bin/env bash
# Checks that each ELF file runs on the oldest system gpscope supports: every
# symbol it takes from glibc carries a version no newer than the floor (2.31:
# Debian 11, Ubuntu 20.04; README.md, "Install"), and none comes from a
# shared C++ runtime (GLIBCXX_*/CXXABI_*: what ships links libstdc++
# statically, so it runs where the system's libstdc++ is older than the one
# it was built with, or absent).
#
#   tests/install/check_glibc_floor.sh [--floor 2.31] FILE...
#
# Prints one "ok:" line per file, or "FAILED:" lines naming every symbol
# that breaks the floor with its version ("FAILED: lib/libgpscope_inject.so
# needs glibc newer than 2.31: arc4random@GLIBC_2.36 ...") and the first
# three C++ runtime symbols with their count; exits 1 if any file fails.
set -uo pipefail
floor=2.31
if [ "${1:-}" = "--floor" ]; then floor=$2; shift 2; fi
[ $# -gt 0 ] || { echo "usage: $0 [--floor X.Y] FILE..." >&2; exit 2; }
status=0
for f in "$@"; do
  if ! syms=$(objdump -T "$f" 2>&1); then
    echo "FAILED: $f: objdump -T failed: $(echo "$syms" | head -1)"; status=1; continue
  fi
  # objdump -T: "... DF *UND* 0000000000000000 (GLIBC_2.34) pthread_create"
  # (the version in parentheses for a hidden or undefined reference).
  refs=$(echo "$syms" | awk '{
      for (i = 1; i <= NF; i++) {
        v = $i; gsub(/[()]/, "", v)
        if (v ~ /^(GLIBC|GLIBCXX|CXXABI)_[0-9]/) { print $NF "@" v; break }
      }
    }' | sort -u)
  bad="" cxx="" ncxx=0
  newest=""
  for r in $refs; do
    v=${r##*@}
    case "$v" in
      GLIBC_*)
        n=${v#GLIBC_}
        if [ "$(printf '%s\n%s\n' "$floor" "$n" | sort -V | tail -1)" != "$floor" ]; then
          bad="$bad $r"
        elif [ -z "$newest" ] || [ "$(printf '%s\n%s\n' "$newest" "$n" | sort -V | tail -1)" = "$n" ]; then
          newest=$n
        fi ;;
      *) ncxx=$((ncxx + 1)); [ $ncxx -le 3 ] && cxx="$cxx $r" ;;  # GLIBCXX_/CXXABI_: a shared libstdc++
    esac
  done
  [ $ncxx -gt 3 ] && cxx="$cxx (and $((ncxx - 3)) more)"
  if [ -n "$bad" ]; then
    echo "FAILED: $f needs glibc newer than $floor:$bad"
    status=1
  fi
  if [ $ncxx -gt 0 ]; then
    echo "FAILED: $f needs a shared libstdc++ ($ncxx GLIBCXX/CXXABI symbols):$cxx"
    status=1
  fi
  if [ -z "$bad" ] && [ $ncxx -eq 0 ]; then
    echo "ok: $f: newest glibc symbol version ${newest:-none} (floor $floor), no GLIBCXX/CXXABI"
  fi
done
exit $status
