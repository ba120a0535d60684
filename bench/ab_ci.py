"""95% bootstrap interval of the paired median ratio in bench/overhead_ab.py's JSON.

  python3 bench/ab_ci.py AB.json [AB2.json ...]   (pairs of several runs pooled)
"""
import json
import random
import statistics
import sys


def main():
    ratios = []
    for path in sys.argv[1:]:
        ratios += [b["ratio"] for b in json.load(open(path))["blocks"] if b.get("ratio")]
    if not ratios:
        raise SystemExit("no pairs")
    rng = random.Random(0)
    meds = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(10000))
    print(f"{len(ratios)} pairs: paired median {statistics.median(ratios):.4f}, "
          f"95% bootstrap [{meds[249]:.4f}, {meds[9749]:.4f}]")


if __name__ == "__main__":
    main()
