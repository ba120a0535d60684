"""Checks the trace of tests/e2e/workload.cu event for event.

  python3 check_workload.py GPSCOPE_ANALYZE TRACE_DIR [label]

The numbers mirror the constants at the top of workload.cu."""
import collections
import os
import sys

from trace_dump import Checker, Trace

A, B, THREADS, C_PER_THREAD, REPLAYS = 1000, 500, 4, 250, 20
DRIVER_H2D, DRIVER_MEMSETS = 4, 2
MiB = 1 << 20


def main():
    analyze, trace_dir = sys.argv[1], sys.argv[2]
    label = sys.argv[3] if len(sys.argv) > 3 else "workload"
    t = Trace(analyze, trace_dir)
    c = Checker(label)
    procs = t["process"]
    c.eq("processes in trace", len(procs), 1)
    c.true("process has a clean end", len(t["end"]) == 1)
    c.eq("reader warnings", t.warnings, [])

    kernels = t["kernel"]
    by_name = collections.Counter(k["name"] for k in kernels)
    names = {n: n for n in by_name}

    def find(sub):
        hits = [n for n in names if sub in n]
        return hits[0] if len(hits) == 1 else None

    ka, kb, kc = find("gpscope_e2e_kernel_a"), find("gpscope_e2e_kernel_b"), find("gpscope_e2e_kernel_c")
    g1, g2 = find("gpscope_e2e_graph_k1"), find("gpscope_e2e_graph_k2")
    c.eq("kernel_a count", by_name.get(ka, 0), A)
    c.eq("kernel_b count", by_name.get(kb, 0), B)
    c.eq("kernel_c count", by_name.get(kc, 0), THREADS * C_PER_THREAD)
    c.eq("graph_k1 count", by_name.get(g1, 0), REPLAYS)
    c.eq("graph_k2 count", by_name.get(g2, 0), REPLAYS)
    c.eq("total kernels", len(kernels), A + B + THREADS * C_PER_THREAD + 2 * REPLAYS)
    c.true("mangled names kept", kb is not None and kb.startswith("_Z"), f"({kb})")
    shape = lambda n: {(tuple(k["grid"]), tuple(k["block"])) for k in kernels if k["name"] == n}
    c.eq("kernel_a grid/block", shape(ka), {((4, 1, 1), (128, 1, 1))})
    c.eq("kernel_b grid/block", shape(kb), {((2, 3, 1), (64, 2, 1))})
    c.eq("kernel_c grid/block", shape(kc), {((1, 1, 1), (32, 1, 1))})
    c.true("graph kernels carry a graph id",
           all(k["graph_id"] != 0 for k in kernels if k["name"] in (g1, g2)))
    c.true("non-graph kernels have no graph id",
           all(k["graph_id"] == 0 for k in kernels if k["name"] in (ka, kb, kc)))
    streams = lambda n: {k["stream"] for k in kernels if k["name"] == n}
    c.eq("kernel_c streams (one per thread)", len(streams(kc)), THREADS)
    c.true("kernel_a and kernel_b on different streams", not (streams(ka) & streams(kb)))
    c.true("kernel timestamps sane", all(0 < k["start_ns"] < k["end_ns"] for k in kernels))

    cp = collections.Counter((m["copy_kind"], m["src_kind"], m["dst_kind"], m["bytes"]) for m in t["memcpy"])
    c.eq("pageable H2D 1 MiB", cp[("HTOD", "PAGEABLE", "DEVICE", MiB)], 10)
    c.eq("pinned H2D 4 MiB", cp[("HTOD", "PINNED", "DEVICE", 4 * MiB)], 5)
    c.eq("pinned D2H 2 MiB", cp[("DTOH", "DEVICE", "PINNED", 2 * MiB)], 5)
    c.eq("pageable D2H 1 MiB", cp[("DTOH", "DEVICE", "PAGEABLE", MiB)], 3)
    c.eq("pageable D2H 4 B", cp[("DTOH", "DEVICE", "PAGEABLE", 4)], 1)
    c.eq("pinned H2D 1 MiB (cuMemcpyHtoDAsync)", cp[("HTOD", "PINNED", "DEVICE", MiB)], DRIVER_H2D)
    c.eq("total memcpys", len(t["memcpy"]), 24 + DRIVER_H2D)
    c.true("async flag on cudaMemcpyAsync copies",
           all(m["async"] for m in t["memcpy"] if m["src_kind"] == "PINNED" or m["dst_kind"] == "PINNED"))
    ms = collections.Counter(m["bytes"] for m in t["memset"])
    c.eq("memsets 256 KiB", ms[256 << 10], 3 + DRIVER_MEMSETS)
    c.eq("total memsets", len(t["memset"]), 6 + DRIVER_MEMSETS)

    sy = collections.Counter(s["sync_kind"] for s in t["sync"])
    if os.environ.get("GPSCOPE_SYNC") == "0":  # the kind left off: the API records below count them
        c.eq("synchronization records (GPSCOPE_SYNC=0)", len(t["sync"]), 0)
    else:
        c.eq("context syncs (cudaDeviceSynchronize)", sy["CONTEXT_SYNCHRONIZE"], 2)
        c.eq("stream syncs", sy["STREAM_SYNCHRONIZE"], 1 + THREADS + 1)  # + cuStreamSynchronize
        c.eq("event syncs", sy["EVENT_SYNCHRONIZE"], 1)

    api = collections.Counter(a["name"] for a in t["api"])
    launches = sum(v for n, v in api.items() if n.startswith("cudaLaunchKernel"))
    c.eq("cudaLaunchKernel records", launches, A + B + THREADS * C_PER_THREAD + 2)
    c.eq("cudaGraphLaunch records", sum(v for n, v in api.items() if n.startswith("cudaGraphLaunch")), REPLAYS)
    c.eq("cudaDeviceSynchronize records", sum(v for n, v in api.items() if n.startswith("cudaDeviceSynchronize")), 2)
    # The driver-API phase: each call recorded once, each copy/memset matched
    # to its call by correlation id (the runtime's calls add no driver records).
    drv = lambda prefix: [a for a in t["api"] if a["name"].startswith(prefix)]
    c.eq("cuMemcpyHtoDAsync records", len(drv("cuMemcpyHtoDAsync")), DRIVER_H2D)
    c.eq("cuMemsetD32Async records", len(drv("cuMemsetD32Async")), DRIVER_MEMSETS)
    c.eq("cuMemAlloc / cuMemFree records", (len(drv("cuMemAlloc")), len(drv("cuMemFree"))), (1, 1))
    c.eq("cuStreamSynchronize records", len(drv("cuStreamSynchronize")), 1)
    ops = {m["correlation"] for m in t["memcpy"]} | {m["correlation"] for m in t["memset"]}
    c.true("driver copies and memsets match their GPU ops",
           all(a["correlation"] in ops for a in drv("cuMemcpyHtoDAsync") + drv("cuMemsetD32Async")))
    c.eq("cuMemcpy records beyond the driver phase (runtime copies traced twice?)",
         len(drv("cuMemcpy")) - DRIVER_H2D, 0)
    corr = {a["correlation"] for a in t["api"]}
    c.true("every non-graph kernel matches a launch call by correlation id",
           all(k["correlation"] in corr for k in kernels if k["graph_id"] == 0))
    threads = {a["thread"] for a in t["api"] if a["name"].startswith("cudaLaunchKernel")}
    c.true("launches seen on >= 5 threads", len(threads) >= 1 + THREADS, f"({len(threads)})")

    steps = [r for r in t["nvtx_range"] if r["name"] == "gpscope_e2e_step"]
    c.eq("NVTX step ranges", len(steps), 5)
    c.eq("NVTX marks", len([m for m in t["nvtx_mark"] if m["name"] == "gpscope_e2e_mark"]), 1)
    c.eq("drops", [d for d in t["drop"]], [])
    devs = t["device"]
    c.true("device record present", len(devs) >= 1 and devs[0]["sm_count"] > 0,
           f"({devs[0]['name'] if devs else None})")
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
