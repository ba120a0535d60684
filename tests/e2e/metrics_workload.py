"""GPU workload for the metrics e2e check (issue 4): phases with known
hardware behaviour, each inside an NVTX range named after it, so that
check_metrics.py can average the sampled metrics over each phase.

  idle        time.sleep: nothing on the GPU
  matmul_bf16 8192^3 bf16 matmuls back to back: SMs and tensor cores busy
  elementwise 1 GiB fp32 tensors added: DRAM bandwidth, no tensor cores
  shared      this process sleeps while a second process (started without
              gpscope) runs matmuls on the same GPU; its pid goes to
              --other-pid-file so the check can find it in the
              per-process utilization

usage: metrics_workload.py --phase-s 4 --other-pid-file FILE
"""
import argparse
import os
import subprocess
import sys
import time

import torch

OTHER = r"""
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
c = torch.empty_like(a)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(10):
        torch.matmul(a, a, out=c)
    torch.cuda.synchronize()
"""


def phase(name, seconds, body):
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(name)
    end = time.time() + seconds
    while time.time() < end:
        body()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--phase-s", type=float, default=4.0)
    ap.add_argument("--other-pid-file", required=True)
    args = ap.parse_args()
    dev = torch.device("cuda")

    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    c = torch.empty_like(a)
    n = 1 << 28  # 1 GiB of fp32 each
    x = torch.ones(n, device=dev)
    y = torch.ones(n, device=dev)
    z = torch.empty(n, device=dev)
    torch.matmul(a, b, out=c)
    torch.add(x, y, out=z)
    torch.cuda.synchronize()

    def mm():
        for _ in range(20):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()

    def ew():
        for _ in range(20):
            torch.add(x, y, out=z)
        torch.cuda.synchronize()

    phase("idle", args.phase_s, lambda: time.sleep(0.05))
    phase("matmul_bf16", args.phase_s, mm)
    phase("elementwise", args.phase_s, ew)

    # The other process: no gpscope in its environment.
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUDA_INJECTION64_PATH", "LD_PRELOAD")}
    other = subprocess.Popen([sys.executable, "-c", OTHER, str(args.phase_s + 6)], env=env)
    with open(args.other_pid_file, "w") as f:
        f.write(str(other.pid))
    time.sleep(4)  # its CUDA start-up
    phase("shared", args.phase_s, lambda: time.sleep(0.05))
    other.wait()
    print("done", flush=True)


if __name__ == "__main__":
    main()
