"""Checks the metrics the collector sampled during metrics_workload.py
(issue 4's "must show"), phase by phase, and prints the averages.

usage: check_metrics.py ANALYZE_BIN TRACE_DIR OTHER_PID_FILE
"""
import collections
import json
import sys

from trace_dump import Checker, Trace

SETTLE_NS = 600_000_000  # skip the start of a phase: rates cover the previous interval


def main():
    analyze, trace_dir, other_pid_file = sys.argv[1:4]
    t = Trace(analyze, trace_dir)
    c = Checker("metrics")
    other_pid = int(open(other_pid_file).read().strip())

    desc = {d["id"]: d for d in t["metric_descriptor"]}
    series = collections.defaultdict(list)  # (name, device, metric_pid) -> [(ts, value)]
    for m in t["metric"]:
        d = desc.get(m["metric"])
        if d is None:
            c.true("every sample has a descriptor", False, f"metric id {m['metric']}")
            continue
        series[(d["name"], d["device"], d["metric_pid"])].append((m["timestamp_ns"], m["value"]))
    names = sorted({k[0] for k in series})
    print("metrics seen:", ", ".join(names))

    phases = {r["name"]: (r["start_ns"], r["end_ns"]) for r in t["nvtx_range"]}
    for p in ("idle", "matmul_bf16", "elementwise", "shared"):
        c.true(f"phase {p} found as an NVTX range", p in phases)
    if c.failures:
        return c.finish()

    def values(name, phase, pid=None, device=0):
        lo, hi = phases[phase]
        out = []
        for (n, dev, mpid), pts in series.items():
            if n != name or dev != device or (pid is not None and mpid != pid):
                continue
            out += [v for ts, v in pts if lo + SETTLE_NS <= ts <= hi]
        return out

    def avg(name, phase, pid=None):
        v = values(name, phase, pid)
        return sum(v) / len(v) if v else float("nan")

    table = ["gpm.sm_util", "gpm.sm_occupancy", "gpm.tensor_util", "gpm.dram_bw_util",
             "nvml.gpu_util", "nvml.sm_clock_mhz", "nvml.power_w", "nvml.temperature_c"]
    print(f"{'phase':<12}" + "".join(f"{n:>20}" for n in table))
    for p in ("idle", "matmul_bf16", "elementwise", "shared"):
        print(f"{p:<12}" + "".join(f"{avg(n, p):>20.1f}" for n in table))

    c.true("matmul_bf16: gpm.sm_util > 80%", avg("gpm.sm_util", "matmul_bf16") > 80,
           f"{avg('gpm.sm_util', 'matmul_bf16'):.1f}")
    c.true("matmul_bf16: gpm.tensor_util > 50%", avg("gpm.tensor_util", "matmul_bf16") > 50,
           f"{avg('gpm.tensor_util', 'matmul_bf16'):.1f}")
    c.true("elementwise: gpm.dram_bw_util > 50%", avg("gpm.dram_bw_util", "elementwise") > 50,
           f"{avg('gpm.dram_bw_util', 'elementwise'):.1f}")
    c.true("elementwise: gpm.tensor_util < 10%", avg("gpm.tensor_util", "elementwise") < 10,
           f"{avg('gpm.tensor_util', 'elementwise'):.1f}")
    for n in ("gpm.sm_util", "gpm.dram_bw_util", "gpm.tensor_util", "nvml.gpu_util"):
        c.true(f"idle: {n} < 5%", avg(n, "idle") < 5, f"{avg(n, 'idle'):.2f}")
    sm_mhz = values("nvml.sm_clock_mhz", "matmul_bf16")
    c.true("matmul: SM clock 500..2500 MHz", sm_mhz and all(500 <= v <= 2500 for v in sm_mhz),
           f"{min(sm_mhz or [0]):.0f}..{max(sm_mhz or [0]):.0f}")
    power = values("nvml.power_w", "matmul_bf16")
    limit = values("nvml.power_limit_w", "matmul_bf16")
    c.true("matmul: power 50 W..limit", power and limit and
           all(50 <= v <= 1.05 * max(limit) for v in power),
           f"{min(power or [0]):.0f}..{max(power or [0]):.0f} W, limit {max(limit or [0]):.0f} W")
    c.true("idle power below matmul power", avg("nvml.power_w", "idle") < avg("nvml.power_w", "matmul_bf16"),
           f"{avg('nvml.power_w', 'idle'):.0f} < {avg('nvml.power_w', 'matmul_bf16'):.0f} W")
    temp = values("nvml.temperature_c", "matmul_bf16")
    c.true("temperature 15..100 C", temp and all(15 <= v <= 100 for v in temp),
           f"{min(temp or [0]):.0f}..{max(temp or [0]):.0f}")
    mem = values("nvml.memory_used_bytes", "elementwise")
    c.true("memory used > 3 GiB with 3 GiB of tensors", mem and min(mem) > 3 * 2**30,
           f"{min(mem or [0]) / 2**30:.1f} GiB")

    other = values("nvml.process_sm_util", "shared", pid=other_pid)
    c.true(f"second process (pid {other_pid}) in per-process SM utilization during 'shared'",
           other and max(other) > 10, f"max {max(other or [0]):.0f}%, {len(other)} samples")
    other_mem = values("nvml.process_memory_bytes", "shared", pid=other_pid)
    c.true("second process's GPU memory seen", other_mem and max(other_mem) > 2**28,
           f"{max(other_mem or [0]) / 2**20:.0f} MiB")

    cost = [v for (n, _, _), pts in series.items() if n == "gpscope.sampler_cpu_pct" for _, v in pts]
    mean_cost = sum(cost) / len(cost) if cost else float("nan")
    c.true("sampler cost < 1% of one core (gpscope.sampler_cpu_pct, mean)", cost and mean_cost < 1.0,
           f"{mean_cost:.3f}% over {len(cost)} samples, max {max(cost or [0]):.3f}%")
    for n in ("host.process_cpu_user_pct", "host.cpu_util_pct", "host.rss_bytes", "host.thread_cpu_pct"):
        c.true(f"{n} sampled", any(k[0] == n for k in series))
    ring = [d for d in t["drop"] if d["reason"] == "RING_FULL"]
    c.eq("metric samples dropped", sum(d["count"] for d in ring), 0)
    unavailable = [(n["component"], n["reason"]) for n in t["capability"] if not n.get("available")]
    print("unavailable:", json.dumps(unavailable))
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
