#!/usr/bin/env python3
"""bench/corpus/compare.py: the confusion table of the corpus (issue 21):
for each workload, the finding expected before the run (manifest.json)
against the top finding gpscope-analyze gave, and one summary line.

  compare.py corpus.tar.gz [corpus-2.tar.gz ...]      # what run_corpus.py packed
  compare.py DIR                                      # the same, extracted (DIR/corpus/...)
  compare.py --analyze build/tools/gpscope-analyze corpus*.tar.gz
                                                      # re-analyze the traces with this build
  compare.py --format md ...                          # Markdown, for bench/RESULTS.md
  compare.py --manifest bench/corpus/manifest.json ...  # judge against this manifest instead
                                                      # of the copy packed with the run

The actual top finding is the first finding of severity warning or
critical ("none" when there is none: healthy). Verdicts:
  match       the expected rule (or "none" for a healthy control)
  acceptable  one of the workload's `acceptable` rules (listed before the run)
  new rule    the expected rule does not exist yet (needs_new_rule) and the
              top finding is neither it nor an acceptable one: a miss that
              awaits that rule
  MISS        anything else
  failed      the workload or its analysis failed (no summary)
  not run     skipped (budget) or absent from the archives
With --analyze, workloads whose trace was left out of the archives keep
their packed summary (marked "*"). Exit code: 0 (the table is the result;
it does not judge), 1 when nothing could be read, 2 on bad usage.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
LOUD = ("warning", "critical")


def read_inputs(paths):
    """{archive name: bytes} of every corpus/... file in the given archives
    or folders."""
    files = {}
    for p in paths:
        if os.path.isdir(p):
            root = p if os.path.isdir(os.path.join(p, "corpus")) else os.path.dirname(os.path.abspath(p))
            for dirpath, _, names in os.walk(os.path.join(root, "corpus")):
                for n in names:
                    full = os.path.join(dirpath, n)
                    with open(full, "rb") as f:
                        files[os.path.relpath(full, root).replace(os.sep, "/")] = f.read()
        else:
            with tarfile.open(p, "r:*") as tar:
                for m in tar.getmembers():
                    if m.isfile() and m.name.startswith("corpus/"):
                        files[m.name] = tar.extractfile(m).read()
    return files


def top_finding(summary):
    """(rule or "none", finding or None, the first three findings)."""
    findings = summary.get("findings", []) if summary else []
    loud = [f for f in findings if f.get("severity") in LOUD]
    return (loud[0]["rule"] if loud else "none"), (loud[0] if loud else None), findings[:3]


def fmt_ns(ns):
    ns = float(ns or 0)
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.1f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.0f} us"
    return f"{ns:.0f} ns"


def verdict(w, status, actual):
    if status in ("failed", "not run"):
        return status
    expected = w["expected"]
    if actual == expected:
        return "match"
    if actual in w.get("acceptable", []):
        return "acceptable"
    if w.get("needs_new_rule"):
        return "new rule"
    return "MISS"


def reanalyze(analyzer, files, names):
    """Runs `analyzer summary --format json` on each workload's packed
    traces; returns {name: summary dict or None}."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            traces = sorted(k for k in files if k.startswith(f"corpus/{name}/") and k.endswith(".gpscope"))
            if not traces:
                continue
            paths = []
            for k in traces:
                p = os.path.join(tmp, k.replace("/", "_"))
                with open(p, "wb") as f:
                    f.write(files[k])
                paths.append(p)
            r = subprocess.run([analyzer, "summary", "--format", "json", *paths], capture_output=True,
                               text=True)
            if r.returncode != 0:
                print(f"compare: {name}: {analyzer} exit {r.returncode}: {r.stderr.strip()[:200]}",
                      file=sys.stderr)
                out[name] = None
                continue
            out[name] = json.loads(r.stdout)
    return out


def site_check(w, summary):
    """Issue 20: whether the summary's source-line rows (a `source_lines`
    list of {file, line, ...} once the analyzer has them) name an expected
    site. "-" when the summary has no such section."""
    rows = summary.get("source_lines") if isinstance(summary, dict) else None
    if not isinstance(rows, list) or not w.get("sites"):
        return "-"
    seen = set()
    for r in rows:
        if isinstance(r, dict) and "file" in r and "line" in r:
            seen.add((os.path.basename(str(r["file"])), int(r["line"])))
    want = [(os.path.basename(s["file"]), int(s["line"])) for s in w["sites"]]
    hit = sum(1 for s in want if s in seen)
    return f"{hit}/{len(want)}"


def build_rows(manifest, records, summaries, reanalyzed):
    rows = []
    for w in manifest["workloads"]:
        name = w["name"]
        rec = records.get(name)
        summary = summaries.get(name)
        mark = ""
        if reanalyzed is not None:
            if reanalyzed.get(name) is not None:
                summary = reanalyzed[name]
            elif summary is not None:
                mark = "*"
        if rec is None and summary is None:
            status = "not run"
        elif rec is not None and rec.get("status") in ("not run", "failed"):
            status = rec["status"]  # a failed workload's partial trace is not judged
        elif summary is None:
            status = "failed"
        else:
            status = "ran"
        actual, finding, first3 = top_finding(summary) if summary is not None else ("-", None, [])
        v = verdict(w, status, actual)
        cost = fmt_ns(finding.get("cost_ns")) if finding else ""
        shown = f"{actual} ({finding['severity']}, {cost})" if finding else actual
        if status in ("failed", "not run"):
            why = (rec or {}).get("error") or ("no summary" if status == "failed" else "absent")
            shown = why[:60]
        res = (rec or {}).get("result") or {}
        rows.append({
            "name": name, "expected": w["expected"] + (" [new]" if w.get("needs_new_rule") else ""),
            "expected_id": w["expected"], "actual": actual if status == "ran" else status,
            "shown": shown + mark, "verdict": v, "healthy": bool(w.get("healthy")),
            "new_rule": bool(w.get("needs_new_rule")),
            "others": ", ".join(f"{f['rule']}:{f['severity'][0]}" for f in first3),
            "steps": res.get("steps"), "step_ms": res.get("step_ms"),
            "sites": site_check(w, summary),
        })
    return rows


def summary_line(rows):
    c = collections.Counter(r["verdict"] for r in rows)
    ran = [r for r in rows if r["verdict"] not in ("failed", "not run")]
    healthy = [r for r in ran if r["healthy"]]
    clean = [r for r in healthy if r["actual"] == "none"]
    problems = [r for r in ran if not r["healthy"]]
    existing = [r for r in problems if not r["new_rule"]]
    right_existing = [r for r in existing if r["verdict"] in ("match", "acceptable")]
    right = c["match"] + c["acceptable"]
    return (f"{len(rows)} workloads, {len(ran)} analyzed: top finding right {right} "
            f"(match {c['match']}, acceptable {c['acceptable']}), MISS {c['MISS']}, awaiting a new "
            f"rule {c['new rule']}; failed {c['failed']}, not run {c['not run']}. Healthy controls "
            f"clean {len(clean)}/{len(healthy)}; problems with an existing rule named right "
            f"{len(right_existing)}/{len(existing)}.")


def confusion(rows):
    ran = [r for r in rows if r["verdict"] not in ("failed", "not run")]
    exp = sorted({r["expected_id"] for r in ran})
    act = sorted({r["actual"] for r in ran})
    m = collections.Counter((r["expected_id"], r["actual"]) for r in ran)
    return exp, act, m


def render_text(rows, line):
    cols = [("workload", "name"), ("expected", "expected"), ("actual top (severity, cost)", "shown"),
            ("verdict", "verdict"), ("first 3 findings", "others"), ("sites", "sites")]
    width = {k: max(len(h), *(len(str(r[k])) for r in rows)) for h, k in cols}
    width["others"] = min(width["others"], 60)
    out = ["  ".join(h.ljust(width[k]) for h, k in cols)]
    for r in rows:
        out.append("  ".join(str(r[k])[:width[k]].ljust(width[k]) for _, k in cols).rstrip())
    out += ["", line, ""]
    exp, act, m = confusion(rows)
    if exp:
        out.append("confusion (rows: expected; columns: actual top finding):")
        w0 = max(len(e) for e in exp)
        hdr = " " * w0 + "  " + "  ".join(a for a in act)
        out.append(hdr)
        for e in exp:
            out.append(e.ljust(w0) + "  " + "  ".join(str(m[(e, a)] or ".").center(len(a)) for a in act))
    return "\n".join(out)


def render_md(rows, line):
    out = ["| workload | expected | actual top (severity, cost) | verdict | first 3 findings | steps "
           "| ms/step |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        steps = "" if r["steps"] is None else r["steps"]
        ms = "" if r["step_ms"] is None else r["step_ms"]
        out.append(f"| {r['name']} | {r['expected']} | {r['shown']} | {r['verdict']} | {r['others']} | "
                   f"{steps} | {ms} |")
    out += ["", line, ""]
    exp, act, m = confusion(rows)
    if exp:
        out.append("| expected \\ actual | " + " | ".join(act) + " |")
        out.append("|---" * (len(act) + 1) + "|")
        for e in exp:
            out.append(f"| {e} | " + " | ".join(str(m[(e, a)] or "") for a in act) + " |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+", help="corpus*.tar.gz from run_corpus.py, or a folder")
    ap.add_argument("--manifest", help="judge against this manifest (default: the packed copy)")
    ap.add_argument("--analyze", help="gpscope-analyze to re-run on the packed traces")
    ap.add_argument("--format", choices=("text", "md", "json"), default="text")
    args = ap.parse_args(argv)
    try:
        files = read_inputs(args.inputs)
    except (OSError, tarfile.TarError) as e:
        print(f"compare: cannot read {e}", file=sys.stderr)
        return 1
    try:
        if args.manifest:
            with open(args.manifest) as f:
                manifest = json.load(f)
        else:
            manifest = json.loads(files["corpus/manifest.json"])
    except KeyError:
        print("compare: no corpus/manifest.json in the inputs (give --manifest)", file=sys.stderr)
        return 1
    except (OSError, ValueError) as e:
        print(f"compare: manifest: {e}", file=sys.stderr)
        return 1
    records = {}
    if "corpus/results.json" in files:
        records = {r["name"]: r for r in json.loads(files["corpus/results.json"]).get("records", [])}
    summaries = {}
    for w in manifest["workloads"]:
        data = files.get(f"corpus/{w['name']}/summary.json")
        if data:
            try:
                summaries[w["name"]] = json.loads(data)
            except ValueError:
                summaries[w["name"]] = None
    reanalyzed = None
    if args.analyze:
        reanalyzed = reanalyze(args.analyze, files, [w["name"] for w in manifest["workloads"]])
    if not records and not summaries and not any((reanalyzed or {}).values()):
        print("compare: no results.json, no summaries and no traces to analyze in the inputs",
              file=sys.stderr)
        return 1
    rows = build_rows(manifest, records, summaries, reanalyzed)
    line = summary_line(rows)
    if args.format == "json":
        print(json.dumps({"rows": rows, "summary": line}, indent=1))
    elif args.format == "md":
        print(render_md(rows, line))
    else:
        print(render_text(rows, line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
