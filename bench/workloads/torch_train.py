"""A small, real PyTorch training loop used by the e2e tests, the overhead
benchmark and to record the bundled trace (tests/data/).

It is an ordinary user script: nothing in it knows about gpscope.

  python3 torch_train.py --mode train --steps 200     # MLP training, bf16 autocast
  python3 torch_train.py --mode tiny --ops 100000     # launch-bound tiny ops
  python3 torch_train.py ... --profiler               # wrap in torch.profiler (CUDA only)
  python3 torch_train.py ... --profiler --profiler-cpu # CPU and CUDA activities
  python3 torch_train.py --seconds 60 --step-log F     # train 60 s, each step's times to F
  python3 torch_train.py --mode tiny --seconds 60 --step-log F  # steps of 1000 tiny ops + a sync
  python3 torch_train.py ... --baton IN,OUT,READY  # blocks timed on bench/overhead_baton.py's token

Prints one JSON line: {"mode", "steps", "wall_s", "step_ms_median", ...}.
The training step has what real jobs have: a host batch copied to the GPU
(pinned, non_blocking) plus a pageable label copy, forward/backward/optimizer,
a loss.item() host sync every --sync-every steps, and NVTX step ranges.
"""
import argparse
import itertools
import json
import statistics
import sys
import time

import torch

import baton


def train(args):
    torch.manual_seed(0)
    dev = torch.device("cuda")
    inner = []
    for _ in range(max(1, args.layers - 2)):
        inner += [torch.nn.Linear(args.hidden, args.hidden), torch.nn.GELU()]
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, args.hidden), torch.nn.GELU(), *inner,
        torch.nn.Linear(args.hidden, 1024)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    host_x = torch.randn(args.batch, 1024).pin_memory()
    host_y = torch.randn(args.batch, 1024)  # pageable on purpose
    step_ms = []
    losses = []
    # --step-log: one "start_ns end_ns" line per step (CLOCK_MONOTONIC), for
    # bench/overhead_ab.py; --seconds: stop after that long instead of --steps.
    log = open(args.step_log, "w", buffering=1) if args.step_log else None
    deadline = time.monotonic() + args.seconds if args.seconds else None

    def one_step(step):
        torch.cuda.nvtx.range_push(f"step {step}")
        x = host_x.to(dev, non_blocking=True)
        y = host_y.to(dev)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.mse_loss(model(x).float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if (step + 1) % args.sync_every == 0:
            losses.append(loss.item())
        torch.cuda.nvtx.range_pop()
        if args.sleep_ms:
            time.sleep(args.sleep_ms / 1000.0)  # a slow data loader
        torch.cuda.synchronize()

    if args.baton:
        for step in range(10):  # warm before the first timed block
            one_step(step)
        steps = itertools.count(10)
        block_us = baton.relay(args.baton, lambda: one_step(next(steps)))
        return {"block_us": block_us, "step_ms_median": statistics.median(block_us) / 1e3,
                "final_loss": losses[-1] if losses else None}
    step = -1
    while True:
        step += 1
        if deadline is None and step >= args.steps:
            break
        if deadline is not None and time.monotonic() >= deadline:
            break
        t0 = time.perf_counter()
        t0_ns = time.monotonic_ns()
        one_step(step)
        step_ms.append((time.perf_counter() - t0) * 1000.0)
        if log is not None:
            log.write(f"{t0_ns} {time.monotonic_ns()}\n")
    if log is not None:
        log.close()
    warm = step_ms[min(10, len(step_ms) // 4):]
    return {"step_ms_median": statistics.median(warm), "final_loss": losses[-1] if losses else None}


def tiny(args):
    dev = torch.device("cuda")
    x = torch.zeros(16, device=dev)
    for _ in range(1000):
        x.add_(1.0)
    torch.cuda.synchronize()
    if args.baton:
        block_us = baton.relay(args.baton, lambda: tiny_block(x, args.ops_per_step))
        if float(x[0].item()) != 1000.0 + args.ops_per_step * len(block_us):
            raise SystemExit("wrong result")
        return {"block_us": block_us, "ops_per_block": args.ops_per_step,
                "us_per_op": statistics.median(block_us) / args.ops_per_step}
    if args.seconds:
        return tiny_steps(args, x)
    t0 = time.perf_counter()
    for _ in range(args.ops):
        x.add_(1.0)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    if float(x[0].item()) != 1000.0 + args.ops:
        raise SystemExit("wrong result")
    return {"us_per_op": dt * 1e6 / args.ops, "loop_s": dt}


def tiny_block(x, ops):
    """ops tiny ops and a synchronize: a step of --seconds, a block of --baton."""
    for _ in range(ops):
        x.add_(1.0)
    torch.cuda.synchronize()


def tiny_steps(args, x):
    # --seconds with --mode tiny: "steps" of --ops-per-step tiny ops, each ended
    # by a synchronize, logged like train's for bench/overhead_ab.py.
    log = open(args.step_log, "w", buffering=1) if args.step_log else None
    deadline = time.monotonic() + args.seconds
    step_us = []
    ops = 0
    while time.monotonic() < deadline:
        t0_ns = time.monotonic_ns()
        tiny_block(x, args.ops_per_step)
        t1_ns = time.monotonic_ns()
        ops += args.ops_per_step
        step_us.append((t1_ns - t0_ns) / 1e3)
        if log is not None:
            log.write(f"{t0_ns} {t1_ns}\n")
    if log is not None:
        log.close()
    if float(x[0].item()) != 1000.0 + ops:
        raise SystemExit("wrong result")
    return {"steps": len(step_us), "us_per_op": statistics.median(step_us) / args.ops_per_step}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["train", "tiny"], default="train")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--layers", type=int, default=3, help="Linear layers (at least 3)")
    p.add_argument("--sync-every", type=int, default=10)
    p.add_argument("--sleep-ms", type=float, default=0.0)
    p.add_argument("--ops", type=int, default=100000)
    p.add_argument("--ops-per-step", type=int, default=1000, help="tiny with --seconds")
    p.add_argument("--profiler", action="store_true")
    p.add_argument("--profiler-cpu", action="store_true",
                   help="with --profiler: CPU activities too (the CPU+CUDA profile)")
    p.add_argument("--exit-code", type=int, default=0)
    p.add_argument("--step-log", default="", help="write each step's monotonic start/end ns")
    p.add_argument("--baton", default="",
                   help="IN,OUT,READY FIFOs: time one block (a step; --ops-per-step tiny ops) per "
                        "token of bench/overhead_baton.py's relay (bench/workloads/baton.py)")
    p.add_argument("--seconds", type=float, default=0.0, help="train: run this long, not --steps; tiny: steps of --ops-per-step")
    args = p.parse_args()
    t0 = time.perf_counter()
    fn = train if args.mode == "train" else tiny
    if args.profiler:
        from torch.profiler import ProfilerActivity, profile
        activities = [ProfilerActivity.CUDA]
        if args.profiler_cpu:
            activities.append(ProfilerActivity.CPU)
        with profile(activities=activities) as prof:
            out = fn(args)
        if not args.baton:  # the relay waits for every process's exit: keep it short
            out["profiler_events"] = len(prof.events())
    else:
        out = fn(args)
    out.update(mode=args.mode, wall_s=time.perf_counter() - t0)
    print(json.dumps(out), flush=True)
    sys.exit(args.exit_code)


if __name__ == "__main__":
    main()
