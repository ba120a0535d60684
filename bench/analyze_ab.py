#!/usr/bin/env python3
"""Analyzer builds side by side: `gpscope-analyze summary TRACE` with each binary, interleaved
(the order alternating per round), on one machine in one run.

  python3 bench/analyze_ab.py TRACE ROUNDS BASE NEW [NEW2 ...]

Prints each binary's wall-time median and range and its user-time median, and for each NEW
the per-round wall ratio to BASE: median and 95% bootstrap interval (bench/ab_ci.py).
"""
import os
import resource
import statistics
import subprocess
import sys
import time

from ab_ci import median_ci  # bench/ (the script's folder is on the path)


def main():
    if len(sys.argv) < 5:
        raise SystemExit(__doc__)
    trace, rounds, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    wall = {b: [] for b in bins}
    user = {b: [] for b in bins}
    for r in range(rounds):
        for b in bins if r % 2 == 0 else bins[::-1]:
            before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
            t0 = time.monotonic()
            subprocess.run([b, "summary", trace], stdout=subprocess.DEVNULL, check=True)
            wall[b].append(time.monotonic() - t0)
            user[b].append(resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before)
    base = bins[0]
    for b in bins:
        w = wall[b]
        line = (f"{b}: wall median {statistics.median(w):.3f} [{min(w):.3f}-{max(w):.3f}] s, "
                f"user median {statistics.median(user[b]):.2f} s")
        if b != base:
            med, lo, hi = median_ci([x / y for x, y in zip(w, wall[base])])
            line += f"; per-round wall ratio to {os.path.basename(base)} {med:.3f} [{lo:.3f}, {hi:.3f}]"
        print(line)


if __name__ == "__main__":
    main()
