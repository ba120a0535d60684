#!/usr/bin/env python3
"""What each GPSCOPE_DUTY window costs a job, from the job's own step log.

  python3 bench/workloads/torch_train.py --seconds 40 --step-log DIR/NAME.log   # under gpscope with
      GPSCOPE_DUTY=ON/PERIOD GPSCOPE_LOG_LEVEL=info (stderr to DIR/NAME.err); just before it:
  python3 -c "import time;print(time.clock_gettime_ns(time.CLOCK_REALTIME), time.monotonic_ns())" > DIR/NAME.clock
  python3 bench/duty_window_cost.py DIR NAME [NAME...] [--period-s 60]

The windows come from the collector's "capture window starts/ends ... at NS" lines (CLOCK_REALTIME),
placed on the step log's CLOCK_MONOTONIC by NAME.clock. A window's excess is the sum, over the
steps that start from 0.5 s before it opens to 0.5 s after it closes, of each step's time minus
the local base: the median step starting 0.5-3.5 s before the opening or after the close (CUPTI
detached there). Against a base from the same process minutes apart, not another run, so the
run-to-run spread of step times (+-5% on the H100/H200) does not enter. Amortized cost at a period P:
mean excess / P (with a t-interval over the windows), plus whatever the job pays between windows
(measured apart: bench/overhead_baton.py, or tiny_kernels' phases).
"""
import argparse
import math
import os
import re
import statistics as st

from overhead_ab import read_log  # the step log: "start_ns end_ns" per line


def windows(err_path, offset_ns):
    out, start = [], None
    for line in open(err_path):
        m = re.search(r"window (starts|ends) \(\w+\) at (\d+)", line)
        if not m:
            continue
        t = int(m.group(2)) - offset_ns
        if m.group(1) == "starts":
            start = t
        elif start is not None:
            out.append((start, t))
            start = None
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("names", nargs="+")
    ap.add_argument("--period-s", type=float, action="append", default=[])
    a = ap.parse_args()
    every = []
    for n in a.names:
        p = lambda ext: os.path.join(a.dir, n + ext)
        steps = [(s, (e - s) / 1e6) for s, e in read_log(p(".log"))]
        realtime, mono = map(int, open(p(".clock")).read().split())
        wins = windows(p(".err"), realtime - mono)
        print(f"{n}: {len(steps)} steps, {len(wins)} windows")
        for ws, we in wins:
            around = [x for s, x in steps if ws - 3.5e9 <= s < ws - 0.5e9 or we + 0.5e9 <= s < we + 3.5e9]
            inside = [x for s, x in steps if ws <= s < we]
            span = [x for s, x in steps if ws - 0.5e9 <= s < we + 0.5e9]
            if not around or not inside:
                continue
            base = st.median(around)
            excess = sum(x - base for x in span)
            every.append(excess)
            print(f"  at {(ws - steps[0][0]) / 1e9:6.1f} s: base {base:.3f} ms, in the window {st.mean(inside):.3f} ms "
                  f"({100 * (st.mean(inside) / base - 1):+.1f}%), longest step {max(span):.1f} ms, excess {excess:.0f} ms")
    if len(every) < 2:
        return
    mean, sd = st.mean(every), st.stdev(every)
    # Student's t, two-sided 95%, for n-1 degrees of freedom (1.96 past 30).
    t95 = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14, 2.13,
           2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05, 2.05]
    n = len(every)
    half = (t95[n - 2] if n - 2 < len(t95) else 1.96) * sd / math.sqrt(n)
    print(f"excess per window over {n} windows: mean {mean:.0f} ms [{mean - half:.0f}, {mean + half:.0f}] (95%)")
    for period in a.period_s:
        print(f"  amortized at a {period:g} s period: {100 * mean / 1e3 / period:.3f}% "
              f"[{100 * (mean - half) / 1e3 / period:.3f}, {100 * (mean + half) / 1e3 / period:.3f}]")


if __name__ == "__main__":
    main()
