"""Checks the trace of bench/workloads/torch_train.py (--mode train).

  python3 check_torch.py GPSCOPE_ANALYZE TRACE_DIR STEPS SYNC_EVERY [--allow-no-end]"""
import collections
import os
import sys

from trace_dump import Checker, Trace


def main():
    analyze, trace_dir, steps, sync_every = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    t = Trace(analyze, trace_dir)
    c = Checker("torch_train")
    c.eq("reader warnings", t.warnings, [])
    c.true("one traced process", len(t["process"]) == 1, f"({len(t['process'])})")
    c.true("clean end chunk", len(t["end"]) == 1)
    kernels = t["kernel"]
    c.true("kernels: >= 10 per step", len(kernels) >= 10 * steps, f"({len(kernels)})")
    names = collections.Counter(k["name"] for k in kernels)
    c.true("GEMM kernels present", any("gemm" in n.lower() or "gemm" in n or "sm90" in n for n in names),
           f"(top: {names.most_common(3)})")
    cp = collections.Counter((m["copy_kind"], m["src_kind"]) for m in t["memcpy"])
    c.true("pinned H2D per step", cp[("HTOD", "PINNED")] >= steps, f"({cp[('HTOD', 'PINNED')]})")
    c.true("pageable H2D per step", cp[("HTOD", "PAGEABLE")] >= steps, f"({cp[('HTOD', 'PAGEABLE')]})")
    c.true("D2H for loss.item()", sum(v for (k, _), v in cp.items() if k == "DTOH") >= steps // sync_every,
           f"({dict(cp)})")
    if os.environ.get("GPSCOPE_SYNC") == "0":  # the kind left off: the API rows hold the syncs
        c.eq("synchronization records (GPSCOPE_SYNC=0)", len(t["sync"]), 0)
        c.true("sync API records", sum(1 for a in t["api"] if "Synchronize" in a["name"]) >= steps,
               f"({sum(1 for a in t['api'] if 'Synchronize' in a['name'])})")
    else:
        c.true("synchronization records", len(t["sync"]) >= steps, f"({len(t['sync'])})")
    c.true("launch API records", sum(1 for a in t["api"] if "Launch" in a["name"]) >= 10 * steps)
    ranges = [r for r in t["nvtx_range"] if r["name"].startswith("step ")]
    c.eq("NVTX step ranges", len(ranges), steps)
    c.eq("drops", t["drop"], [])
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
