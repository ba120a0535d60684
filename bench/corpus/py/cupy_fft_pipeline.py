"""A CuPy image-filtering pipeline: 16 images of 2048 x 2048 (fp32) per
step through rfft2, a Gaussian low-pass in the frequency domain, irfft2,
ReLU, mean removal and blending with the previous frame, each a separate
CuPy call (cuFFT plus elementwise/reduction kernels); two steps in flight
(events polled, no synchronizing call).

Bottleneck: memory bandwidth. Every stage streams the whole 256 MB stack
through DRAM with little arithmetic per byte. Fix: fuse the elementwise
stages (cupy.fuse / an ElementwiseKernel, cuFFT callbacks), keep fp16 or
bf16 data where precision allows.
"""
import time

import cupy as cp

from corpus_common import Steady, run


def main(args):
    n, size = 16, 2048
    x = cp.random.standard_normal((n, size, size), dtype=cp.float32)
    fy = cp.fft.fftfreq(size).astype(cp.float32)[:, None]
    fx = cp.fft.rfftfreq(size).astype(cp.float32)[None, :]
    lowpass = cp.exp(-(fx * fx + fy * fy) / (2 * 0.05 ** 2)).astype(cp.complex64)

    def step(frame):
        spec = cp.fft.rfft2(frame)  # site:fft
        spec *= lowpass
        out = cp.fft.irfft2(spec, s=(size, size))
        out = cp.maximum(out, 0)
        out -= out.mean(axis=(1, 2), keepdims=True)
        return 0.5 * out + 0.5 * frame

    events = []
    for _ in range(3):
        x = step(x)
    cp.cuda.Device().synchronize()
    steady = Steady(args.seconds)
    while steady.running():
        x = step(x)
        e = cp.cuda.Event(disable_timing=True)
        e.record()
        events.append(e)
        if len(events) > 2:  # at most two steps in flight
            old = events.pop(0)
            while not old.done:
                time.sleep(0.0002)
        steady.tick()
    cp.cuda.Device().synchronize()
    return steady.result(images=n, size=size, cupy=cp.__version__)


if __name__ == "__main__":
    run(main, seconds=4)
