"""A particle simulation loop: each step the GPU integrates 4M particles
(seven elementwise/reduction kernels, ~0.2 ms), torch.cuda.synchronize()
waits for it, then pure-Python bookkeeping over a list of 4,000 tracked
objects (~2-3 ms) decides what to do next. No data goes to the GPU between
steps.

Bottleneck: host-bound. The Python bookkeeping runs while the GPU sits
idle (~90% of the time, in gaps of a few ms, below the 5 ms idle-gap
threshold); removing the sync alone would not help much, because the host
needs ~10x longer per step than the GPU. Fix: vectorise the bookkeeping
(numpy/torch on the GPU) or move it off the critical path (another thread
or process), batch several simulation steps per host decision.
"""
import random

import torch

from corpus_common import Steady, run, versions


class Tracker:
    """Per-object bookkeeping in plain Python objects."""

    def __init__(self, n=4000):
        rng = random.Random(1)
        self.objects = [{"id": i, "x": rng.random(), "v": rng.random(), "hits": 0} for i in range(n)]

    def update(self, step):
        hits = 0
        for o in self.objects:
            o["x"] += 0.01 * o["v"]
            if o["x"] > 1.0:
                o["x"] -= 1.0
                o["hits"] += 1
                hits += 1
            o["v"] = 0.99 * o["v"] + 0.01 * ((step * 7919 + o["id"]) % 13) / 13
        busiest = max(self.objects, key=lambda o: o["hits"])
        return hits, busiest["id"]


def main(args):
    dev = torch.device("cuda")
    pos = torch.rand(1 << 22, 3, device=dev)
    vel = torch.randn(1 << 22, 3, device=dev) * 0.01
    tracker = Tracker()

    def step(i):
        global_force = -pos.mean(dim=0, keepdim=True)
        vel.add_(0.001 * (global_force - pos))
        pos.add_(vel).remainder_(1.0)
        torch.cuda.synchronize()  # site:sync
        return tracker.update(i)  # site:host_code

    for i in range(3):
        step(i)
    steady = Steady(args.seconds)
    while steady.running():
        step(steady.steps)
        steady.tick()
    torch.cuda.synchronize()
    return steady.result(**versions(torch))


if __name__ == "__main__":
    run(main, seconds=4)
