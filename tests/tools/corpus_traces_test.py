#!/usr/bin/env python3
"""tests/tools/corpus_traces_test.py: recorded-trace tests of the findings on
the real-program corpus (issue 21), driven by bench/corpus/manifest.json.

  corpus_traces_test.py ANALYZE_BIN [--workload NAME]...   (default: every trace)

For each trace tests/data/corpus/NAME.gpscope (recorded on the H200 by
bench/corpus/run_corpus.py; NAME is the manifest's workload name) it runs
`ANALYZE_BIN summary --format json` and checks, against the manifest, what
was written down before the run:
  - the top finding (the first at warning level or above) is the workload's
    `expected` rule or one of its `acceptable` ones; for a healthy control
    (expected "none") no finding, grouped ones included, is above info;
  - with steps in the summary, the median step period is within 30% of the
    step time the workload measured itself (tests/data/corpus/results.json:
    its CORPUS_RESULT line), for the workloads whose loop is one step per
    iteration (`step_check` there).
Exit 0 when all hold; 1 with one line per failure naming the trace; 2 on bad
usage.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(REPO, "tests", "data", "corpus")
MANIFEST = os.path.join(REPO, "bench", "corpus", "manifest.json")
ACTIONABLE = ("warning", "critical")
STEP_TOLERANCE = 0.30


def check(binary, w, recorded):
    """The failures of workload w (a manifest entry), as lines."""
    name = w["name"]
    trace = os.path.join(DATA, name + ".gpscope")
    proc = subprocess.run([binary, "summary", "--format", "json", trace], capture_output=True,
                          text=True, timeout=300)
    if proc.returncode != 0:
        return [f"{trace}: summary exit {proc.returncode}: {proc.stderr.strip()[:300]}"]
    try:
        s = json.loads(proc.stdout)
    except ValueError as e:
        return [f"{trace}: summary --format json is not JSON: {e}"]
    findings = s.get("findings", [])
    failures = []
    top = next((f for f in findings if f["severity"] in ACTIONABLE), None)
    top_rule = top["rule"] if top else "none"
    shown = ", ".join(f"{f['rule']}:{f['severity']}" for f in findings)
    if w["healthy"]:
        loud = [f"{f['rule']}:{f['severity']}" for f in findings if f["severity"] in ACTIONABLE]
        loud += [f"{g['rule']}:{g['severity']} (grouped)" for f in findings
                 for g in f.get("grouped", []) if g["severity"] in ACTIONABLE]
        if loud:
            failures.append(f"{trace}: healthy control, but above info: {', '.join(loud)}")
    else:
        allowed = [w["expected"]] + list(w["acceptable"])
        if top_rule not in allowed:
            failures.append(f"{trace}: top finding {top_rule}, expected {' or '.join(allowed)} "
                            f"(findings: {shown})")
    rec = recorded.get(name, {})
    if rec.get("step_check"):
        steps = s["gpus"][0].get("steps") if s.get("gpus") else None
        measured = rec["step_ms"] * 1e6
        if not steps or steps["period_ns"]["count"] == 0:
            failures.append(f"{trace}: no steps found; the workload ran {rec['steps']} steps of "
                            f"{rec['step_ms']} ms")
        else:
            p50 = steps["period_ns"]["p50"]
            if abs(p50 - measured) > STEP_TOLERANCE * measured:
                failures.append(f"{trace}: step period P50 {p50 / 1e6:.3f} ms ({steps['source']}, "
                                f"{steps.get('anchor')}), the workload measured "
                                f"{rec['step_ms']} ms")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--workload", action="append", default=[])
    args = ap.parse_args()
    with open(MANIFEST) as f:
        manifest = {w["name"]: w for w in json.load(f)["workloads"]}
    with open(os.path.join(DATA, "results.json")) as f:
        recorded = json.load(f)["workloads"]
    names = args.workload or sorted(n[:-len(".gpscope")] for n in os.listdir(DATA)
                                    if n.endswith(".gpscope"))
    failures = []
    for name in names:
        if name not in manifest:
            failures.append(f"{os.path.join(DATA, name + '.gpscope')}: no workload {name} in "
                            f"{MANIFEST}")
            continue
        failures += check(args.binary, manifest[name], recorded)
    for line in failures:
        print(f"corpus_traces_test: FAIL: {line}")
    if not failures:
        print(f"corpus_traces_test: ok: {len(names)} trace(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
