"""Facts about the traces in a directory, from `gpscope-analyze info --format json`,
for the GPU shell suites (tests/e2e/hardening_gpu.sh).

  python3 trace_facts.py ANALYZE DIR
Prints one JSON object: processes (count), kernels, api_calls (all processes), dropped
({reason: count}, all DropNotices), events_dropped (sum of the end records), ends
[{reason, signal, flush_timed_out}], missing_ends (processes without one), refusals
[{api, caller, count}], files (count), warnings (reader warnings).
"""
import glob
import json
import subprocess
import sys


def main():
    analyze, d = sys.argv[1], sys.argv[2]
    files = sorted(glob.glob(d + "/*.gpscope"))
    facts = {"files": len(files), "processes": 0, "kernels": 0, "api_calls": 0, "dropped": {},
             "events_dropped": 0, "ends": [], "missing_ends": 0, "refusals": [], "warnings": 0}
    if files:
        p = subprocess.run([analyze, "info", "--format", "json"] + files, capture_output=True,
                           text=True)
        facts["warnings"] = len([l for l in p.stderr.splitlines() if l.strip()])
        info = json.loads(p.stdout) if p.stdout.strip() else {"processes": []}
        for proc in info.get("processes", []):
            facts["processes"] += 1
            ev = proc.get("events", {})
            facts["kernels"] += ev.get("kernels", 0)
            facts["api_calls"] += ev.get("api_calls", 0)
            for reason, n in proc.get("dropped", {}).items():
                facts["dropped"][reason] = facts["dropped"].get(reason, 0) + n
            end = proc.get("end")
            if proc.get("clean_exit") and end:
                facts["ends"].append({"reason": end.get("reason"), "signal": end.get("signal"),
                                      "flush_timed_out": end.get("flush_timed_out")})
                facts["events_dropped"] += end.get("events_dropped", 0)
            else:
                facts["missing_ends"] += 1
            for r in proc.get("cupti_refusals", []):
                facts["refusals"].append({"api": r["api"], "caller": r["caller"],
                                          "count": r["count"]})
    print(json.dumps(facts))


if __name__ == "__main__":
    main()
