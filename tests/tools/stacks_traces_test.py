#!/usr/bin/env python3
"""tests/tools/stacks_traces_test.py: recorded-trace tests of call-site
attribution (issue 20), driven by tests/data/stacks/expected.json.

  stacks_traces_test.py ANALYZE_BIN [--trace NAME]...   (default: every trace listed)

For each trace tests/data/stacks/NAME.gpscope it runs `ANALYZE_BIN summary
--format json`, `summary` (text), `summary --format csv --table lines` and
`export`, and checks against the manifest:
  - the top finding (the first at warning level or above) is one of
    `top_rules` and cites `top_site` first (its sites[0]);
  - source_lines ranks `top_site` first (and, when given, its next launch is
    `next_site`); the text section and the CSV table name it;
  - the finding's summary holds each of `summary_mentions`, its first fix
    each of `fix_mentions`; no site it cites is cited for more than its cost;
  - `lines_top_site` (default `top_site`) heads source_lines: the table is
    whole-run, a finding judges its steady window, and the two differ where
    start-up work cost more than the steady state (JAX's compilation);
  - export writes stackFrames and at least one API event with an `sf`.
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
DATA = os.path.join(REPO, "tests", "data", "stacks")
ACTIONABLE = ("warning", "critical")


def run(binary, *args):
    p = subprocess.run([binary, *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def check(binary, name, want):
    trace = os.path.join(DATA, name + ".gpscope")
    rc, out, err = run(binary, "summary", "--format", "json", trace)
    if rc != 0:
        return [f"{trace}: summary exit {rc}: {err.strip()[:300]}"]
    s = json.loads(out)
    failures = []
    top = next((f for f in s["findings"] if f["severity"] in ACTIONABLE), None)
    if top is None or top["rule"] not in want["top_rules"]:
        failures.append(f"{trace}: top finding {top and top['rule']}, expected "
                        f"{' or '.join(want['top_rules'])}")
    elif not top.get("sites") or top["sites"][0]["label"] != want["top_site"]:
        failures.append(f"{trace}: {top['rule']} cites {top.get('sites')}, expected "
                        f"{want['top_site']} first")
    else:
        # A cited site's value is the GPU time its sentence names, part of the
        # finding's cost: never above it (1% for the window's edges: a charge
        # counts whole when its gap starts inside, the finding clips its gaps).
        for c in top["sites"]:
            if c["value_ns"] > top["cost_ns"] * 1.01:
                failures.append(f"{trace}: {top['rule']} cites {c['label']} for "
                                f"{c['value_ns']} ns, above its cost {top['cost_ns']} ns")
        for m in want.get("summary_mentions", []):
            if m not in top["summary"]:
                failures.append(f"{trace}: {top['rule']}'s summary lacks '{m}': {top['summary']}")
        for m in want.get("fix_mentions", []):
            fix = (top.get("fixes") or [""])[0]
            if m not in fix:
                failures.append(f"{trace}: {top['rule']}'s first fix lacks '{m}': {fix}")
    sites = s.get("source_lines", {}).get("sites", [])
    lines_top = want.get("lines_top_site", want["top_site"])
    if not sites or sites[0]["label"] != lines_top:
        failures.append(f"{trace}: source_lines ranks {sites[0]['label'] if sites else None} "
                        f"first, expected {lines_top}")
    elif "next_site" in want and (sites[0]["next"] or {}).get("site") != want["next_site"]:
        failures.append(f"{trace}: {want['top_site']}'s next launch is {sites[0]['next']}, "
                        f"expected {want['next_site']}")
    rc, text, err = run(binary, "summary", trace)
    # The text table cuts long labels (file:line first, the function after):
    # its first row must start with the site's file:line.
    if rc != 0 or f"1. {lines_top.split(' ')[0]}" not in text:
        failures.append(f"{trace}: the text summary's SOURCE LINES does not list "
                        f"{lines_top} first (exit {rc})")
    rc, csv, err = run(binary, "summary", "--format", "csv", "--table", "lines", trace)
    rows = csv.splitlines()
    if rc != 0 or len(rows) < 2 or lines_top not in rows[1]:
        failures.append(f"{trace}: --table lines row 1 is {rows[1] if len(rows) > 1 else None}")
    rc, exported, err = run(binary, "export", trace)
    e = json.loads(exported) if rc == 0 else {}
    if not e.get("stackFrames") or not any("sf" in ev for ev in e.get("traceEvents", [])):
        failures.append(f"{trace}: export has no stackFrames or no event with sf (exit {rc})")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--trace", action="append", default=[])
    a = ap.parse_args()
    manifest = json.load(open(os.path.join(DATA, "expected.json")))["traces"]
    names = a.trace or sorted(manifest)
    failures = []
    for name in names:
        if name not in manifest:
            print(f"{name}: not in tests/data/stacks/expected.json", file=sys.stderr)
            return 2
        failures += check(a.binary, name, manifest[name])
    for f in failures:
        print(f"FAIL {f}")
    print(f"stacks traces: {len(names)} checked, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
