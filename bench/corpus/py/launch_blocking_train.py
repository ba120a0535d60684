"""An ordinary torchvision ResNet-18 training loop (bf16 autocast, batch 64,
data on the GPU, loss logged every 50 steps) run with CUDA_LAUNCH_BLOCKING=1
left in the job's environment (the runner sets it, as a debugging session
would have).

Bottleneck: synchronous launches. Every kernel launch returns only after
the kernel finished, so the host cannot queue ahead: queue depth <= 1,
queue delay ~0, and the GPU idles for every launch call and every bit of
Python between ops. Fix: unset CUDA_LAUNCH_BLOCKING. The code is not the
cause; the environment is.
"""
import os

import torch
import torchvision

from corpus_common import Steady, log, run, versions


def main(args):
    log(f"CUDA_LAUNCH_BLOCKING={os.environ.get('CUDA_LAUNCH_BLOCKING')!r}")
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).to(dev, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(64, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (64,), device=dev)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)  # site:forward
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    steady = Steady(args.seconds)
    while steady.running():
        loss = step()
        steady.tick()
        if steady.steps % 50 == 0:
            print(f"step {steady.steps} loss {loss.item():.4f}", flush=True)
    torch.cuda.synchronize()
    return steady.result(cuda_launch_blocking=os.environ.get("CUDA_LAUNCH_BLOCKING"),
                         **versions(torch, torchvision))


if __name__ == "__main__":
    run(main, seconds=4)
