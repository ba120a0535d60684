"""95% bootstrap interval of the paired median ratio in bench/overhead_ab.py's JSON.

  python3 bench/ab_ci.py AB.json [AB2.json ...]   (pairs of several runs pooled)
"""
import json
import random
import statistics
import sys


def median_ci(ratios):
    """The median of `ratios` and its 95% bootstrap interval (10,000 resamples, seed 0)."""
    rng = random.Random(0)
    meds = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(10000))
    return statistics.median(ratios), meds[249], meds[9749]


def main():
    ratios = []
    for path in sys.argv[1:]:
        ratios += [b["ratio"] for b in json.load(open(path))["blocks"] if b.get("ratio")]
    if not ratios:
        raise SystemExit("no pairs")
    med, lo, hi = median_ci(ratios)
    print(f"{len(ratios)} pairs: paired median {med:.4f}, 95% bootstrap [{lo:.4f}, {hi:.4f}]")


if __name__ == "__main__":
    main()
