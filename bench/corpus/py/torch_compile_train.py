"""torch.compile'd training (default mode, inductor): a residual MLP of 4
blocks (LayerNorm -> Linear 4096x16384 -> GELU -> Linear 16384x4096),
batch 8192, bf16 autocast, fused AdamW outside the compiled region, data
on the GPU, loss logged every 50 steps. Compilation happens in the
warm-up steps.

Healthy control: inductor's fused Triton kernels plus cuBLAS GEMMs keep
the GPU busy; nothing above info expected (Triton/cuBLAS kernels must not
get launch-bounds advice).
"""
import time

import torch
import torch.nn.functional as F

from corpus_common import Steady, log, run, versions


class Block(torch.nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.up = torch.nn.Linear(d, hidden)
        self.down = torch.nn.Linear(hidden, d)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


def main(args):
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[Block(4096, 16384) for _ in range(4)]).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    compiled = torch.compile(model)  # site:compile
    x = torch.randn(8192, 4096, device=dev)
    y = torch.randn(8192, 4096, device=dev)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.mse_loss(compiled(x).float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    t0 = time.perf_counter()
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0
    log(f"compile + 3 warm-up steps: {compile_s:.1f} s")
    steady = Steady(args.seconds)
    while steady.running():
        loss = step()
        steady.tick()
        if steady.steps % 50 == 0:
            print(f"step {steady.steps} loss {loss.item():.4f}", flush=True)
    torch.cuda.synchronize()
    return steady.result(compile_s=round(compile_s, 1), **versions(torch))


if __name__ == "__main__":
    run(main, seconds=4)
