"""MLP training (bf16 autocast, ~8 ms of GPU per step) whose batches come
from a numpy array in ordinary (pageable) host memory: each step does
torch.from_numpy(batch).to("cuda", non_blocking=True), 64 MB.

Bottleneck: pageable host memory for the per-step input copy. The copy is
staged through a driver buffer (not asynchronous despite non_blocking) and
runs at pageable speed (~6 GB/s measured on this H200, against ~54 GB/s
pinned): ~11 ms per step instead of ~1.2 ms. Fix: pin the host buffers
(torch.from_numpy(...).pin_memory(), DataLoader(pin_memory=True)) and copy
ahead on a side stream. (copy-heavy is the symptom; pageable is the cause.)
"""
import numpy as np
import torch
import torch.nn.functional as F

from corpus_common import Steady, run, versions


def main(args):
    dev = torch.device("cuda")
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    # The data set: 6 batches of 4096 x 4096 fp32 (64 MB each) in host memory.
    batches = [rng.standard_normal((4096, 4096), dtype=np.float32) for _ in range(6)]
    model = torch.nn.Sequential(
        torch.nn.Linear(4096, 8192), torch.nn.GELU(),
        torch.nn.Linear(8192, 8192), torch.nn.GELU(),
        torch.nn.Linear(8192, 4096)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)

    def step(i):
        x = torch.from_numpy(batches[i % 6]).to(dev, non_blocking=True)  # site:h2d
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(x)
        loss = F.mse_loss(out.float(), x)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for i in range(3):
        step(i)
    torch.cuda.synchronize()
    steady = Steady(args.seconds)
    while steady.running():
        loss = step(steady.steps)
        steady.tick()
        if steady.steps % 50 == 0:
            print(f"step {steady.steps} loss {loss.item():.4f}", flush=True)
    torch.cuda.synchronize()
    return steady.result(copy_mb=64, **versions(torch))


if __name__ == "__main__":
    run(main, seconds=4)
