"""A CUDA C kernel compiled at run time by CuPy (cupy.RawKernel, NVRTC) with
a grid-stride loop over 4M floats, launched with one block of 256 threads,
on device arrays; two launches in flight (events polled, no synchronizing
call).

Bottleneck: launches too small to fill the GPU (SM efficiency). One block
runs on one of the H200's 132 SMs; the other 131 idle while the kernel
streams the arrays at a single SM's bandwidth. Fix: launch enough blocks
(e.g. 4-8 per SM, or ceil(n / threads)); the grid-stride loop keeps the
kernel correct for any grid.

Replaces numba_one_block (the same kernel on Numba CUDA), which could not
run on the GPU image: numba-cuda's CUDA target fails to import there against
NumPy 2.x (AttributeError: numpy has no attribute 'row_stack').
"""
import time

import cupy as cp

from corpus_common import Steady, run

decay_add = cp.RawKernel(r"""
extern "C" __global__ void decay_add(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    y[i] = 0.5f * y[i] + x[i] * x[i];
  }
}
""", "decay_add")


def main(args):
    n = 4 << 20
    x = cp.random.random(n, dtype=cp.float32)
    y = cp.zeros(n, dtype=cp.float32)
    decay_add((1,), (256,), (x, y, cp.int32(n)))  # NVRTC compile + warm-up
    cp.cuda.Device().synchronize()
    events = []
    steady = Steady(args.seconds)
    while steady.running():
        decay_add((1,), (256,), (x, y, cp.int32(n)))  # site:launch
        e = cp.cuda.Event(disable_timing=True)
        e.record()
        events.append(e)
        if len(events) > 2:
            old = events.pop(0)
            while not old.done:
                time.sleep(0.0002)
        steady.tick()
    cp.cuda.Device().synchronize()
    return steady.result(blocks=1, threads=256, cupy=cp.__version__)


if __name__ == "__main__":
    run(main, seconds=4)
