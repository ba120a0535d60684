#!/usr/bin/env python3
"""export --format sqlite and stats on a bundled trace (issue 23).

Runs every `-- query: NAME` block of docs/sqlite.md with the sqlite3 shell on
an export of TRACE and checks the rows against `summary --format json` and
`dump` (the raw events, aggregated here independently); then checks
`stats --format json` against the same dump, the NVTX GPU projection
recomputed here from the dump's ranges, API calls and GPU ops.

usage: sqlite_stats_test.py GPSCOPE_ANALYZE DOCS_SQLITE_MD TRACE
"""
import collections
import json
import math
import os
import re
import subprocess
import sys
import tempfile

analyze, docs, trace = sys.argv[1:4]


def run(*args):
    r = subprocess.run([analyze, *args], capture_output=True, text=True)
    assert r.returncode == 0, (args, r.returncode, r.stderr)
    return r.stdout


def sql(db, query):
    r = subprocess.run(["sqlite3", "-json", db, query], capture_output=True, text=True)
    assert r.returncode == 0, (query, r.stderr)
    return json.loads(r.stdout) if r.stdout.strip() else []


def queries(path):
    text = open(path).read()
    found = {}
    for block in re.findall(r"```sql\n(.*?)```", text, re.S):
        m = re.match(r"-- query: (\w+)\n", block)
        if m:
            found[m.group(1)] = block[m.end():]
    return found


def describe(d):
    """count, total, median, nearest-rank P95, min, max (stats.h's definitions)."""
    d = sorted(d)
    n = len(d)
    median = d[n // 2] if n % 2 else (d[n // 2 - 1] + d[n // 2]) / 2
    return n, sum(d), median, d[math.ceil(0.95 * n) - 1], d[0], d[-1]


events = [json.loads(line) for line in run("dump", trace).splitlines() if line.startswith("{")]
by_type = collections.defaultdict(list)
for e in events:
    by_type[e.get("type")].append(e)
dur = lambda e: max(e["end_ns"] - e["start_ns"], 0)
summary = json.loads(run("summary", "--format", "json", "--top", "10000", trace))
q = queries(docs)
assert set(q) >= {"top_kernels", "idle_gaps", "api_calls", "findings"}, sorted(q)

with tempfile.TemporaryDirectory() as tmp:
    db = os.path.join(tmp, "run.sqlite")
    r = subprocess.run([analyze, "export", "--format", "sqlite", "-o", db, trace],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for table, kind in [("kernels", "kernel"), ("memcpys", "memcpy"), ("memsets", "memset"),
                        ("api_calls", "api"), ("nvtx_ranges", "nvtx_range"),
                        ("nvtx_marks", "nvtx_mark"), ("syncs", "sync"),
                        ("metric_samples", "metric")]:
        n = sql(db, f"SELECT COUNT(*) AS n FROM {table}")[0]["n"]
        assert n == len(by_type[kind]), (table, n, len(by_type[kind]))
    # Times since the origin are dump's t_ns.
    rel = sql(db, "SELECT SUM(start_rel_ns) AS s FROM kernels")[0]["s"] or 0
    assert rel == sum(k["t_ns"] for k in by_type["kernel"]), rel
    origin = sql(db, "SELECT value FROM meta WHERE key = 'time_origin_utc'")[0]["value"]
    assert origin == summary["time_origin"]["utc"], (origin, summary["time_origin"])

    # Top kernels: summary's top[] of every GPU, summed by name.
    want = collections.defaultdict(lambda: [0, 0, ""])
    for g in summary["gpus"]:
        for k in g["kernels"]["top"]:
            w = want[k["name"]]
            w[0] += k["count"]
            w[1] += k["total_ns"]
            w[2] = k["demangled"]
    top = sql(db, q["top_kernels"])
    assert top, "no kernels"
    expected = sorted(want.values(), key=lambda w: -w[1])[:10]
    assert [t["total_ns"] for t in top] == [w[1] for w in expected], (top, expected)
    for t in top:
        match = [w for w in want.values() if w[2] == t["kernel"] and w[1] == t["total_ns"]]
        assert match and match[0][0] == t["launches"], (t, match)

    # API calls by total time, from the dump.
    api = collections.defaultdict(list)
    for a in by_type["api"]:
        api[a["name"]].append(dur(a))
    rows = sql(db, q["api_calls"])
    assert len(rows) == len(api), (len(rows), len(api))
    for row in rows:
        d = api[row["api"]]
        assert (row["calls"], row["total_ns"], row["max_ns"]) == (len(d), sum(d), max(d)), row

    # Idle gaps over 5 ms per GPU, recomputed from the dump's GPU ops.
    ops = collections.defaultdict(list)
    for kind in ("kernel", "memcpy", "memset"):
        for o in by_type[kind]:
            ops[(o["pid"], o["device"])].append((o["start_ns"], o["end_ns"]))
    gaps = {}
    for key, spans in ops.items():
        spans.sort()
        busy, found = None, []
        for s, e in spans:
            if busy is not None and s - busy > 5_000_000:
                found.append(s - busy)
            busy = e if busy is None else max(busy, e)
        if found:
            gaps[key] = (len(found), sum(found), max(found))
    rows = sql(db, q["idle_gaps"])
    got = {(r["pid"], r["device_id"]): (r["gaps"], r["idle_ns"], r["longest_ns"]) for r in rows}
    assert got == gaps, (got, gaps)

    # Findings: the summary's, in its order, with their evidence.
    rows = sql(db, q["findings"])
    assert [r["rule"] for r in rows] == [f["rule"] for f in summary["findings"]], rows
    assert [r["evidence"] for r in rows] == [len(f["evidence"]) for f in summary["findings"]]
    assert [r["cost_ns"] for r in rows] == [f["cost_ns"] for f in summary["findings"]]
    # The named views: every event keeps its row and gets dump's name.
    named = collections.Counter((r["name"], r["domain"]) for r in by_type["nvtx_range"])
    rows = sql(db, "SELECT name, domain, COUNT(*) AS n FROM nvtx_ranges_named GROUP BY 1, 2")
    assert {(r["name"], r["domain"]): r["n"] for r in rows} == dict(named), rows[:5]
    named = collections.Counter(k["name"] for k in by_type["kernel"])
    rows = sql(db, "SELECT name, COUNT(*) AS n FROM kernels_named GROUP BY 1")
    assert {r["name"]: r["n"] for r in rows} == dict(named)
    # The doc's other examples at least run.
    for block in re.findall(r"```sql\n(.*?)```", open(docs).read(), re.S):
        if not block.startswith("-- query:"):
            r = subprocess.run(["sqlite3", db], input=block, capture_output=True, text=True)
            assert r.returncode == 0 and not r.stderr, (block[:60], r.stderr)
    rows = sql(db, q["findings"])
    ranks = sql(db, "SELECT COUNT(*) AS n FROM ranks")[0]["n"]
    assert ranks == len(summary["ranks"]["rows"]), ranks
    print(f"sqlite: {len(top)} top kernels, {len(api)} APIs, {len(gaps)} GPUs with gaps "
          f"({sum(g[0] for g in gaps.values())} gaps), {len(rows)} findings")

# stats, against the dump.
stats = json.loads(run("stats", "--format", "json", trace))["reports"]


def table(name):
    t = stats[name]
    return [dict(zip(t["columns"], row)) for row in t["rows"]]


for row in table("cuda_api_sum"):
    n, total, median, p95, lo, hi = describe(api[row["name"]])
    assert (row["count"], row["total_ns"], row["median_ns"], row["p95_ns"], row["min_ns"],
            row["max_ns"]) == (n, total, median, p95, lo, hi), row
assert len(table("cuda_api_sum")) == len(api)
kern = table("cuda_gpu_kern_sum")
assert sum(r["total_ns"] for r in kern) == sum(dur(k) for k in by_type["kernel"])
assert sum(r["count"] for r in kern) == len(by_type["kernel"])

ranges = collections.defaultdict(list)
for r in by_type["nvtx_range"]:
    ranges[(r["name"], r["domain"])].append(dur(r))
nvtx = table("nvtx_sum")
assert len(nvtx) == len(ranges), (len(nvtx), len(ranges))
for row in nvtx:
    n, total, median, p95, lo, hi = describe(ranges[(row["name"], row["domain"])])
    assert (row["count"], row["total_ns"], row["median_ns"], row["p95_ns"]) == (n, total, median, p95)

# The projection, recomputed: per range, the GPU ops of the calls that began
# inside it on its thread.
calls = collections.defaultdict(list)
for a in by_type["api"]:
    calls[(a["pid"], a["thread"])].append((a["start_ns"], a["correlation"]))
gpu = collections.defaultdict(list)
for kind in ("kernel", "memcpy", "memset"):
    for o in by_type[kind]:
        if o["correlation"]:
            gpu[(o["pid"], o["correlation"])].append((o["start_ns"], o["end_ns"]))
proj = collections.defaultdict(lambda: [[], 0])
for r in by_type["nvtx_range"]:
    spans = [s for start, c in calls[(r["pid"], r["thread"])]
             if r["start_ns"] <= start <= r["end_ns"] and c for s in gpu.get((r["pid"], c), [])]
    if spans:
        p = proj[(r["name"], r["domain"])]
        p[0].append(max(e for _, e in spans) - min(s for s, _ in spans))
        p[1] += len(spans)
rows = table("nvtx_gpu_proj")
assert len(rows) == len(proj), (len(rows), len(proj))
for row in rows:
    d, n_ops = proj[(row["name"], row["domain"])]
    assert (row["ranges"], row["total_proj_ns"], row["gpu_ops"]) == (len(d), sum(d), n_ops), row
print(f"stats: {len(api)} APIs, {len(kern)} kernel names, {len(nvtx)} NVTX ranges, "
      f"{len(rows)} projected ({sum(r['gpu_ops'] for r in rows)} GPU ops)")

# Usage: a database needs -o; an existing file there is replaced, not added to.
r = subprocess.run([analyze, "export", "--format", "sqlite", trace], capture_output=True, text=True)
assert r.returncode == 2 and "-o" in r.stderr, (r.returncode, r.stderr)
with tempfile.TemporaryDirectory() as tmp:
    db = os.path.join(tmp, "again.sqlite")
    for _ in range(2):
        r = subprocess.run([analyze, "export", "--format", "sqlite", "-o", db, trace],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    n = sql(db, "SELECT COUNT(*) AS n FROM kernels")[0]["n"]
    assert n == len(by_type["kernel"]), n
    r = subprocess.run([analyze, "export", "--format", "sqlite", "-o", db, "/nonexistent.gpscope"],
                       capture_output=True, text=True)
    assert r.returncode == 1, (r.returncode, r.stderr)
