#!/usr/bin/env bash
# Checks the release packages as a user gets them (issue 22's must-show):
# the tarball unpacked in a fresh directory, and the .deb extracted into a
# scratch root (dpkg-deb -x), each checked the same way:
#   - the layout: bin/{gpscope,gpscope-analyze,gpscope-monitor},
#     lib/libgpscope_inject.so, share/gpscope/{systemd,kubernetes,grafana,docs};
#   - `ldd` of each tool shows only the C runtime (libc, libm, libdl,
#     libpthread, the loader; no libstdc++, abseil, protobuf, zstd or zlib)
#     and the collector only libc, libm, libdl, libpthread
#     (scripts/check_exports.sh: its exports and DT_NEEDED);
#   - the glibc floor: no binary needs a glibc symbol version newer than
#     2.31 or any GLIBCXX/CXXABI one (tests/install/check_glibc_floor.sh,
#     which names each symbol that breaks it); the .deb depends on libc6
#     (>= 2.31) at most;
#   - with a bare environment (env -i PATH=/usr/bin:/bin), from the unpacked
#     tree: every tool's --version is the package's version;
#     `gpscope-analyze summary` of the bundled trace equals the golden
#     (tests/golden/summary/torch_train_starved.txt) and `report` writes a
#     page that names that version; `gpscope run` hands the command the
#     unpacked collector (../lib, relative to itself) and keeps its exit code;
#     `gpscope-monitor` (replayed NVML readings) writes a trace that the
#     unpacked `gpscope-analyze` reads, naming the version;
#   - the .deb: every /opt/gpscope path named in README.md, docs/ and
#     packaging/ exists in it; its control fields, /usr/share/doc/gpscope/copyright, and
#     lintian: every tag it reports must be listed, with the reason, in
#     packaging/debian/lintian-expected (fails on any other).
#
#   tests/install/check_package.sh TARBALL DEB
#
# Prints one "ok:" line per check and "N passed, N failed" last; exits 1 if any failed.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tarball=$(realpath "$1") deb=$(realpath "$2")
work=$(mktemp -d /tmp/gpscope-package-check.XXXXXX)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAILED: $*"; failed=$((failed + 1)); }
bare() { env -i PATH=/usr/bin:/bin "$@"; }
glibc_floor=2.31  # README.md, "Install": Debian 11, Ubuntu 20.04, RHEL 9

# The version in the file name: gpscope-<version>-linux-x86_64.tar.gz.
version=$(basename "$tarball" | sed -n 's/^gpscope-\(.*\)-linux-x86_64\.tar\.gz$/\1/p')
[ -n "$version" ] || { echo "FAILED: $tarball is not named gpscope-<version>-linux-x86_64.tar.gz"; exit 1; }
deb_version=$(dpkg-deb -f "$deb" Version)
[ "$deb_version" = "${version//-/+}-1" ] && ok "the .deb's version $deb_version matches the tarball's $version" ||
  bad "the .deb's version is '$deb_version', expected '${version//-/+}-1'"

# check_tree ROOT LABEL: every check on one unpacked tree.
check_tree() {
  local root=$1 label=$2 f t
  for f in bin/gpscope bin/gpscope-analyze bin/gpscope-monitor lib/libgpscope_inject.so \
           share/gpscope/systemd/gpscope-monitor.service \
           share/gpscope/kubernetes/gpscope-monitor-daemonset.yaml \
           share/gpscope/kubernetes/gpscope-job-example.yaml \
           share/gpscope/grafana/gpscope-monitor.json share/gpscope/docs/README.md \
           share/gpscope/docs/docs/running.md share/gpscope/docs/THIRD-PARTY-NOTICES; do
    [ -s "$root/$f" ] || { bad "$label: $f is missing"; return; }
  done
  ok "$label: the layout (bin/, lib/, share/gpscope/{systemd,kubernetes,grafana,docs})"

  # ldd: the tools and the collector only the C runtime (glibc 2.31 still
  # has libdl and libpthread apart from libc; libstdc++ is linked in).
  local c_runtime='linux-vdso\.so\.1|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|/lib64/ld-linux-x86-64\.so\.2'
  for t in gpscope gpscope-analyze gpscope-monitor; do
    local libs unexpected
    libs=$(ldd "$root/bin/$t" 2>&1) || { bad "$label: ldd $t failed: $libs"; continue; }
    unexpected=$(echo "$libs" | awk '{print $1}' | grep -vE "^($c_runtime)$")
    if [ -n "$unexpected" ]; then
      bad "$label: $t loads more than the C runtime: $(echo $unexpected)"
    else
      ok "$label: ldd $t: $(echo "$libs" | awk '{print $1}' | grep -v vdso | tr '\n' ' ')"
    fi
  done
  local lib=$root/lib/libgpscope_inject.so unexpected
  unexpected=$(ldd "$lib" | awk '{print $1}' | grep -vE "^($c_runtime)$")
  if [ -n "$unexpected" ]; then
    bad "$label: the collector loads more than the C runtime: $(echo $unexpected)"
  elif ! out=$(bash "$repo/scripts/check_exports.sh" "$lib"); then
    bad "$label: $out"
  else
    ok "$label: collector $out"
  fi

  # The glibc floor, symbol by symbol.
  local floor_out
  if floor_out=$(bash "$repo/tests/install/check_glibc_floor.sh" --floor "$glibc_floor" "$lib" \
                   "$root/bin/gpscope" "$root/bin/gpscope-analyze" "$root/bin/gpscope-monitor"); then
    ok "$label: glibc floor $glibc_floor: $(echo "$floor_out" | sed "s|$root/||; s/^ok: //" | tr '\n' ';' | sed 's/;$//; s/;/; /g')"
  else
    bad "$label: $(echo "$floor_out" | grep '^FAILED' | sed "s|$root/||g; s/^FAILED: //" | tr '\n' ' ')"
  fi

  # --version, bare environment.
  for t in gpscope gpscope-analyze gpscope-monitor; do
    local v
    v=$(cd "$work" && bare "$root/bin/$t" --version 2>&1)
    [ "$v" = "$t $version" ] && ok "$label: $t --version: $v" ||
      bad "$label: $t --version printed '$v', expected '$t $version'"
  done

  # summary and report of the bundled trace, bare environment, from a foreign cwd
  # for the report and the repository root for the summary (the golden's relative path).
  local trace=tests/data/torch_train_starved.gpscope
  if (cd "$repo" && bare "$root/bin/gpscope-analyze" summary "$trace" >"$work/summary.txt" 2>"$work/summary.err"); then
    if cmp -s "$work/summary.txt" "$repo/tests/golden/summary/torch_train_starved.txt"; then
      ok "$label: gpscope-analyze summary $trace equals the golden ($(grep -m1 '^FINDINGS' "$work/summary.txt"))"
    else
      bad "$label: gpscope-analyze summary differs from tests/golden/summary/torch_train_starved.txt:"
      diff "$repo/tests/golden/summary/torch_train_starved.txt" "$work/summary.txt" | head -20
    fi
  else
    bad "$label: gpscope-analyze summary failed: $(cat "$work/summary.err")"
  fi
  rm -f "$work/report.html"
  if (cd "$work" && bare "$root/bin/gpscope-analyze" report "$repo/$trace" -o report.html >/dev/null 2>"$work/report.err") &&
     grep -q '"schema":"gpscope.report/1"' "$work/report.html" &&
     grep -qF "gpscope-analyze $version" "$work/report.html"; then
    ok "$label: gpscope-analyze report wrote $(du -k "$work/report.html" | cut -f1) KiB, generator 'gpscope-analyze $version'"
  else
    bad "$label: gpscope-analyze report failed or wrote no report data naming $version: $(cat "$work/report.err")"
  fi

  # gpscope run: the collector from ../lib relative to the launcher; the exit code kept.
  local got rc
  got=$(cd "$work" && bare "$root/bin/gpscope" run --no-report --no-progress --output "$work/run" -- \
        /usr/bin/printenv CUDA_INJECTION64_PATH 2>"$work/run.err")
  rc=$?
  if [ $rc -eq 0 ] && [ -n "$got" ] && [ "$(realpath "$got")" = "$(realpath "$root/lib/libgpscope_inject.so")" ]; then
    ok "$label: gpscope run gave the command CUDA_INJECTION64_PATH=$got"
  else
    bad "$label: gpscope run: rc $rc, CUDA_INJECTION64_PATH='$got' (expected $root/lib/libgpscope_inject.so): $(cat "$work/run.err")"
  fi
  (cd "$work" && bare "$root/bin/gpscope" run --no-report --no-progress --output "$work/run" -- /bin/sh -c 'exit 7' 2>/dev/null)
  rc=$?
  [ $rc -eq 7 ] && ok "$label: gpscope run kept the command's exit code (7)" ||
    bad "$label: gpscope run exited $rc for a command that exited 7"

  # gpscope-monitor on replayed readings; the unpacked analyzer reads its file.
  rm -rf "$work/monitor"
  if (cd "$work" && bare "$root/bin/gpscope-monitor" --replay "$repo/tests/tools/monitor/data/h200x2.replay" \
        --interval-ms 100 --duration 1 --listen none --output "$work/monitor" 2>"$work/monitor.err") &&
     bare "$root/bin/gpscope-analyze" info "$work"/monitor/*.gpscope >"$work/monitor-info.txt" 2>&1 &&
     grep -qF "$version" "$work/monitor-info.txt"; then
    ok "$label: gpscope-monitor wrote $(ls "$work/monitor" | wc -l) file(s); gpscope-analyze info reads them, version $version"
  else
    bad "$label: gpscope-monitor/info: $(cat "$work/monitor.err" "$work/monitor-info.txt" 2>/dev/null | tail -5)"
  fi
}

# The tarball, unpacked in a fresh directory.
mkdir -p "$work/tgz"
tar -xzf "$tarball" -C "$work/tgz"
top=$(ls "$work/tgz")
[ "$top" = "gpscope-$version-linux-x86_64" ] && ok "tarball: one top-level directory, $top" ||
  bad "tarball: top-level entries '$top', expected gpscope-$version-linux-x86_64"
check_tree "$work/tgz/$top" tarball

# The .deb, extracted into a scratch root.
mkdir -p "$work/deb"
dpkg-deb -x "$deb" "$work/deb"
check_tree "$work/deb/opt/gpscope" deb
strays=$(cd "$work/deb" && find . -type f | grep -vE '^\./(opt/gpscope/|usr/share/doc/gpscope/)')
[ -z "$strays" ] && ok "deb: files only under /opt/gpscope and /usr/share/doc/gpscope" ||
  bad "deb: files outside /opt/gpscope and /usr/share/doc/gpscope: $strays"
# Every /opt/gpscope path that the docs, README and packaging files name exists in the package.
paths=$(cd "$repo" && grep -rhoE '/opt/gpscope[A-Za-z0-9_./-]*' README.md docs/*.md packaging/ |
        sed 's/[.]$//' | sort -u)
missing=""
for p in $paths; do [ -e "$work/deb$p" ] || missing="$missing $p"; done
[ -z "$missing" ] && ok "deb: all $(echo "$paths" | wc -l) /opt/gpscope paths named in README.md, docs/ and packaging/ exist" ||
  bad "deb: paths the docs name that the package lacks:$missing"
[ -s "$work/deb/usr/share/doc/gpscope/copyright" ] && ok "deb: /usr/share/doc/gpscope/copyright" ||
  bad "deb: no /usr/share/doc/gpscope/copyright"
depends=$(dpkg-deb -f "$deb" Depends)
libc_min=$(echo "$depends" | sed -n 's/^libc6 (>= \([0-9.]*\))$/\1/p')
if [ -n "$libc_min" ] && [ "$(printf '%s\n%s\n' "$libc_min" "$glibc_floor" | sort -V | tail -1)" = "$glibc_floor" ]; then
  ok "deb: Depends: $depends (installs where glibc $glibc_floor is)"
else
  bad "deb: Depends is '$depends' (expected libc6 (>= X) alone, X at most $glibc_floor)"
fi

# lintian: every tag must be expected (packaging/debian/lintian-expected says why).
if command -v lintian >/dev/null; then
  lintian --tag-display-limit 0 "$deb" >"$work/lintian.txt" 2>&1
  expected=$(grep -vE '^\s*(#|$)' "$repo/packaging/debian/lintian-expected" | awk '{print $1}')
  unexpected=$(awk '/^[EWIP]: / {print $3}' "$work/lintian.txt" | sort -u | grep -vxF -f <(echo "$expected") || true)
  tags=$(awk '/^[EWIP]: / {print $1 $3}' "$work/lintian.txt" | sort | uniq -c | awk '{print $2 "x" $1}' | tr '\n' ' ')
  if [ -z "$unexpected" ]; then
    ok "deb: lintian: only the expected tags (${tags:-none})"
  else
    bad "deb: lintian reports tags not in packaging/debian/lintian-expected: $(echo $unexpected)"
    cat "$work/lintian.txt"
  fi
else
  bad "deb: lintian is not installed (scripts/setup.sh installs it)"
fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
