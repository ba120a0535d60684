#!/usr/bin/env bash
# The main job on a bundled real trace (recorded on an H200 from a PyTorch
# training loop whose data loader is slow): builds gpscope-analyze, then
# writes the diagnosis to out/ (text, JSON and a self-contained HTML report).
# No GPU needed.
#   bash scripts/demo.sh [TRACE...]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
bash scripts/setup.sh
cmake --preset dev >/dev/null  # build/, RelWithDebInfo (CMakePresets.json)
cmake --build build -j"$(nproc)" --target gpscope-analyze
traces=("$@")
[ ${#traces[@]} -gt 0 ] || traces=(tests/data/torch_train_starved.gpscope)
mkdir -p out
build/tools/gpscope-analyze info "${traces[@]}" > out/info.txt
build/tools/gpscope-analyze summary "${traces[@]}" | tee out/summary.txt
build/tools/gpscope-analyze summary --format json "${traces[@]}" > out/summary.json
build/tools/gpscope-analyze report "${traces[@]}" -o out/report.html
echo
echo "wrote out/summary.txt, out/summary.json, out/info.txt and out/report.html (open it in a browser)"
