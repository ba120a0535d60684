"""Checks one ddp_gpu.sh variant from `gpscope-analyze summary --format json` and
`gpscope-analyze report --data-only` (issue 9). Prints PASS/FAIL and the evidence
(per-rank numbers, alignment, straggler); exits 1 on any failed check.

  check_ddp.py --summary S.json --report-data R.json --variant straggler --rc 0 --world 2
               --planted 1 --straggle-ms 30 --end-spread-us 100 --files 1 [--app-err E]
"""
import argparse
import json
import sys

from fmt import t  # tests/e2e/fmt.py, beside this script


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--summary", required=True)
    p.add_argument("--report-data", required=True)
    p.add_argument("--variant", required=True)
    p.add_argument("--rc", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--planted", type=int, default=-1)
    p.add_argument("--straggle-ms", type=float, default=0)
    p.add_argument("--end-spread-us", type=float, default=100)
    p.add_argument("--files", type=int, required=True)
    p.add_argument("--steps", type=int, default=0)
    p.add_argument("--app-err", default="")
    a = p.parse_args()

    failed, lines = [], []

    def check(ok, what):
        if not ok:
            failed.append(what)
        return ok

    check(a.rc == 0, f"torchrun exit code {a.rc}, expected 0")
    check(a.files == 1, f"{a.files} trace files in the output folder, expected 1 (one per node)")
    try:
        with open(a.summary) as fh:
            d = json.load(fh)
    except (OSError, ValueError) as err:
        print(f"FAIL {a.variant}: no summary ({err}); rc={a.rc}")
        return 1

    # Every rank in the one file, identified, complete.
    for f in d["files"]:
        check(f["error"] is None and f["damaged_regions"] == 0 and not f["truncated"],
              f"file {f['path']}: error={f['error']} damaged={f['damaged_regions']} "
              f"truncated={f['truncated']}")
    procs = d["processes"]
    ids = sorted((pr["identity"]["rank"], pr["identity"]["local_rank"], pr["identity"]["world_size"],
                  pr["identity"]["job_id"], pr["pid"]) for pr in procs)
    check([i[0] for i in ids] == list(range(a.world)),
          f"ranks in the trace {[i[0] for i in ids]}, expected 0..{a.world - 1}")
    check(all(i[1] == i[0] for i in ids), "local rank != rank on one node")
    check(all(i[2] == a.world for i in ids), f"world sizes {[i[2] for i in ids]}")
    jobs = {i[3] for i in ids}
    check(len(jobs) == 1 and "" not in jobs, f"job ids {sorted(jobs)}: expected one, non-empty")
    for pr in procs:
        c = pr["completeness"]
        check(c["dropped_total"] == 0 and c["lost_frames"] == 0 and c["undecodable_batches"] == 0
              and c["clean_exit"], f"pid {pr['pid']}: dropped {c['dropped_total']}, lost frames "
              f"{c['lost_frames']}, undecodable {c['undecodable_batches']}, clean exit "
              f"{c['clean_exit']}")
    lines.append(f"{len(procs)} processes in {a.files} file(s), job {sorted(jobs)}, "
                 f"pids {[i[4] for i in ids]}")

    # NCCL kernels are communication; matched across ranks; overlap per rank.
    r = d["ranks"]
    rows = r["rows"]
    check(len(rows) == a.world, f"{len(rows)} rank rows, expected {a.world}")
    for row in rows:
        check(row["comm_busy_ns"] > 0, f"{row['label']}: no communication kernels")
        check(row["collectives"] > 0, f"{row['label']}: no matched collectives")
        check(row["comm_overlap"] is not None, f"{row['label']}: no comm/compute overlap")
        lines.append(
            f"{row['label']}: step P50 {t(row['step_p50_ns'])} ({row['step_source']}), compute "
            f"{t(row['compute_busy_ns'])}, comm {t(row['comm_busy_ns'])}, overlap "
            f"{100 * (row['comm_overlap'] or 0):.1f}%, wait {t(row['wait_ns'])}, late "
            f"{row['mean_late_ns'] / 1e6:+.3f} ms, last {100 * row['last_share']:.0f}%, clock "
            f"offset {row['clock_offset_ns']} ns drift {t(row['clock_drift_ns'])} "
            f"({row['clock_snapshots']} snapshots)")
    for g in d["gpus"]:
        kinds = ", ".join(f"{c['kind']} x{c['count']}" for c in g["communication"]["collectives"])
        lines.append(f"GPU {g['device_id']} of pid {g['pid']}: communication kernels "
                     f"{g['communication']['kernels']} ({kinds})")
    check(r["matched_collectives"] >= max(1, a.steps),
          f"{r['matched_collectives']} collectives matched, expected >= {max(1, a.steps)}")

    # Alignment: all ranks leave a collective together.
    tol = a.end_spread_us * 1000
    lines.append(f"alignment: {r['matched_collectives']} matched collectives, end spread median "
                 f"{t(r['end_spread_ns'])}, P95 {t(r['end_spread_p95_ns'])}, max "
                 f"{t(r['end_spread_max_ns'])} (tolerance: median <= {t(tol)}, P95 <= "
                 f"{t(2 * tol)})")
    check(r["matched_collectives"] > 0 and r["end_spread_ns"] <= tol,
          f"collective end spread median {t(r['end_spread_ns'])} > {t(tol)}")
    check(r["end_spread_p95_ns"] <= 2 * tol,
          f"collective end spread P95 {t(r['end_spread_p95_ns'])} > {t(2 * tol)}")

    # Straggler: the planted rank, or none.
    straggler_findings = [f for f in d["findings"] if f["rule"] == "straggler-rank"]
    named = rows[r["straggler"]]["rank"] if r["straggler"] is not None else None
    if a.planted >= 0:
        check(named == a.planted, f"straggler named: {named}, planted: rank {a.planted}")
        check(len(straggler_findings) == 1, f"{len(straggler_findings)} straggler-rank findings")
        if straggler_findings:
            f = straggler_findings[0]
            ev = {e["key"]: e["value"] for e in f["evidence"]}
            check(f["severity"] == "warning", f"straggler-rank severity {f['severity']}")
            # Only a step's first collective waits for the late rank (the rest queue
            # behind it on NCCL's stream), so the planted host time shows in the
            # others' wait per step, not in the mean lateness per collective.
            wait = ev.get("others_wait_per_step_ns", 0)
            check(wait >= 0.5 * a.straggle_ms * 1e6,
                  f"the others wait {t(wait)} per step for it, < half the planted "
                  f"{a.straggle_ms} ms")
            lines.append(f"finding #{d['findings'].index(f) + 1}: {f['summary']}")
    else:
        check(named is None and not straggler_findings,
              f"balanced run names a straggler: rank {named}")
    lines.append("findings: " + (" | ".join(f"{f['rule']} ({f['severity']}, {t(f['cost_ns'])})"
                                            for f in d["findings"][:5]) or "none"))

    # The report: one timeline, ranks stacked in rank order.
    try:
        with open(a.report_data) as fh:
            rd = json.load(fh)
        labels = [g["label"] for g in rd["timeline"]["groups"] if g["kind"] == "process"]
        want = [f"rank {k} " for k in range(a.world)]
        check(len(labels) == a.world and all(l.startswith(w) for l, w in zip(labels, want)),
              f"report process lanes {labels}, expected ranks 0..{a.world - 1} in order")
        lines.append(f"report lanes: {labels}")
    except (OSError, ValueError, KeyError) as err:
        check(False, f"no report data ({err})")
    if a.variant == "launcher" and a.app_err:
        with open(a.app_err, errors="replace") as fh:
            err_text = fh.read()
        check("gpscope: report:" in err_text, "gpscope run printed no report line")

    print(f"{'FAIL' if failed else 'PASS'} {a.variant}")
    for line in lines:
        print(f"     {line}")
    for what in failed:
        print(f"     failed: {what}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
