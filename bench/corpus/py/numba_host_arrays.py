"""A Numba CUDA kernel (saxpy over 16M floats) called with NumPy host
arrays, as a first Numba program does: each call makes Numba copy every
array argument to the GPU and back (3 x 64 MB each way, pageable), for a
kernel of ~0.1 ms. Numba warns about it (NumbaPerformanceWarning).

Bottleneck: copies. The implicit host<->device transfers on every call are
~99% of the GPU time; the kernel is nothing. Fix: cuda.to_device() once,
keep the arrays on the GPU (device arrays), copy back only the result when
needed (and into pinned memory).
"""
import warnings

import numba
import numpy as np
from numba import cuda

from corpus_common import Steady, run


@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


def main(args):
    warnings.simplefilter("once")
    n = 16 << 20
    rng = np.random.default_rng(0)
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    out = np.empty_like(x)
    threads = 256
    blocks = (n + threads - 1) // threads
    for _ in range(2):  # JIT compile + warm-up
        saxpy[blocks, threads](np.float32(2.0), x, y, out)
    cuda.synchronize()
    steady = Steady(args.seconds)
    while steady.running():
        saxpy[blocks, threads](np.float32(2.0), x, y, out)  # site:kernel_call
        steady.tick()
    cuda.synchronize()
    return steady.result(check=float(out[:4].sum()), numba=numba.__version__,
                         numba_cuda=getattr(cuda, "__version__", None))


if __name__ == "__main__":
    run(main, seconds=4)
