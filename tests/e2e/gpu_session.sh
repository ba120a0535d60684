#!/usr/bin/env bash
# tests/e2e/gpu_session.sh: several GPU suites in one device call, each under
# its own time limit, everything they write packed into one archive (the
# device tool brings back only a few files per call).
#
#   gpu_session.sh OUT_DIR SUITE[:SECONDS]...
#
# Runs from the repository root with scripts/gpu_bundle.sh's .carry/ beside
# it. Suites:
#   e2e        tests/e2e/run_gpu_tests.sh (collector cases 1-12)
#   launcher   tests/e2e/launcher_gpu.sh (gpscope run / window / attach)
#   monitor    tests/e2e/monitor_gpu.sh (gpscope-monitor at 1 s and 100 ms)
#   package    tests/e2e/package_gpu.sh (the release tarball, unpacked fresh:
#              its collector on a PyTorch loop, its gpscope run, its monitor)
#   yield      yield mode + torch.profiler + the sampler forced on (one run
#              per GPSCOPE_METRICS value in YIELD_METRICS, default "1"): if
#              the app still runs after 35 s, native stacks of every thread
#              (eu-stack, carried in .carry/tools) and /proc wchan
#   rules      tests/e2e/rules_gpu.sh (each finding from a real workload;
#              RULES_ONLY="a b" runs only those scenarios)
#   corpus     bench/corpus/run_corpus.py: the real-program corpus (issue 21),
#              every workload traced, its budget the suite's limit - 30 s;
#              CORPUS_ONLY="a b" runs only those workloads. Its archives
#              (corpus.tar.gz, corpus-N.tar.gz when the traces need more
#              room) go to OUT_DIR beside session.tar.gz; read them with
#              bench/corpus/compare.py
#   ddp        tests/e2e/ddp_gpu.sh (torchrun + NCCL DDP on every GPU: one
#              per-node file, ranks aligned, straggler; DDP_VARIANTS="a b"
#              runs only those variants)
#   overhead_train / overhead_cuda   bench/overhead.py suites
#   overhead_ab  bench/overhead_ab.py: tracing vs standby in one training process
#   overhead_ab_fast  the same, windows through the control socket, 100 pairs of 1 s
#   overhead_parts  the launch-bound loop with gpscope minus one part at a time
#   relay      bench/overhead_baton.py (issue 24's table, every configuration side by side):
#              RELAY_SUITES (default cuda,torch_tiny,torch_train; the training loop the
#              issue's 8 Linear 2048), nsys when the image has it, RELAY_ARGS appended (e.g.
#              "--env-variant no-sync:GPSCOPE_SYNC=0 --env-variant duty:GPSCOPE_DUTY=1s/15s");
#              each suite under its share of the limit, cut runs summarized again
#   sigterm_loop / threads64 / jax_drops / profiler_refusal
#                tests/e2e/hardening_gpu.sh (issue 17): SIGTERM to loops that never
#                sleep (PyTorch and CUDA C++, 5 runs each), 64 threads on their own
#                streams and a JAX training loop without drops, torch.profiler's refused
#                cuptiSubscribe in the trace (HARDENING_RUNS overrides the runs)
#   stacks       tests/e2e/stacks_gpu.sh (issue 20): call-site stacks naming the right
#                file:line in five workloads (STACKS_ONLY="a b" runs only those cases)
#   overhead_stacks  bench/overhead.py, the launch-bound CUDA loop and the training loop
#                with call-site stacks on (gpscope) and off (stacks-off: GPSCOPE_STACKS=0),
#                interleaved rounds; then one PASS/FAIL line per loop: on/off medians
#                within 2%; stacks-sync-only (GPSCOPE_DIAG_STACK_NO_LAUNCH=1 with the diagnosis
#                build libgpscope_inject_diag.so: no launch callbacks) shows their share
#                (OVERHEAD_ARGS overrides --rounds 4 --steps 100; STACKS_SUITES and
#                STACKS_CONFIGS the suites and configurations)
#   overhead_compare  bench/overhead.py, launch-bound CUDA loop and PyTorch tiny ops, with
#                the collector of 54d91a1 (.carry/bin/libgpscope_inject_base.so) as
#                configuration "base" beside this one, interleaved
#   overhead_nsys  bench/overhead.py with nsys (`nsys profile -t cuda`, found under
#                /opt/nvidia/nsight-compute or on PATH), the floor and torch.profiler, 10
#                interleaved rounds (NSYS_SUITES, NSYS_CONFIGS, OVERHEAD_ARGS override)
# Writes OUT_DIR/session.log (one line per suite: rc and seconds) and
# OUT_DIR/session.tar.gz (all logs and small traces), plus the corpus
# suite's own archives.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd); shift
carry=$repo/.carry
export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work=$(mktemp -d /tmp/gpscope-session.XXXXXX)
log=$out/session.log
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)" | tee -a "$log"
echo "== commit $(cat "$repo/.carry/COMMIT" 2>/dev/null || git -C "$repo" rev-parse --short HEAD 2>/dev/null)" | tee -a "$log"

# One yield-mode run with GPSCOPE_METRICS=$2 into $1: verdict.txt, and on a
# hang threads.txt and stacks.txt.
yield_stacks() {
  local d=$1/trace
  mkdir -p "$d"
  GPSCOPE_CUPTI_MODE=yield GPSCOPE_METRICS=$2 GPSCOPE_OUTPUT=$d CUDA_INJECTION64_PATH=$carry/bin/libgpscope_inject.so \
    python3 -X faulthandler "$repo/bench/workloads/torch_train.py" --steps 50 --profiler >"$1/app.out" 2>"$1/app.err" &
  local app=$! i
  for i in $(seq 1 70); do kill -0 "$app" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$app" 2>/dev/null; then
    echo "GPSCOPE_METRICS=$2: still running after 35 s: hung" | tee "$1/verdict.txt"
    for t in /proc/$app/task/*; do
      echo "$(basename "$t") $(cat "$t/comm") wchan=$(cat "$t/wchan" 2>/dev/null) syscall=$(cut -d' ' -f1 "$t/syscall" 2>/dev/null)"
    done >"$1/threads.txt"
    LD_LIBRARY_PATH=$carry/tools "$carry/tools/eu-stack" -p "$app" -s -m >"$1/stacks.txt" 2>&1 ||
      LD_LIBRARY_PATH=$carry/tools "$carry/tools/eu-stack" -p "$app" >"$1/stacks.txt" 2>&1
    kill -ABRT "$app"; sleep 2; kill -KILL "$app" 2>/dev/null
  else
    wait "$app"; echo "GPSCOPE_METRICS=$2: finished, rc $?" | tee "$1/verdict.txt"
  fi
  wait "$app" 2>/dev/null
  return 0
}

for spec in "$@"; do
  name=${spec%%:*}; limit=${spec#*:}; [ "$limit" = "$spec" ] && limit=300
  d=$work/$name; mkdir -p "$d"
  t0=$(date +%s)
  case $name in
    e2e) timeout -k 10 "$limit" bash "$repo/tests/e2e/run_gpu_tests.sh" "$carry/bin" "$d" >"$d/stdout.txt" 2>&1 ;;
    launcher) timeout -k 10 "$limit" bash "$repo/tests/e2e/launcher_gpu.sh" "$carry/bin" "$d" >"$d/stdout.txt" 2>&1 ;;
    monitor) timeout -k 10 "$limit" bash "$repo/tests/e2e/monitor_gpu.sh" "$carry/bin" "$d/run" >"$d/stdout.txt" 2>&1 ;;
    package) timeout -k 10 "$limit" bash "$repo/tests/e2e/package_gpu.sh" "$carry/gpscope-linux-x86_64.tar.gz" "$d" >"$d/stdout.txt" 2>&1 ;;
    ddp) timeout -k 10 "$limit" bash "$repo/tests/e2e/ddp_gpu.sh" "$carry/bin" "$d" ${DDP_VARIANTS:+"$DDP_VARIANTS"} >"$d/stdout.txt" 2>&1 ;;
    rules) timeout -k 10 "$limit" bash "$repo/tests/e2e/rules_gpu.sh" "$carry/bin" "$d" ${RULES_ONLY:+"$RULES_ONLY"} >"$d/stdout.txt" 2>&1 ;;
    corpus)  # the traces travel in the corpus archives, not in session.tar.gz
      timeout -k 10 "$limit" python3 "$repo/bench/corpus/run_corpus.py" --bin "$carry/bin" --out "$d" \
        --budget-s $((limit > 60 ? limit - 30 : 30)) ${CORPUS_ONLY:+--only "$CORPUS_ONLY"} >"$d/stdout.txt" 2>&1
      r=$?; mv "$d"/corpus*.tar.gz "$out/" 2>/dev/null; (exit $r) ;;
    windowprobe)  # a 3 s window after WINDOW_DELAY s (default 4) of a torch_train run of
      # WINDOW_STEPS steps (default 400): kinds switched on at the window (the default),
      # kernels gated on from the start (GPSCOPE_DIAG_GATE_KERNELS=1, read by the diagnosis
      # build only), no window; per variant the kernels and the launch calls in the trace
      for v in ${WINDOW_VARIANTS:-switched gated nowindow}; do
        mkdir -p "$d/$v"
        w=(GPSCOPE_CAPTURE_DELAY_S=${WINDOW_DELAY:-4} GPSCOPE_CAPTURE_DURATION_S=3)
        lib=$carry/bin/libgpscope_inject.so
        case $v in
          switched) e=("${w[@]}") ;;
          gated) e=("${w[@]}" GPSCOPE_DIAG_GATE_KERNELS=1); lib=$carry/bin/libgpscope_inject_diag.so ;;
          nowindow) e=() ;;
        esac
        env ${e[@]+"${e[@]}"} GPSCOPE_LOG_LEVEL=info GPSCOPE_OUTPUT="$d/$v" \
          CUDA_INJECTION64_PATH=$lib timeout -k 5 90 \
          python3 "$repo/bench/workloads/torch_train.py" --steps "${WINDOW_STEPS:-400}" --sleep-ms 15 \
          >"$d/$v/app.out" 2>"$d/$v/app.err"
        rc=$?
        "$carry/bin/gpscope-analyze" dump "$d/$v"/*.gpscope >"$d/$v/dump.jsonl" 2>/dev/null
        echo "$v rc=$rc kernels=$(grep -c '"type":"kernel"' "$d/$v/dump.jsonl")" \
          "launch calls=$(grep '"type":"api"' "$d/$v/dump.jsonl" | grep -c LaunchKernel)"
        rm -f "$d/$v/dump.jsonl"
        grep '^gpscope' "$d/$v/app.err" | sed "s/^/  $v: /"
      done >"$d/stdout.txt" 2>&1 ;;
    yield)  # YIELD_METRICS: the GPSCOPE_METRICS values to try, one run each
      for m in ${YIELD_METRICS:-1}; do
        mkdir -p "$d/$m"; yield_stacks "$d/$m" "$m"
      done >"$d/stdout.txt" 2>&1 ;;
    overhead_ab|overhead_ab_fast)  # tracing vs standby inside one torch_train process
      # (bench/overhead_ab.py). overhead_ab: `gpscope attach` windows, 12 pairs of 4 s blocks
      # (~2.5 min); overhead_ab_fast: windows through the control socket, 100 pairs of 1 s
      # (~5 min). AB_ARGS overrides the block plan.
      via=attach plan="--blocks 12 --block-s 4"
      [ "$name" = overhead_ab_fast ] && via=socket plan="--blocks 100 --block-s 1 --margin-s 0.2"
      timeout -k 10 "$limit" python3 "$repo/bench/overhead_ab.py" --inject "$carry/bin/libgpscope_inject.so" \
        --gpscope "$carry/bin/gpscope" --via "$via" ${AB_ARGS:-$plan} --keep "$d/run" --out "$d/ab.json" \
        -- python3 "$repo/bench/workloads/torch_train.py" --batch 16384 --hidden 8192 >"$d/stdout.txt" 2>&1 ;;
    overhead_train|overhead_cuda|overhead_tiny)
      suite=${name#overhead_}; [ "$suite" = train ] && suite=torch_train; [ "$suite" = tiny ] && suite=torch_tiny
      timeout -k 10 "$limit" python3 "$repo/bench/overhead.py" --inject "$carry/bin/libgpscope_inject.so" \
        --floor "$carry/bin/libgpscope_cupti_floor.so" --tiny "$carry/bin/tiny_kernels" --suites "$suite" \
        --no-profiler ${OVERHEAD_ARGS:-} --out "$d/overhead.json" >"$d/stdout.txt" 2>&1 ;;
    overhead_parts)  # the launch-bound loop with gpscope minus one part at a time: which
      # part of the per-launch cost is whose (OVERHEAD_ARGS adds e.g. --rounds 15); the
      # GPSCOPE_DIAG_OFF variants run the diagnosis build (diag-build: it alone, as a control)
      dg=CUDA_INJECTION64_PATH=$carry/bin/libgpscope_inject_diag.so
      timeout -k 10 "$limit" python3 "$repo/bench/overhead.py" --inject "$carry/bin/libgpscope_inject.so" \
        --floor "$carry/bin/libgpscope_cupti_floor.so" --tiny "$carry/bin/tiny_kernels" --suites cuda \
        --no-profiler --env-variant no-api:GPSCOPE_API=0 --env-variant no-nvtx:GPSCOPE_NVTX=0 \
        --env-variant "diag-build:$dg" --env-variant "no-sync:$dg,GPSCOPE_DIAG_OFF=sync" \
        --env-variant "no-overhead:$dg,GPSCOPE_DIAG_OFF=overhead" \
        --env-variant "no-copies:$dg,GPSCOPE_DIAG_OFF=memcpy,memset" --env-variant no-metrics:GPSCOPE_METRICS=0 \
        --env-variant standby-no-metrics:GPSCOPE_STANDBY=1,GPSCOPE_METRICS=0 \
        ${OVERHEAD_ARGS:-} --out "$d/overhead.json" >"$d/stdout.txt" 2>&1 ;;
    relay)  # issue 24's overhead table by the relay; a suite cut by its limit keeps its
      # finished generations (--resummarize below)
      nsys=$(ls /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys 2>/dev/null | head -1)
      suites=${RELAY_SUITES:-cuda,torch_tiny,torch_train}
      n=$(echo "$suites" | tr ',' '\n' | grep -c .)
      mkdir -p "$d/tmp"
      for suite in ${suites//,/ }; do
        TMPDIR="$d/tmp" timeout -k 10 $((limit / n)) python3 "$repo/bench/overhead_baton.py" \
          --inject "$carry/bin/libgpscope_inject.so" --floor "$carry/bin/libgpscope_cupti_floor.so" \
          --tiny "$carry/bin/tiny_kernels" ${nsys:+--nsys "$nsys"} --suites "$suite" \
          --train-args "--layers 8 --hidden 2048 --batch 4096" --gen-seconds 30 ${RELAY_ARGS:-} \
          --out "$d/$suite.json" >"$d/$suite.txt" 2>&1 ||
          python3 "$repo/bench/overhead_baton.py" --resummarize "$d/tmp" >>"$d/$suite.txt" 2>&1
      done
      find "$d/tmp" -type f \( -name "*.gpscope" -o -name "*.qdstrm" -o -name "*.nsys-rep" \) -delete ;;
    stacks)
      timeout -k 10 "$limit" bash "$repo/tests/e2e/stacks_gpu.sh" "$carry/bin" "$d" \
        ${STACKS_ONLY:-} >"$d/stdout.txt" 2>&1 ;;
    overhead_stacks)  # call-site stacks on vs off (issue 20: within 2%)
      dg=CUDA_INJECTION64_PATH=$carry/bin/libgpscope_inject_diag.so  # reads GPSCOPE_DIAG_*
      timeout -k 10 "$limit" python3 "$repo/bench/overhead.py" --inject "$carry/bin/libgpscope_inject.so" \
        --floor "$carry/bin/libgpscope_cupti_floor.so" --tiny "$carry/bin/tiny_kernels" \
        --suites "${STACKS_SUITES:-cuda,torch_train}" --no-profiler --env-variant stacks-off:GPSCOPE_STACKS=0 \
        --env-variant "stacks-sync-only:$dg,GPSCOPE_DIAG_STACK_NO_LAUNCH=1" \
        --only-configs "${STACKS_CONFIGS:-baseline,gpscope,stacks-off,stacks-sync-only}" \
        ${OVERHEAD_ARGS:---rounds 4 --steps 100} \
        --out "$d/overhead.json" >"$d/stdout.txt" 2>&1 &&
      python3 - "$d/overhead.json" >>"$d/stdout.txt" 2>&1 <<'PY'
import json, sys
fail = 0
for name, r in json.load(open(sys.argv[1])).items():
    on, off = r["median"]["gpscope"], r["median"]["stacks-off"]
    paired = [a / b for a, b in zip(r["samples"]["gpscope"], r["samples"]["stacks-off"])]
    paired.sort()
    ratio = paired[len(paired) // 2]
    ok = on / off <= 1.02
    fail += not ok
    print("%s %s: stacks on %.4f, off %.4f, on/off %.4f (paired median %.4f, paired range "
          "%.4f-%.4f over %d rounds), sync-only %s, baseline %.4f (0: not run); budget <= 1.02"
          % ("PASS" if ok else "FAIL", name, on, off, on / off, ratio, paired[0], paired[-1],
             len(paired), "%.4f" % r["median"]["stacks-sync-only"]
             if "stacks-sync-only" in r["median"] else "not run", r["median"].get("baseline", 0)))
sys.exit(1 if fail else 0)
PY
      ;;
    sigterm_loop|threads64|jax_drops|profiler_refusal)
      timeout -k 10 "$limit" bash "$repo/tests/e2e/hardening_gpu.sh" "$carry/bin" "$d" "$name" \
        ${HARDENING_RUNS:-} >"$d/stdout.txt" 2>&1 ;;
    overhead_compare)  # this collector vs the one of 54d91a1, side by side (issue 17)
      timeout -k 10 "$limit" python3 "$repo/bench/overhead.py" --inject "$carry/bin/libgpscope_inject.so" \
        --floor "$carry/bin/libgpscope_cupti_floor.so" --tiny "$carry/bin/tiny_kernels" \
        --compare "base=$carry/bin/libgpscope_inject_base.so" --suites "${COMPARE_SUITES:-cuda,torch_tiny}" \
        --no-profiler ${OVERHEAD_ARGS:---rounds 7} --out "$d/overhead.json" >"$d/stdout.txt" 2>&1 ;;
    overhead_nsys)  # gpscope vs nsys -t cuda vs the CUPTI floor vs torch.profiler (issue 24)
      nsys=$(ls /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys 2>/dev/null | head -1)
      [ -x "$nsys" ] || nsys=$(command -v nsys)
      timeout -k 10 "$limit" python3 "$repo/bench/overhead.py" --inject "$carry/bin/libgpscope_inject.so" \
        --floor "$carry/bin/libgpscope_cupti_floor.so" --tiny "$carry/bin/tiny_kernels" --nsys "$nsys" \
        --suites "${NSYS_SUITES:-cuda,torch_tiny,torch_train}" \
        --only-configs "${NSYS_CONFIGS:-baseline,floor,gpscope,nsys,torch.profiler}" \
        ${OVERHEAD_ARGS:---rounds 10} --out "$d/overhead.json" >"$d/stdout.txt" 2>&1 ;;
    *) echo "unknown suite $name" >"$d/stdout.txt"; false ;;
  esac
  rc=$?
  echo "suite $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a "$log"
  tail -40 "$d/stdout.txt" | sed "s/^/  $name| /" >>"$log"
done
# Traces above 8 MiB stay behind; their summaries are in the logs.
find "$work" -type f -size +8M -delete
tar -C "$work" -czf "$out/session.tar.gz" . && rm -rf "$work"
ls -la "$out"
