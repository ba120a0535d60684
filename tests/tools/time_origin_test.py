#!/usr/bin/env python3
"""tests/tools/time_origin_test.py: one time origin for every output (issue 18).

  time_origin_test.py ANALYZE_BIN TRACE...

For each recorded trace it runs `summary` (text and JSON), `report
--data-only --no-compress`, `export` and `dump`, and checks that
  - all of them name the same time origin (the earliest event of all files
    on the common timebase);
  - the same event has the same time in each: every finding's WHERE range
    that starts at an event (found in the dump by pid and CUPTI start) has
    the dump's t_ns as the summary JSON's offset_ns, as the summary text's
    "+S.SSS s" (top-level findings: grouped ones show no WHERE), as a start in the report's timeline lanes, and as an
    export event's ts (microseconds); and so has the first kernel of every
    process;
  - at least one finding range matched an event (so the check cannot pass
    empty).
Exit 0 when all hold; 1 with one line per failure; 2 on bad usage.
"""
import base64
import json
import subprocess
import sys


def run(args):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode not in (0, 1):
        raise SystemExit("FAIL %s exited %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


def varints(data, offset, length):
    out, value, shift = [], 0, 0
    for b in data[offset:offset + length]:
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            out.append(value)
            value, shift = 0, 0
    return out


def report_starts(report):
    """Every timeline event start (report ns) of the report's data."""
    timeline = report["timeline"]
    blob = base64.b64decode(timeline["blob"]["data"])
    starts = set()
    for lane in timeline["lanes"]:
        ref = lane.get("cols", {}).get("start")
        if not ref:
            continue
        t = 0
        for d in varints(blob, ref[0], ref[1]):
            t += d
            starts.add(t)
    return starts


def check(bin_, trace, failures):
    summary = json.loads(run([bin_, "summary", "--format", "json", trace]))
    text = run([bin_, "summary", trace])
    out = "/tmp/time_origin_test_report.json"
    run([bin_, "report", "--data-only", "--no-compress", "-o", out, trace])
    report = json.load(open(out))
    export = json.loads(run([bin_, "export", trace]))
    dump = [json.loads(l) for l in run([bin_, "dump", trace]).splitlines() if l.strip()]

    origin = summary["time_origin"]
    names = {
        "report": report["t0_realtime_ns"],
        "export": str(export["metadata"]["gpscope_time_origin"]["realtime_ns"]),
        "dump": str(dump[0]["realtime_ns"]) if dump and dump[0]["type"] == "time_origin" else None,
    }
    for where, value in names.items():
        if value != origin["realtime_ns"]:
            failures.append("%s: %s names origin %s, summary %s" % (trace, where, value,
                                                                   origin["realtime_ns"]))
    if origin["utc"] not in text:
        failures.append("%s: the summary text does not print the origin %s" % (trace, origin["utc"]))

    by_start = {}
    first_kernel = {}
    for e in dump:
        if "t_ns" not in e:
            continue
        by_start.setdefault((e["pid"], e.get("start_ns", e.get("timestamp_ns"))), e)
        if e["type"] == "kernel" and e["pid"] not in first_kernel:
            first_kernel[e["pid"]] = e
    starts = report_starts(report)
    export_ts = {(e.get("pid"), e.get("ts")) for e in export["traceEvents"] if e.get("ph") != "M"}
    pid_of = {p["uid"]: p["pid"] for p in summary.get("processes", []) if "uid" in p}

    def same_everywhere(what, pid, t_ns):
        if t_ns not in starts:
            failures.append("%s: %s at %d ns: not a start in the report's timeline" % (trace, what, t_ns))
        ts = float("%.3f" % (t_ns / 1000.0))
        if (pid, ts) not in export_ts:
            failures.append("%s: %s at %d ns: no export event of pid %d at ts %.3f" %
                            (trace, what, t_ns, pid, ts))

    matched = 0
    def walk(findings, top):
        nonlocal matched
        for f in findings:
            for r in f.get("ranges", []):
                for (pid, start), e in by_start.items():
                    if start != r["start_ns"]:
                        continue
                    matched += 1
                    if e["t_ns"] != r["offset_ns"]:
                        failures.append("%s: %s range: summary offset_ns %d, dump t_ns %d" %
                                        (trace, f["rule"], r["offset_ns"], e["t_ns"]))
                    shown = "%+.3f s" % (r["offset_ns"] / 1e9)
                    if top and shown not in text:  # grouped findings show no WHERE
                        failures.append("%s: %s range: the text does not show %s" % (trace, f["rule"], shown))
                    same_everywhere(f["rule"] + " range", pid, e["t_ns"])
                    break
            walk(f.get("grouped", []), False)
    walk(summary.get("findings", []), True)
    for pid, k in first_kernel.items():
        same_everywhere("first kernel of pid %d" % pid, pid, k["t_ns"])
    return matched


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    failures = []
    matched = sum(check(sys.argv[1], t, failures) for t in sys.argv[2:])
    if matched == 0:
        failures.append("no finding range matched an event: the check compared nothing")
    for f in failures:
        print("FAIL " + f)
    if not failures:
        print("ok   %d finding ranges and every first kernel: one time in summary, report, "
              "export and dump" % matched)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
