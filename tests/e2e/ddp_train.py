"""A DistributedDataParallel training job for tests/e2e/ddp_gpu.sh (issue 9).

An ordinary torchrun script: nothing in it knows about gpscope.

  python3 -m torch.distributed.run --standalone --nproc_per_node 2 ddp_train.py --steps 60
  ... ddp_train.py --straggle-rank 1 --straggle-ms 30   # rank 1 does 30 ms of extra host work

Each step: a pinned batch copied to the GPU, forward/backward of a bf16-autocast MLP wrapped in
DDP (its gradient all-reduces overlap the backward pass, several buckets per step), AdamW, a
loss.item() host sync every --sync-every steps, and an NVTX range "step N". With
--straggle-rank R, rank R burns --straggle-ms of CPU time before every step's forward pass (a
slow data loader or a busy host), so the other ranks wait for it in every all-reduce.

Rank 0 prints one JSON line: {"world_size", "steps", "step_ms_median", "straggle_rank", ...}.
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def burn_cpu(ms):
    """Busy host work (not a sleep): what a slow data loader or a busy host looks like."""
    end = time.perf_counter() + ms / 1000.0
    x = 0
    while time.perf_counter() < end:
        for i in range(200):
            x += i * i
    return x


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--sync-every", type=int, default=10)
    p.add_argument("--straggle-rank", type=int, default=-1)
    p.add_argument("--straggle-ms", type=float, default=30.0)
    args = p.parse_args()

    local_rank = int(os.environ["LOCAL_RANK"])
    dev = torch.device("cuda", local_rank)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.hidden, args.hidden), torch.nn.GELU()]
    model = DistributedDataParallel(torch.nn.Sequential(*layers).to(dev), device_ids=[local_rank])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    torch.manual_seed(1 + rank)  # each rank its own data shard
    host_x = torch.randn(args.batch, args.hidden).pin_memory()
    host_y = torch.randn(args.batch, args.hidden).pin_memory()

    step_ms, losses = [], []
    for step in range(args.steps):
        t0 = time.perf_counter()
        torch.cuda.nvtx.range_push(f"step {step}")
        if rank == args.straggle_rank:
            burn_cpu(args.straggle_ms)
        x = host_x.to(dev, non_blocking=True)
        y = host_y.to(dev, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.mse_loss(model(x).float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if (step + 1) % args.sync_every == 0:
            losses.append(loss.item())
        torch.cuda.nvtx.range_pop()
        step_ms.append((time.perf_counter() - t0) * 1000.0)
    torch.cuda.synchronize()
    dist.barrier()
    if rank == 0:
        warm = step_ms[min(10, len(step_ms) // 4):]
        print(json.dumps({"world_size": world, "steps": args.steps,
                          "step_ms_median": round(statistics.median(warm), 3),
                          "straggle_rank": args.straggle_rank, "straggle_ms": args.straggle_ms,
                          "final_loss": losses[-1] if losses else None}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
