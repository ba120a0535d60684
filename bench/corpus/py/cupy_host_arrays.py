"""A CuPy saxpy (an ElementwiseKernel over 16M floats) fed NumPy host arrays
on every call, as a first CuPy port of NumPy code does: each step moves both
inputs to the GPU with cupy.asarray() and the result back with
cupy.asnumpy() (2 x 64 MB in, 64 MB out, pageable host memory), for a kernel
of ~0.1 ms.

Bottleneck: copies. The host<->device transfers on every call are ~99% of
the GPU time; the kernel is nothing. Fix: move the arrays to the GPU once
(cupy.asarray outside the loop), keep them there, copy back only the result
that is needed, into pinned memory (cupyx.empty_pinned) if it must move.

Replaces numba_host_arrays (the same program on Numba CUDA), which could not
run on the GPU image: numba-cuda's CUDA target fails to import there against
NumPy 2.x (AttributeError: numpy has no attribute 'row_stack').
"""
import cupy as cp
import numpy as np

from corpus_common import Steady, run

saxpy = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 out",
                             "out = a * x + y", "corpus_saxpy")


def main(args):
    n = 16 << 20
    rng = np.random.default_rng(0)
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    a = np.float32(2.0)

    def step():
        out = saxpy(a, cp.asarray(x), cp.asarray(y))  # site:host_arrays
        return cp.asnumpy(out)  # site:copy_back

    for _ in range(2):  # kernel compile (NVRTC) + warm-up
        result = step()
    cp.cuda.Device().synchronize()
    steady = Steady(args.seconds)
    while steady.running():
        result = step()
        steady.tick()
    cp.cuda.Device().synchronize()
    return steady.result(check=float(result[:4].sum()), cupy=cp.__version__)


if __name__ == "__main__":
    run(main, seconds=4)
