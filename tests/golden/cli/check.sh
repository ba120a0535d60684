#!/usr/bin/env bash
# tests/golden/cli/check.sh: pins what every gpscope-analyze command prints
# for the recorded traces in tests/data, beside the summary goldens
# (tests/golden/summary). A refactor of the offline pipeline must keep these
# byte-identical; a commit that changes them on purpose says why.
#
#   check.sh ANALYZE_BIN            compare (exit 1 if any output differs)
#   check.sh ANALYZE_BIN --update   rewrite the goldens, then review `git diff`
#
# Per trace T (tests/data/T.gpscope), run from the repository root (paths in
# the outputs are relative to it):
#   T/info.txt, T/metrics.txt, T/metrics.json    `info`, `metrics` (text, JSON)
#   T/report.json.zst        `report --data-only --no-compress`
#   T/export.json.zst, T/dump.jsonl.zst          `export`, `dump`, whole, for
#                            the traces in $small only (they are megabytes)
#   T/digests.txt            sha256 and byte count of `export` and `dump`
#   T/csv_<table>.csv        `summary --format csv --table <table>`, each table
#   T/rules.txt (once, at the top: rules/list.txt)  `summary --rules`
#   diff/<base>-<new>.{txt,json}  `diff` of pairs of recorded traces
#   diff/<T>-rank0-rank1.{txt,json}  `diff --rank 0 --rank 1` of a node file
# .zst goldens are compared by content (zstd -dc), so a zstd version that
# compresses differently changes nothing. The analyzer's own version string
# is replaced by @VERSION@ (the collector version a trace recorded is data
# and stays), so a new version or git description touches no golden.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
golden=$root/tests/golden/cli
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
update=0
[ "${2:-}" = "--update" ] && update=1
cd "$root"
small="torch_train h200x2_ddp_straggler"

version=$("$bin" --version 2>/dev/null | head -1 | awk '{print $NF}')
[ -n "$version" ] || { echo "FAIL: '$bin --version' printed nothing"; exit 1; }
normalize() { sed -e "s/gpscope-analyze ${version//./\\.}/gpscope-analyze @VERSION@/g"; }
# run OUT ARGS...: the command's stdout, then its stderr and a non-zero exit
# status (a failure on a recorded trace is part of the output), normalized.
run() {
  local out=$1 rc=0; shift
  "$bin" "$@" >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
  { cat "$tmp/stdout"
    if [ -s "$tmp/stderr" ]; then echo "--- stderr"; cat "$tmp/stderr"; fi
    [ $rc = 0 ] || echo "--- exit status $rc"
  } | normalize >"$out"
}

# pretty FILE: a command's JSON output indented (what follows it, its
# stderr and exit status, as it is).
pretty() {
  python3 -c 'import json,sys
t=open(sys.argv[1]).read(); body,sep,rest=t.partition("\n--- ")
try: print(json.dumps(json.loads(body),indent=1,sort_keys=False))
except ValueError: print(body)
print(sep+rest,end="")' "$1"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
# check NAME FILE: this run's FILE against golden NAME (NAME.zst: compressed).
check() {
  local name=$1 got=$2 want=$golden/$1
  if [ $update = 1 ]; then
    mkdir -p "$(dirname "$want")"
    case $name in
      *.zst) zstd -q -19 -T0 --no-progress -f -o "$want" "$got" ;;
      *) cp "$got" "$want" ;;
    esac
    return 0
  fi
  if [ ! -f "$want" ]; then
    echo "FAIL $name: no golden"; failed=1; return 0
  fi
  local plain=$want
  case $name in
    *.zst) plain=$tmp/want; zstd -q -dc "$want" >"$plain" ;;
  esac
  if ! cmp -s "$plain" "$got"; then
    echo "FAIL $name differs (< golden, > now):"
    case $name in
      *.json|*.json.zst)  # one-line JSON: compare it pretty-printed
        diff <(pretty "$plain") <(pretty "$got") ;;
      *) diff "$plain" "$got" ;;
    esac | head -24 | cut -c1-200 || true
    failed=1
  fi
}

for trace in tests/data/*.gpscope; do
  t=$(basename "$trace" .gpscope)
  d=$tmp/$t; mkdir -p "$d"
  run "$d/info.txt" info "$trace"
  run "$d/metrics.txt" metrics "$trace"
  run "$d/metrics.json" metrics --format json "$trace"
  # (-o a file: writing through /dev/stdout shares the offset with the shell)
  run "$d/report.out" report --data-only --no-compress -o "$tmp/report.json" "$trace"
  # (its size on stderr moves with the version string's length)
  { cat "$tmp/report.json"; echo
    sed -e "s#$tmp/#@TMP@/#g" -e 's/^wrote \(.*\) ([0-9.]* [KMG]\{0,1\}i\{0,1\}B)/wrote \1/' "$d/report.out"
  } | normalize >"$d/report.json"
  run "$d/export.json" export "$trace"
  run "$d/dump.jsonl" dump "$trace"
  for f in export.json dump.jsonl; do
    echo "${f%%.*} $(sha256sum <"$d/$f" | cut -d' ' -f1) $(wc -c <"$d/$f") bytes"
  done >"$d/digests.txt"
  for f in info.txt metrics.txt metrics.json digests.txt; do check "$t/$f" "$d/$f"; done
  for table in kernels windows minutes copies steps ranks; do
    run "$d/csv_$table.csv" summary --format csv --table $table "$trace"
    check "$t/csv_$table.csv" "$d/csv_$table.csv"
  done
  check "$t/report.json.zst" "$d/report.json"
  case " $small " in
    *" $t "*) check "$t/export.json.zst" "$d/export.json"
              check "$t/dump.jsonl.zst" "$d/dump.jsonl" ;;
  esac
  rm -f "$d"/*.json "$d"/*.jsonl
done
mkdir -p "$tmp/diff"
run "$tmp/rules.txt" summary --rules
check "rules/list.txt" "$tmp/rules.txt"
for pair in torch_train:torch_train_sync torch_train:torch_train_starved \
            h200x2_ddp_balanced:h200x2_ddp_straggler torch_train:torch_train; do
  b=${pair%%:*} n=${pair#*:}
  for fmt in text json; do
    ext=txt; [ $fmt = json ] && ext=json
    run "$tmp/diff/$b-$n.$ext" diff --format $fmt tests/data/$b.gpscope tests/data/$n.gpscope
    check "diff/$b-$n.$ext" "$tmp/diff/$b-$n.$ext"
  done
done
# Two ranks of one node file (diff --rank A --rank B FILE).
for fmt in text json; do
  ext=txt; [ $fmt = json ] && ext=json
  run "$tmp/diff/h200x2_ddp_straggler-rank0-rank1.$ext" diff --format $fmt --rank 0 --rank 1 \
      tests/data/h200x2_ddp_straggler.gpscope
  check "diff/h200x2_ddp_straggler-rank0-rank1.$ext" "$tmp/diff/h200x2_ddp_straggler-rank0-rank1.$ext"
done
if [ $update = 1 ]; then
  git -C "$root" status --short -- tests/golden/cli || true
  exit 0
fi
if [ $failed = 1 ]; then
  echo "If the change is intended, run tests/golden/cli/check.sh $1 --update and review the diff."
  exit 1
fi
echo "cli goldens: $(ls tests/data/*.gpscope | wc -l) traces, all outputs match"
