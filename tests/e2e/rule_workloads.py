"""Real PyTorch workloads for tests/e2e/rules_gpu.sh (issue 5's "must show"):
each scenario is built so that one rule of `gpscope-analyze summary`
(tools/analyses/rules.cc) is its top finding, and `healthy` is the control
that should have no finding of warning level or above.

  python3 rule_workloads.py --scenario NAME [--seconds S]

S (default 5) is the steady work after the warm-up. Nothing here knows about
gpscope except the two scenarios that must: incomplete-data makes the trace
directory unwritable for a while (GPSCOPE_OUTPUT), and gpu-shared-nvml keeps
its second process untraced. One GPU is enough for every scenario.

How findings rank (rules.cc, EvaluateRules): warnings and criticals first,
each group by estimated cost (ns). Info findings that come with much GPU
work (dominant-kernel; clock-throttling when only the power cap acts, as
under dense bf16 matmuls on the H200) rank after every warning. Hopper
GEMM/attention kernels (>= 64 KiB shared memory per block, 12-19%
theoretical occupancy by design) are left out of low-occupancy, so the
healthy control has no warning; rule_kernels.cu provides low-occupancy.

Scenarios (expected top finding; numbers against the thresholds in rules.h):

  healthy                 8192^3 bf16 matmuls back to back (8 per NVTX step,
                          two steps in flight). Expected: no warning.
  data-starvation         an MLP training step (fwd/bwd/SGD, ~2 ms of GPU)
                          fed from a pinned fp16 host batch (8 MB) that the
                          CPU fills for 10 ms (numpy, no sleep, no sync)
                          before each step: gaps of ~8 ms >= 5 ms, idle share
                          ~75% > 30% (critical > 60%), all of it host wait
                          (the copy is launched after the GPU ran dry).
                          Cost = host wait ~0.75 x window.
  launch-bound            in-place mul_/add_/clamp_ on 64K floats (128 blocks,
                          so SM efficiency stays ~97%): ~2 us kernels, ~5 us
                          of host per launch; > 10,000 launches with a mean
                          < 10 us, GPU idle in short launch gaps ~60%.
                          Cost = those gaps.
  host-sync               per step ~0.5 ms of GPU (elementwise, two 4096
                          bf16 matmuls, a loss) then loss.item() and 0.3 ms of
                          host bookkeeping: the GPU waits ~0.35 ms per step
                          behind the sync (all of it within the 0.5 ms
                          relaunch allowance, so sync wait): ~35% of the
                          window >= 5%, 1 sync per step >= 0.9. Gaps < 5 ms,
                          so no data-starvation.
  pageable-copies         2 x 64 MB H2D copies per step from a plain
                          (pageable) CPU tensor on a side stream, overlapping
                          GEMMs queued on the default stream (sized to ~1.25x
                          the copy time, measured at start-up): pageable cost
                          0.5 x copy time ~0.4 x kernel time beats the side
                          findings (<= 0.15 x), and copy-heavy (copies > 20%
                          of GPU time) only costs the copy time with no kernel
                          alongside, ~0 when the copies overlap.
  copy-heavy              64 MB pinned H2D, a 45 us kernel, 64 MB pinned D2H
                          per step on one stream: copies ~98% > 20% of GPU
                          time, all copy-only; no pageable copy at all.
  long-gaps               MLP training steps with two 0.75 s pauses (a
                          "checkpoint") at 1/3 and 2/3: two gaps >= 500 ms in
                          the window; ~1.5 s of ~6.5 s = 23% idle stays under
                          data-starvation's 30%, so long-gaps (cost 1.5 s)
                          leads the side findings (<= 0.75 s).
  memory-bandwidth-bound  add/mul/maximum/div of 1 GiB fp32 tensors back to
                          back (DRAM ~90% measured >= 60%, kernels ~100% >=
                          30%); four kernel names of ~25% each, so no
                          dominant-kernel finding outranks it (that one counts
                          the whole run, this one the window). Elementwise
                          runs below the power cap (measured: 493 W, no
                          clock event reasons).
  low-sm-efficiency       torch.cumsum(x, dim=1) of a 16 x 1M fp32 tensor:
                          ATen's scan_innermost_dim launches ceil(16 rows /
                          1 row per block) = 16 blocks of 512 threads, each
                          scanning a 1M row: ms-long kernels, SM efficiency
                          16/132 = 12% < 50%, kernels ~100% >= 20%.
                          Cost = kernel time x 88%.
  low-occupancy           not here: tests/e2e/rule_kernels.cu (one-warp
                          blocks with 40 KiB of shared memory, 7.8%).
  gpu-shared-nvml         MLP training steps here while a second python
                          process, started without CUDA_INJECTION64_PATH,
                          runs 8192 bf16 matmuls on the same GPU: NVML
                          per-process samples (1/s) show it using ~50% of the
                          SMs >= 5%, >= 3 samples. Cost = busy x its share.
  gpu-shared              this process and a traced child (same environment,
                          same trace directory) run MLP training steps at the
                          same time: two traced processes, same host and GPU
                          UUID, overlapping. Cost = the smaller busy time.
  incomplete-data         MLP training steps; after 60% of the time the
                          process lowers its own RLIMIT_FSIZE to the trace
                          file's size (a disk that filled up: SIGXFSZ
                          ignored, every write of the collector fails with
                          EFBIG), trains on for 40%, lets the failed flushes
                          happen, restores the limit and exits cleanly: the
                          next frame records the dropped events
                          (DROP_WRITE_FAILED) and a lost interval of ~3 s,
                          which is the finding's cost; > 1% of events lost:
                          critical. The GPU does nothing after the loss, so
                          the GPU span ends before it and no long gap shows.
                          (Drops from tiny GPSCOPE_BUFFER_KB/MAX_BUFFER_MB
                          are timing-dependent and cost 0 ns in the ranking,
                          so they cannot lead any trace that has another
                          finding.)

NVTX ranges "step N" mark every step: with >= 3 steps the steady window runs
from the second step's start to the last step's start, which keeps warm-up
and tear-down out of the ratios. Steps are kept in flight with events polled
by cudaEventQuery (not a synchronizing call, so no sync is recorded).
"""
import argparse
import collections
import glob
import json
import os
import resource
import select
import signal
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

try:
    import numpy as np
except ImportError:  # the CPU work below falls back to a plain spin
    np = None

DEV = "cuda"
SCENARIOS = [
    "healthy", "data-starvation", "launch-bound", "host-sync", "pageable-copies",
    "copy-heavy", "long-gaps", "memory-bandwidth-bound", "low-sm-efficiency",
    "gpu-shared-nvml", "gpu-shared", "incomplete-data",
]
NAME = "?"


def log(msg):
    print(f"[{NAME}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ helpers --

def spin(ms):
    """Busy host time (no GPU call, no sleep)."""
    end = time.perf_counter() + ms / 1e3
    n = 0
    while time.perf_counter() < end:
        n += 1
    return n


_rng = np.random.default_rng(0) if np is not None else None


def cpu_work(ms, out=None):
    """The CPU side of a data loader for `ms` milliseconds: decode/augment
    rows of `out` (a numpy view of a pinned batch) with numpy."""
    if np is None or out is None:
        spin(ms)
        return
    end = time.perf_counter() + ms / 1e3
    rows, r = out.shape[0], 0
    while time.perf_counter() < end:
        row = _rng.standard_normal(out.shape[1], dtype=np.float32)
        np.tanh(row, out=out[r % rows])
        r += 1


class Pacer:
    """Keeps at most `depth` steps in flight: records an event after each
    step and polls (cudaEventQuery, which gpscope does not count as a sync)
    the one `depth` steps back."""

    def __init__(self, depth=2):
        self.depth = depth
        self.events = collections.deque()

    def tick(self):
        e = torch.cuda.Event()
        e.record()
        self.events.append(e)
        while len(self.events) > self.depth:
            old = self.events.popleft()
            while not old.query():
                time.sleep(0.0002)


def run_steps(seconds, step, pacer=None, min_steps=5):
    """Calls step(i) inside NVTX ranges "step i" until `seconds` have passed
    (and at least min_steps ran). Returns the number of steps."""
    nvtx = torch.cuda.nvtx
    end = time.perf_counter() + seconds
    i = 0
    while i < min_steps or time.perf_counter() < end:
        nvtx.range_push(f"step {i}")
        step(i)
        if pacer is not None:
            pacer.tick()
        nvtx.range_pop()
        i += 1
    return i


def gpu_ms(fn, reps=3):
    """Median GPU time of fn() in ms (warm-up only: it synchronizes)."""
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def wall_ms(fn, reps=3):
    """Median wall time of fn() followed by a device sync, in ms (warm-up only)."""
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)[len(times) // 2]


def bf16(*shape, scale=1.0):
    return torch.randn(*shape, device=DEV, dtype=torch.bfloat16) * scale


class Trainer:
    """One SGD step of a bf16 MLP (1024 -> 4096 -> 4096 -> 4096 -> 1024,
    batch 4096): ~1 TFLOP, ~2 ms on an H200; no host read of any result."""

    def __init__(self, batch=4096, din=1024, width=4096, hidden_layers=3):
        layers, d = [], din
        for _ in range(hidden_layers):
            layers += [torch.nn.Linear(d, width), torch.nn.GELU()]
            d = width
        layers.append(torch.nn.Linear(d, din))
        self.model = torch.nn.Sequential(*layers).to(DEV, torch.bfloat16)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=1e-4)
        self.x = bf16(batch, din)

    def step(self, x=None):
        loss = self.model(self.x if x is None else x).float().pow(2).mean()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss

    def warm(self, n=3):
        for _ in range(n):
            self.step()
        torch.cuda.synchronize()


def wait_line(proc, want, timeout_s):
    """Waits for the line `want` on proc's stdout."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"helper process exited ({proc.returncode}) before '{want}'")
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            line = proc.stdout.readline()
            if line.strip() == want:
                return
    raise SystemExit(f"helper process did not say '{want}' within {timeout_s} s")


# ---------------------------------------------------------------- scenarios --

def healthy(args):
    a, b = bf16(8192, 8192), bf16(8192, 8192)
    c = torch.empty_like(a)
    for _ in range(3):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()

    def step(_):
        for _ in range(8):
            torch.matmul(a, b, out=c)

    return {"steps": run_steps(args.seconds, step, Pacer(2)), "matmuls_per_step": 8}


def data_starvation(args):
    host_ms = 10.0
    t = Trainer()
    # fp16 on the wire: an 8 MB copy (~0.2 ms) stays a small part of GPU time.
    host = torch.empty(4096, 1024, dtype=torch.float16).pin_memory()
    view = host.numpy() if np is not None else None
    dev = torch.empty(4096, 1024, device=DEV, dtype=torch.float16)

    def step(_):
        cpu_work(host_ms, view)  # the next batch, on the CPU: the GPU has run dry by now
        dev.copy_(host, non_blocking=True)
        t.step(dev.to(torch.bfloat16))

    for _ in range(3):
        dev.copy_(host, non_blocking=True)
        t.step(dev.to(torch.bfloat16))
    torch.cuda.synchronize()
    # No pacer: the host is the bottleneck; no sync anywhere in the loop.
    return {"steps": run_steps(args.seconds, step), "host_ms_per_step": host_ms,
            "numpy": np is not None}


def launch_bound(args):
    x = torch.zeros(1 << 16, device=DEV)
    y = torch.full_like(x, 1e-3)

    def step(_):
        for _ in range(100):
            x.mul_(0.999)
            x.add_(y)
            x.clamp_(-1.0, 1.0)

    step(0)
    torch.cuda.synchronize()
    n = run_steps(args.seconds, step)
    return {"steps": n, "launches": n * 300}


def host_sync(args):
    x = bf16(4096, 4096)
    w1, w2 = bf16(4096, 4096, scale=1 / 64), bf16(4096, 4096, scale=1 / 64)
    history = []

    def step(_):
        h = x * 0.5  # elementwise first: a plain cudaLaunchKernel opens each step
        h = F.gelu(h @ w1)
        h = h @ w2
        loss = h.float().square().mean()
        history.append(loss.item())  # D2H copy + cudaStreamSynchronize: the GPU runs dry
        spin(0.3)  # per-step bookkeeping on the host while the GPU waits

    for _ in range(3):
        step(0)
    n = run_steps(args.seconds, step)
    return {"steps": n, "items": len(history)}


def pageable_copies(args):
    n_copy = 2
    src = torch.randn(16 << 20)  # 64 MB, a plain CPU tensor: pageable
    dst = torch.empty(16 << 20, device=DEV)
    side = torch.cuda.Stream()
    a, b = bf16(4096, 4096), bf16(4096, 4096)
    c = torch.empty_like(a)

    def copies():
        with torch.cuda.stream(side):
            for _ in range(n_copy):
                dst.copy_(src, non_blocking=True)

    copies()
    torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    copy_ms = wall_ms(copies)
    mm_ms = gpu_ms(lambda: [torch.matmul(a, b, out=c) for _ in range(10)]) / 10
    # Enough queued GEMM work to cover the copies (the DMA overlaps it), not
    # so much that the GEMMs' side findings outweigh the copies.
    n_mm = max(2, round(1.25 * copy_ms / max(mm_ms, 1e-3)))

    def step(_):
        for _ in range(n_mm):
            torch.matmul(a, b, out=c)  # queued on the default stream
        copies()  # the host stages each pageable copy; its DMA overlaps the GEMMs

    n = run_steps(args.seconds, step, Pacer(2))
    return {"steps": n, "copies": n * n_copy, "copy_ms_per_step": round(copy_ms, 3),
            "matmul_ms": round(mm_ms, 4), "matmuls_per_step": n_mm}


def copy_heavy(args):
    n = 16 << 20  # 64 MB of fp32
    hin = torch.randn(n).pin_memory()
    hout = torch.empty(n).pin_memory()
    d = torch.empty(n, device=DEV)

    def step(_):
        d.copy_(hin, non_blocking=True)
        d.mul_(1.0001)
        hout.copy_(d, non_blocking=True)

    step(0)
    torch.cuda.synchronize()
    return {"steps": run_steps(args.seconds, step, Pacer(3)), "bytes_per_copy": 4 * n}


def long_gaps(args):
    pause_s = 0.75
    t = Trainer()
    t.warm()
    pauses = [args.seconds / 3, 2 * args.seconds / 3]  # of work time
    state = {"work_start": None, "paused": 0.0, "done": 0}

    def step(_):
        now = time.perf_counter()
        if state["work_start"] is None:
            state["work_start"] = now
        worked = now - state["work_start"] - state["paused"]
        if state["done"] < len(pauses) and worked >= pauses[state["done"]]:
            t0 = time.perf_counter()
            time.sleep(pause_s)  # "checkpoint": the GPU drains and idles
            state["paused"] += time.perf_counter() - t0
            state["done"] += 1
        t.step()

    n = run_steps(args.seconds + len(pauses) * pause_s, step, Pacer(2))
    return {"steps": n, "pauses": state["done"], "pause_s": pause_s}


def memory_bandwidth_bound(args):
    n = 1 << 28  # 1 GiB of fp32 each
    x = torch.rand(n, device=DEV) + 0.5
    y = torch.rand(n, device=DEV) + 0.5
    z = torch.empty(n, device=DEV)

    def step(_):
        torch.add(x, y, out=z)
        torch.mul(x, y, out=z)
        torch.maximum(x, y, out=z)
        torch.div(x, y, out=z)

    step(0)
    torch.cuda.synchronize()
    return {"steps": run_steps(args.seconds, step, Pacer(2)), "bytes_per_tensor": 4 * n}


def low_sm_efficiency(args):
    x = torch.randn(16, 1 << 20, device=DEV)
    y = torch.empty_like(x)

    def step(_):
        for _ in range(4):
            torch.cumsum(x, dim=1, out=y)  # 16 blocks: one row of 1M per block

    step(0)
    torch.cuda.synchronize()
    scan_ms = gpu_ms(lambda: torch.cumsum(x, dim=1, out=y))
    return {"steps": run_steps(args.seconds, step, Pacer(2)), "cumsum_ms": round(scan_ms, 3)}


OTHER = r"""
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
c = torch.empty_like(a)
for _ in range(3):
    torch.matmul(a, a, out=c)
torch.cuda.synchronize()
print("ready", flush=True)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(10):
        torch.matmul(a, a, out=c)
    torch.cuda.synchronize()
"""


def gpu_shared_nvml(args):
    # The neighbour: no gpscope in its environment.
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUDA_INJECTION64_PATH", "LD_PRELOAD", "NVTX_INJECTION64_PATH")}
    other = subprocess.Popen([sys.executable, "-c", OTHER, str(args.seconds + 120)], env=env,
                             stdout=subprocess.PIPE, text=True)
    try:
        t = Trainer()
        t.warm()
        wait_line(other, "ready", 120)
        n = run_steps(args.seconds, lambda _: t.step(), Pacer(2))
        torch.cuda.synchronize()
    finally:
        other.terminate()
        try:
            other.wait(15)
        except subprocess.TimeoutExpired:
            other.kill()
            other.wait()
    return {"steps": n, "other_pid": other.pid}


def gpu_shared(args):
    # The child is traced like this process: same environment, same GPSCOPE_OUTPUT.
    child = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--scenario", "gpu-shared-child",
         "--seconds", str(args.seconds)],
        env=dict(os.environ), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        t = Trainer()
        t.warm()
        wait_line(child, "ready", 120)
        child.stdin.write("go\n")
        child.stdin.flush()
        n = run_steps(args.seconds, lambda _: t.step(), Pacer(2))
        torch.cuda.synchronize()
        rc = child.wait(args.seconds + 120)
    except BaseException:
        child.kill()
        child.wait()
        raise
    if rc != 0:
        raise SystemExit(f"traced child exited {rc}")
    return {"steps": n, "child_pid": child.pid}


def gpu_shared_child(args):
    t = Trainer()
    t.warm()
    print("ready", flush=True)
    sys.stdin.readline()  # "go"
    n = run_steps(args.seconds, lambda _: t.step(), Pacer(2))
    torch.cuda.synchronize()
    log(f"child: {n} steps")
    return None


def incomplete_data(args):
    # A disk that fills up mid-run: the collector's writes fail with EFBIG
    # (SIGXFSZ ignored, so nothing else happens to the process) and the
    # trace records the loss once it can write again.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    out_dir = os.environ.get("GPSCOPE_OUTPUT")
    flush_s = int(os.environ.get("GPSCOPE_FLUSH_INTERVAL_MS", "2000")) / 1e3
    t = Trainer()
    t.warm()
    n = run_steps(0.6 * args.seconds, lambda _: t.step(), Pacer(2))
    files = glob.glob(os.path.join(out_dir, "*.gpscope")) if out_dir else []
    if not files:
        raise SystemExit("incomplete-data needs GPSCOPE_OUTPUT with the trace file in it")
    size = max(os.path.getsize(f) for f in files)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    t_full = time.perf_counter()
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        pacer = Pacer(2)
        end = time.perf_counter() + 0.4 * args.seconds
        lost_steps = 0
        while time.perf_counter() < end:
            t.step()
            pacer.tick()
            lost_steps += 1
        torch.cuda.synchronize()
        # Let the periodic flushes hand over (and fail to write) every record
        # of the GPU work above, so that nothing of it lands after the limit
        # goes back up (it would open a long gap in the GPU timeline).
        time.sleep(max(1.0, 5 * flush_s))
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    full_s = time.perf_counter() - t_full
    time.sleep(max(0.6, 3 * flush_s))  # a normal frame lands with the loss in it
    return {"steps": n, "steps_while_full": lost_steps, "disk_full_s": round(full_s, 2),
            "trace_bytes_at_limit": size}


RUN = {
    "healthy": healthy, "data-starvation": data_starvation, "launch-bound": launch_bound,
    "host-sync": host_sync, "pageable-copies": pageable_copies, "copy-heavy": copy_heavy,
    "long-gaps": long_gaps, "memory-bandwidth-bound": memory_bandwidth_bound,
    "low-sm-efficiency": low_sm_efficiency,
    "gpu-shared-nvml": gpu_shared_nvml, "gpu-shared": gpu_shared,
    "gpu-shared-child": gpu_shared_child, "incomplete-data": incomplete_data,
}


def main():
    global NAME
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", required=True, choices=sorted(RUN))
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    NAME = args.scenario
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device for PyTorch")
    # Create the CUDA context first: the collector starts at cuInit and points
    # NVTX at CUPTI, which NVTX reads at the first range.
    torch.zeros(1, device=DEV)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    result = RUN[args.scenario](args)
    torch.cuda.synchronize()
    if result is not None:
        result.update(scenario=args.scenario, wall_s=round(time.perf_counter() - t0, 2),
                      device=torch.cuda.get_device_name(), torch=torch.__version__)
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
