"""PyTorch MLP training with the batches already on the GPU; every step reads
the loss with .item() and then runs slow pure-Python metric code (sorting
and smoothing a long loss history) before launching the next step.

Bottleneck: host-bound after a per-step sync. The .item() makes the host
wait for the GPU to finish the step, then the GPU idles for the whole
Python metric update (~10 ms); nothing is copied to the GPU between steps
(the data never leaves it), so it is not an input pipeline problem.
"""
import random

import torch
import torch.nn.functional as F

from corpus_common import Steady, run, versions


class LossTracker:
    """The kind of metric code people write: running median and an EMA over
    the last WINDOW losses, in plain Python."""

    WINDOW = 50_000

    def __init__(self):
        rng = random.Random(0)
        self.history = [rng.random() for _ in range(self.WINDOW)]
        self.ema = 0.0

    def update(self, value):
        self.history.append(value)
        window = self.history[-self.WINDOW:]
        ordered = sorted(window)  # site:host_hot
        median = ordered[len(ordered) // 2]
        ema = 0.0
        for v in window[-20_000:]:
            ema = 0.999 * ema + 0.001 * v
        self.ema = ema
        return median


def main(args):
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(2048, 8192), torch.nn.GELU(),
        torch.nn.Linear(8192, 8192), torch.nn.GELU(),
        torch.nn.Linear(8192, 2048)).to(dev, torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    # The whole (synthetic) data set lives on the GPU: 8 batches of 4096.
    xs = [torch.randn(4096, 2048, device=dev, dtype=torch.bfloat16) for _ in range(8)]
    ys = [torch.randn(4096, 2048, device=dev, dtype=torch.bfloat16) for _ in range(8)]
    tracker = LossTracker()

    def step(i):
        out = model(xs[i % 8])
        loss = F.mse_loss(out.float(), ys[i % 8].float())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        value = loss.item()  # site:item
        return tracker.update(value)  # site:host_code

    for i in range(3):
        step(i)
    torch.cuda.synchronize()
    steady = Steady(args.seconds)
    while steady.running():
        step(steady.steps)
        steady.tick()
    torch.cuda.synchronize()
    return steady.result(loss_ema=round(tracker.ema, 4), **versions(torch))


if __name__ == "__main__":
    run(main, seconds=4)
