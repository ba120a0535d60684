"""In-process A/B overhead of tracing: one long run of a workload under gpscope in standby,
`gpscope attach` windows alternating with untraced blocks of the same length, and each
step's time compared between the two inside the one process.

Why: between separate runs (bench/overhead.py) the H200's step time moves +-5% (it sits at
its power cap, clocks follow temperature), so a 1% cost cannot be resolved with a few dozen
runs (bench/RESULTS.md, session 4). Here a traced block and its untraced neighbour are
seconds apart in the same process on the same warm GPU: the drift cancels pair by pair.

  python3 bench/overhead_ab.py --inject build/inject/libgpscope_inject.so \
      --gpscope build/tools/gpscope/gpscope --blocks 10 --block-s 4 --out $OUT/ab.json \
      -- python3 bench/workloads/torch_train.py --batch 16384 --hidden 8192

The workload must accept `--step-log PATH` (one "start_ns end_ns" line per step, on
CLOCK_MONOTONIC) and `--seconds S` (run that long); the harness appends both. It is started
with CUDA_INJECTION64_PATH and GPSCOPE_STANDBY=1 (tracing off, nothing per kernel: session
3), waits --warmup-s, then runs --blocks pairs of (traced, untraced) blocks, alternating
which comes first. A traced block is `gpscope attach --pid P --duration BLOCK_S
--no-report`; steps wholly inside [block start + margin, block end - margin] count (the
window's switch-on and its end-of-window flush stay outside). Per pair: median traced step /
median untraced step; the result is the median and mean of those ratios, with the standard
error of the mean. What it measures: full tracing against gpscope's standby, so gpscope's
cost against no gpscope is this plus standby's (bench/overhead.py measures that one).

With --via socket a traced block is a `start BLOCK_MS` request on the process's control
socket instead (what `gpscope attach` sends, without its own process start and the window's
copy out of the trace): blocks of 1 s then fit, so there are ~4x more pairs per minute and
each pair's two blocks are 1 s apart, not 4 s, where the step time drifts less.

With --toggle stacks the whole run is traced (no standby) and the two blocks of a pair are
call-site stacks on and off, switched with `stacks on` / `stacks off` on the control socket
(the writer thread switches CUPTI's API callbacks and the captures): "traced" then reads
"stacks on", "untraced" "stacks off", and the ratio is the stacks' own cost.

Prints a table and writes JSON (--out). Exit status 0 when every block had steps.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def steps_in(log, lo_ns, hi_ns):
    """Durations (ns) of the steps wholly inside [lo_ns, hi_ns]."""
    return [e - s for s, e in log if s >= lo_ns and e <= hi_ns]


def trimmed_mean(xs, cut=0.1):
    """Mean of xs without the lowest and highest `cut` share."""
    xs = sorted(xs)
    k = int(len(xs) * cut)
    return statistics.fmean(xs[k:len(xs) - k])


def read_log(path):
    out = []
    try:
        with open(path) as fh:
            for line in fh:
                parts = line.split()
                if len(parts) == 2:
                    out.append((int(parts[0]), int(parts[1])))
    except OSError:
        pass
    return out


def control(sock_path, line, timeout_s=5.0):
    """One request on the collector's control socket (docs/running.md): the reply line."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
        c.settimeout(timeout_s)
        c.connect(sock_path)
        c.sendall((line + "\n").encode())
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = c.recv(4096)
            if not chunk:
                break
            reply += chunk
    return reply.decode().strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inject", required=True, help="libgpscope_inject.so")
    ap.add_argument("--gpscope", required=True, help="the gpscope launcher (for attach)")
    ap.add_argument("--blocks", type=int, default=10, help="(traced, untraced) pairs")
    ap.add_argument("--block-s", type=float, default=4.0)
    ap.add_argument("--margin-s", type=float, default=0.5)
    ap.add_argument("--warmup-s", type=float, default=20.0)
    ap.add_argument("--min-steps", type=int, default=5, help="per block, else it fails")
    ap.add_argument("--via", choices=["attach", "socket"], default="attach",
                    help="open a window with `gpscope attach` (the production path, ~0.5 s of "
                         "its own per window) or a `start` request on the control socket "
                         "(short blocks: more pairs, less drift within a pair)")
    ap.add_argument("--toggle", choices=["tracing", "stacks"], default="tracing",
                    help="what a pair compares: tracing vs standby (default), or call-site "
                         "stacks on vs off inside a traced run (control socket)")
    ap.add_argument("--out", default="")
    ap.add_argument("--keep", default="", help="keep the traces and the step log here")
    ap.add_argument("--budget-s", type=float, default=0.0,
                    help="start no pair after this many seconds from the start and report the "
                         "pairs done (0: all --blocks): an outer time limit then cuts nothing")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        ap.error("no workload command after --")

    work = a.keep or tempfile.mkdtemp(prefix="gpscope-ab.")
    os.makedirs(work, exist_ok=True)
    step_log = os.path.join(work, "steps.txt")
    # Enough for the warm-up, every block and the attaches' own seconds.
    total_s = a.warmup_s + a.blocks * 2 * (a.block_s + 1.5) + 30
    env = dict(os.environ)
    ctl_dir = os.path.join(work, "ctl")  # the collector creates it, mode 0700
    env.update(CUDA_INJECTION64_PATH=os.path.abspath(a.inject),
               GPSCOPE_STANDBY="0" if a.toggle == "stacks" else "1",
               GPSCOPE_OUTPUT=os.path.join(work, "trace"), GPSCOPE_CONTROL_DIR=ctl_dir)
    if a.toggle == "stacks":
        env.setdefault("GPSCOPE_STACKS", "1")
    app = subprocess.Popen(cmd + ["--step-log", step_log, "--seconds", f"{total_s:.0f}"], env=env,
                           stdout=open(os.path.join(work, "app.out"), "w"),
                           stderr=open(os.path.join(work, "app.err"), "w"))
    t_start = time.monotonic()
    while time.monotonic() - t_start < a.warmup_s or len(read_log(step_log)) < 20:
        if app.poll() is not None:
            sys.exit(f"the workload ended during the warm-up (rc {app.returncode}); see {work}/app.err")
        if time.monotonic() - t_start > a.warmup_s + 120:
            app.kill()
            sys.exit(f"fewer than 20 steps after {a.warmup_s + 120:.0f} s; see {work}")
        time.sleep(0.2)

    margin = int(a.margin_s * 1e9)
    blocks = []  # per pair: {"traced": (lo, hi), "untraced": (lo, hi), "attach_rc": rc}
    for k in range(a.blocks):
        if a.budget_s and time.monotonic() - t_start > a.budget_s:
            print(f"budget of {a.budget_s:.0f} s reached after {k} pairs", flush=True)
            break
        pair = {}
        for kind in (("traced", "untraced") if k % 2 == 0 else ("untraced", "traced")):
            t0 = time.monotonic_ns()
            if a.toggle == "stacks":
                try:
                    reply = control(os.path.join(ctl_dir, f"{app.pid}.sock"),
                                    "stacks on" if kind == "traced" else "stacks off")
                except OSError as e:
                    reply = f"error {e}"
                if not reply.startswith("ok"):
                    pair["attach_rc"] = 1
                    pair["attach_err"] = reply[-500:]
                else:
                    pair.setdefault("attach_rc", 0)
                time.sleep(a.block_s)
            elif kind == "traced" and a.via == "socket":
                try:
                    reply = control(os.path.join(ctl_dir, f"{app.pid}.sock"),
                                    f"start {int(a.block_s * 1000)}")
                except OSError as e:
                    reply = f"error {e}"
                pair["attach_rc"] = 0 if reply.startswith("ok") else 1
                if pair["attach_rc"] != 0:
                    pair["attach_err"] = reply[-500:]
                time.sleep(a.block_s)
            elif kind == "traced":
                r = subprocess.run([a.gpscope, "attach", "--pid", str(app.pid), "--duration",
                                    str(a.block_s), "--no-report", "--no-progress", "--output",
                                    os.path.join(work, f"attach-{k}")],
                                   capture_output=True, text=True, timeout=a.block_s + 60)
                pair["attach_rc"] = r.returncode
                if r.returncode != 0:
                    pair["attach_err"] = r.stderr.strip()[-500:]
            else:
                time.sleep(a.block_s)
            # A window opens a moment after t0 and lasts block_s; the same span untraced.
            pair[kind] = (t0 + margin, t0 + int(a.block_s * 1e9) - margin // 4)
            time.sleep(0.3)  # the window's end (forced flush) settles between blocks
        blocks.append(pair)
    app.terminate()
    try:
        app.wait(timeout=30)
    except subprocess.TimeoutExpired:
        app.kill()

    log = read_log(step_log)
    rows, ratios, tmeans, ok = [], [], [], True
    for k, pair in enumerate(blocks):
        tr = steps_in(log, *pair["traced"])
        un = steps_in(log, *pair["untraced"])
        row = {"pair": k, "traced_steps": len(tr), "untraced_steps": len(un),
               "attach_rc": pair.get("attach_rc")}
        if pair.get("attach_rc") != 0:
            row["attach_err"] = pair.get("attach_err", "")
            ok = False
        row["traced_span_ns"], row["untraced_span_ns"] = pair["traced"], pair["untraced"]
        if len(tr) >= a.min_steps and len(un) >= a.min_steps:
            row["traced_ms"] = statistics.median(tr) / 1e6
            row["untraced_ms"] = statistics.median(un) / 1e6
            row["ratio"] = row["traced_ms"] / row["untraced_ms"]
            # Step times can be bimodal (a pageable copy at two speeds): a block's
            # median then flips between modes; the 10%-trimmed mean does not.
            row["ratio_tmean"] = trimmed_mean(tr) / trimmed_mean(un)
            ratios.append(row["ratio"])
            tmeans.append(row["ratio_tmean"])
        else:
            ok = False
        rows.append(row)

    print(f"{'pair':>4} {'traced':>8} {'untraced':>9} {'traced ms':>10} {'untraced ms':>12} {'+%':>7}")
    for r in rows:
        if "ratio" in r:
            print(f"{r['pair']:>4} {r['traced_steps']:>8} {r['untraced_steps']:>9} "
                  f"{r['traced_ms']:>10.3f} {r['untraced_ms']:>12.3f} {100 * (r['ratio'] - 1):>+7.2f}")
        else:
            print(f"{r['pair']:>4} {r['traced_steps']:>8} {r['untraced_steps']:>9}  (too few steps or "
                  f"attach rc {r['attach_rc']}: {r.get('attach_err', '')})")
    result = {"blocks": rows, "block_s": a.block_s, "margin_s": a.margin_s, "cmd": cmd}
    if ratios:
        for prefix, xs, label in (("ratio", ratios, ("stacks on vs off, %d pairs:" if a.toggle == "stacks"
                                             else "tracing vs standby, %d pairs:") % len(ratios)),
                                  ("tmean_ratio", tmeans, "  on 10%-trimmed block means:")):
            result[prefix + "_median"] = statistics.median(xs)
            result[prefix + "_mean"] = statistics.fmean(xs)
            sem = (statistics.stdev(xs) / len(xs) ** 0.5) if len(xs) > 1 else None
            result[prefix + "_sem"] = sem
            print(f"{label} median {100 * (result[prefix + '_median'] - 1):+.2f}%, "
                  f"mean {100 * (result[prefix + '_mean'] - 1):+.2f}%"
                  + (f" +- {100 * sem:.2f}% (standard error)" if sem is not None else ""))
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(result, fh, indent=1)
    return 0 if ok and ratios else 1


if __name__ == "__main__":
    sys.exit(main())
