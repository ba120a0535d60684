"""A Numba CUDA kernel with a grid-stride loop over 4M floats, launched
with one block of 256 threads (kernel[1, 256]), on device arrays; two
launches in flight (events polled, no synchronizing call).

Bottleneck: launches too small to fill the GPU (SM efficiency). One block
runs on one of the H200's 132 SMs; the other 131 idle while the kernel
streams the arrays at a single SM's bandwidth. Fix: launch enough blocks
(e.g. 4-8 per SM, or ceil(n / threads)); the grid-stride loop keeps the
kernel correct for any grid.
"""
import time

import numba
import numpy as np
from numba import cuda

from corpus_common import Steady, run


@cuda.jit
def decay_add(x, y, n):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        y[i] = 0.5 * y[i] + x[i] * x[i]


def main(args):
    n = 4 << 20
    rng = np.random.default_rng(0)
    d_x = cuda.to_device(rng.random(n, dtype=np.float32))
    d_y = cuda.to_device(np.zeros(n, dtype=np.float32))
    decay_add[1, 256](d_x, d_y, n)  # JIT compile + warm-up
    cuda.synchronize()
    events = []
    steady = Steady(args.seconds)
    while steady.running():
        decay_add[1, 256](d_x, d_y, n)  # site:launch
        e = cuda.event(timing=False)
        e.record()
        events.append(e)
        if len(events) > 2:
            old = events.pop(0)
            while not old.query():
                time.sleep(0.0002)
        steady.tick()
    cuda.synchronize()
    return steady.result(blocks=1, threads=256, numba=numba.__version__)


if __name__ == "__main__":
    run(main, seconds=4)
