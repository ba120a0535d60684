"""MLP training (bf16 autocast, 134M fp32 parameters, ~8 ms per step) that
saves a checkpoint (torch.save of the model's and the AdamW optimizer's
state_dicts, ~1.6 GB) synchronously halfway through the run, into a
temporary directory.

Bottleneck: a long pause for checkpointing. The save copies every tensor
to the host and writes the file while the GPU idles (~1 s expected, at
least 500 ms); before and after it, training is GPU-bound. One save keeps
the pause under 30% of the window, so it is a long gap, not starvation. Fix: save less
often, asynchronously (torch.distributed.checkpoint.async_save, or a
background thread after copying to pinned memory), or from one rank only.
"""
import os
import tempfile
import time

import torch
import torch.nn.functional as F

from corpus_common import Steady, log, run, versions


def main(args):
    dev = torch.device("cuda")
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(4096, 4096), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(4096, 4096, device=dev)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.mse_loss(model(x).float(), x)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    saves = []
    with tempfile.TemporaryDirectory() as tmp:
        steady = Steady(args.seconds)
        marks = [steady.t0 + args.seconds / 2]
        while steady.running():
            loss = step()
            steady.tick()
            if marks and time.perf_counter() >= marks[0]:
                marks.pop(0)
                t0 = time.perf_counter()
                path = os.path.join(tmp, f"ckpt-{steady.steps}.pt")
                torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),  # site:save
                            "step": steady.steps}, path)
                saves.append({"ms": round(1e3 * (time.perf_counter() - t0), 1),
                              "mb": round(os.path.getsize(path) / 1e6)})
                log(f"checkpoint {path}: {saves[-1]}")
            elif steady.steps % 50 == 0:
                print(f"step {steady.steps} loss {loss.item():.4f}", flush=True)
        torch.cuda.synchronize()
    return steady.result(saves=saves, **versions(torch))


if __name__ == "__main__":
    run(main, seconds=6)
