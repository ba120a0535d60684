"""A hand-written optimizer step: one small matmul makes a "gradient" for
each of 64 small parameter tensors (4K floats each), then a Python loop
updates them one by one with p.add_(g, alpha=-lr): 64 tiny kernels of ~2 us
per step, each needing ~5 us of host time to launch.

Bottleneck: launch-bound (many tiny kernels). The GPU idles between
launches. Fix: one multi-tensor kernel (torch._foreach_add_, a fused
optimizer), torch.compile, or a CUDA graph of the step.
"""
import torch

from corpus_common import Steady, run, versions


def main(args):
    dev = torch.device("cuda")
    params = [torch.zeros(4096, device=dev) for _ in range(64)]
    w = torch.randn(64, 256, device=dev)
    h = torch.randn(256, 4096, device=dev)
    lr = 1e-3

    def step():
        grads = (w @ h).unbind(0)  # 64 rows of 4096: the "gradients"
        for p, g in zip(params, grads):
            p.add_(g, alpha=-lr)  # site:tiny_op

    for _ in range(10):
        step()
    torch.cuda.synchronize()
    steady = Steady(args.seconds)
    while steady.running():
        step()
        steady.tick()
    torch.cuda.synchronize()
    return steady.result(ops_per_step=65, **versions(torch))


if __name__ == "__main__":
    run(main, seconds=1.5)
