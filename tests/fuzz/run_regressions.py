#!/usr/bin/env python3
"""Runs every gpscope-analyze command on the hostile traces of
tests/fuzz/regressions/ (written by make_regressions.cc) and checks what
issue 17 asks of each: no crash (no signal, exit 0 or 1, never 2), bounded
time and peak memory, text output that is valid UTF-8 with no raw control
character, JSON that parses strictly (no NaN/Infinity), CSV cells that a
spreadsheet will not run, and each file's own expected behaviour.

usage: run_regressions.py GPSCOPE_ANALYZE REGRESSIONS_DIR MAKE_REGRESSIONS [--quick]
--quick (sanitizer builds) leaves out the runs that write gigabytes
(dump/export of 10 M kernels) and the 8 MiB resync timing.
"""
import atexit
import json
import re
import shutil
import os
import subprocess
import sys
import tempfile
import time

ANALYZE = DIR = MAKE = None
QUICK = "--quick" in sys.argv[4:]
# Where the SQLite export of each file goes (removed after each run).
_SQLITE_DIR = tempfile.mkdtemp(prefix="gpscope-regress-")
atexit.register(shutil.rmtree, _SQLITE_DIR, True)
SQLITE_OUT = os.path.join(_SQLITE_DIR, "export.sqlite")
failures = []

# Control characters that must never reach a terminal from a trace: C0 but
# newline and tab, DEL, C1, bidi overrides/isolates, line/paragraph separators.
BAD_CHARS = set(chr(c) for c in range(0x20) if c not in (0x0a, 0x09)) | {"\x7f"}
BAD_CHARS |= set(chr(c) for c in range(0x80, 0xa0))
BAD_CHARS |= {"\u061c", "\u200e", "\u200f", "\u2028", "\u2029"}
BAD_CHARS |= set(chr(c) for c in range(0x202a, 0x202f)) | set(chr(c) for c in range(0x2066, 0x206a))


def fail(what):
    failures.append(what)
    print("FAIL:", what, flush=True)


class Result:
    pass


def spawn_child(argv):
    """--spawn mode: runs argv, then prints its exit code, peak RSS (KiB) and CPU
    seconds. A process's peak RSS counts what its parent had resident when it
    forked (the kernel carries it across exec), so the measured command is
    started from this small fresh process, not from the test's big one."""
    pid = os.fork()
    if pid == 0:
        try:
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    with open(os.environ["GPSCOPE_SPAWN_REPORT"], "w") as f:
        print(os.waitstatus_to_exitcode(status), usage.ru_maxrss, usage.ru_utime + usage.ru_stime,
              file=f)


if len(sys.argv) > 2 and sys.argv[1] == "--spawn":
    spawn_child(sys.argv[2:])
    sys.exit(0)
ANALYZE, DIR, MAKE = (os.path.abspath(a) for a in sys.argv[1:4])


def run_measured(args, timeout=120, out_path=None):
    """Runs gpscope-analyze ARGS: code, stdout, stderr, seconds, peak RSS (MiB), CPU s."""
    start = time.monotonic()
    out_file = open(out_path, "wb") if out_path else tempfile.TemporaryFile()
    err_file = tempfile.TemporaryFile()
    report = tempfile.NamedTemporaryFile(delete=False)
    report.close()
    env = dict(os.environ, GPSCOPE_SPAWN_REPORT=report.name)
    p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--spawn", ANALYZE] + args,
                         stdout=out_file, stderr=err_file, stdin=subprocess.DEVNULL, env=env)
    r = Result()
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        fail(f"{args}: still running after {timeout} s")
    r.seconds = time.monotonic() - start
    with open(report.name) as f:
        fields = f.read().split()
    os.unlink(report.name)
    if len(fields) == 3:
        r.code, r.rss_mib, r.cpu = int(fields[0]), int(fields[1]) / 1024.0, float(fields[2])
    else:
        r.code, r.rss_mib, r.cpu = -9, 0.0, 0.0
    if out_path:
        out_file.close()
        r.out = b""
    else:
        out_file.seek(0)
        r.out = out_file.read()
    err_file.seek(0)
    r.err = err_file.read()
    return r


def check_common(name, args, r, text_out=True):
    where = f"{name}: {' '.join(args)}"
    if r.code < 0:
        fail(f"{where}: killed by signal {-r.code}: {r.err[-400:]!r}")
    elif r.code not in (0, 1):
        fail(f"{where}: exit {r.code}: {r.err[-400:]!r}")
    for label, data in (("stdout", r.out if text_out else b""), ("stderr", r.err)):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            fail(f"{where}: {label} is not valid UTF-8 ({e})")
            continue
        bad = sorted(set(text) & BAD_CHARS)
        if bad:
            fail(f"{where}: raw control characters in {label}: {[hex(ord(c)) for c in bad]}")
    if b"AddressSanitizer" in r.err or b"runtime error:" in r.err:
        fail(f"{where}: sanitizer report: {r.err[-600:]!r}")


def strict_json(text):
    def no_constants(c):
        raise ValueError(f"non-JSON constant {c}")
    return json.loads(text, parse_constant=no_constants)


def check_json(name, args, r, lines=False):
    if r.code not in (0, 1) or not r.out:
        return None
    try:
        text = r.out.decode("utf-8")
        if lines:
            return [strict_json(l) for l in text.splitlines() if l]
        return strict_json(text)
    except Exception as e:  # noqa: BLE001
        fail(f"{name}: {' '.join(args)}: invalid JSON: {e}")
        return None


def check_csv(name, r):
    import csv
    import io
    rows = list(csv.reader(io.StringIO(r.out.decode("utf-8", "replace"))))
    for row in rows[1:]:
        for cell in row:
            if cell and cell[0] in "=+-@\t\r":
                try:
                    float(cell)
                    continue  # a number such as -5 is data, not a formula
                except ValueError:
                    fail(f"{name}: CSV cell a spreadsheet would run: {cell!r}")


# Every command, with the checks that fit its output.
def every_command(path, budget=None, skip=(), discard=()):
    """discard: outputs too large to keep (gigabytes): written to /dev/null, not parsed."""
    name = os.path.basename(path)
    extra = ["--max-memory", budget] if budget else []
    results = {}
    plans = [
        ("summary", ["summary"], "text"),
        ("summary_json", ["summary", "--format", "json"], "json"),
        ("summary_csv", ["summary", "--format", "csv", "--table", "kernels"], "csv"),
        ("report", ["report", "--data-only", "-o", "-"], "json"),
        ("export", ["export"], "json"),
        ("dump", ["dump"], "jsonl"),
        ("info", ["info"], "text"),
        ("info_json", ["info", "--format", "json"], "json"),
        ("metrics", ["metrics"], "text"),
        ("metrics_json", ["metrics", "--format", "json"], "json"),
        ("diff", ["diff", path, path], "text"),
        ("diff_json", ["diff", "--format", "json", path, path], "json"),
        ("stats", ["stats"], "text"),
        ("stats_json", ["stats", "--format", "json"], "json"),
        ("sqlite", ["export", "--format", "sqlite", "-o", SQLITE_OUT], "none"),
    ]
    for key, args, kind in plans:
        if key in skip:
            continue
        full = args + extra + ([] if key.startswith("diff") else [path])
        big = key in discard
        r = run_measured(full, timeout=300, out_path=os.devnull if big else None)
        check_common(name, full, r)
        if big:
            kind = "none"
        if kind in ("text", "csv") and re.search(rb"\b(nan|-?inf|infinity)\b", r.out, re.I):
            fail(f"{name}: {' '.join(full)}: prints nan/inf (a division by zero or a "
                 f"non-finite value reached the text)")
        if kind == "json":
            r.json = check_json(name, full, r)
        elif kind == "jsonl":
            r.json = check_json(name, full, r, lines=True)
        elif kind == "csv":
            check_csv(name, r)
        if key == "sqlite" and os.path.exists(SQLITE_OUT):
            os.unlink(SQLITE_OUT)
        results[key] = r
        print(f"  {name} {key}: exit {r.code}, {r.seconds:.2f} s, {r.rss_mib:.0f} MiB", flush=True)
    return results


def rss_within(r, mib):
    """Peak RSS bound; not asserted under sanitizers (shadow memory and
    ASan's quarantine of freed blocks inflate RSS), where the non-sanitized
    run of this test asserts it."""
    return QUICK or r.rss_mib < mib


def expect(cond, what):
    if not cond:
        fail(what)


def P(name):
    return os.path.join(DIR, name)


def out(r):
    return r.out.decode("utf-8", "replace")


def err(r):
    return r.err.decode("utf-8", "replace")


# ---------------------------------------------------------------- the files --

# A kernel on device 0xffffffff (the model's empty-slot sentinel: segfault).
r = every_command(P("device_id_sentinel.gpscope"))
for k in ("summary", "report", "diff"):
    expect(r[k].code == 0, f"device_id_sentinel {k}: exit {r[k].code}")
expect("on_device_max" in out(r["summary"]), "device_id_sentinel: the kernel is not in the summary")

# name_id 2^32-1 grew a table to 2^31 entries; 2^30 took 6.3 GB.
for f in ("name_id_max.gpscope", "name_id_2p30.gpscope"):
    r = every_command(P(f))
    for k, v in r.items():
        expect(rss_within(v, 200), f"{f} {k}: peak RSS {v.rss_mib:.0f} MiB (a table grew to an id)")
    expect(r["summary"].code == 0, f"{f}: summary exit {r['summary'].code}")
    expect("out-of-range values cut" in err(r["dump"]), f"{f}: no warning about the dropped ids")

# Resync over fake frame headers: linear in the file size.
r = every_command(P("resync_fake_headers_1mib.gpscope"))
expect("after_the_damage" in out(r["dump"]), "resync: the frame after the damage was not read")
if not QUICK:
    with tempfile.TemporaryDirectory() as tmp:
        times = {}
        for mib in (1, 8):
            path = os.path.join(tmp, f"r{mib}.gpscope")
            subprocess.run([MAKE, "--resync", str(mib), path], check=True, cwd=tmp)
            best = min(run_measured(["info", path]).cpu for _ in range(2))
            times[mib] = best
        print(f"  resync: 1 MiB {times[1]:.3f} s, 8 MiB {times[8]:.3f} s of CPU", flush=True)
        # Quadratic was 1.2 s at 1 MiB and 176 s at 8 MiB (x64 for x8).
        expect(times[8] < 6.0, f"resync: 8 MiB of fake headers took {times[8]:.1f} s")
        expect(times[8] < 24 * max(times[1], 0.05),
               f"resync: 8 MiB took {times[8]:.2f} s vs {times[1]:.2f} s for 1 MiB (not linear)")

# 10 M kernels in a few KiB: report stays within its budget.
# (the SQLite export of 10 M rows: ~24 s of CPU, minutes under ASan; its
# streaming and budget are tested in sqlite_export_test)
skip = ("dump", "export", "diff", "diff_json") if QUICK else ("diff", "diff_json")
skip += ("sqlite",)
r = every_command(P("kernels_10m.gpscope"), budget="1G", skip=skip + ("report",),
                  discard=("dump", "export"))
rep = run_measured(["report", "--max-memory", "512M", P("kernels_10m.gpscope"), "-o",
                    os.devnull], timeout=300)
check_common("kernels_10m", ["report"], rep)
print(f"  kernels_10m report: exit {rep.code}, {rep.seconds:.2f} s, {rep.rss_mib:.0f} MiB")
expect(rss_within(rep, 512 + 96), f"kernels_10m report: peak RSS {rep.rss_mib:.0f} MiB > budget 512 MiB")
expect("not shown" in out(rep) or "PARTIAL" in out(rep),
       f"kernels_10m report: does not say events were left out: {out(rep)}")
expect("10,000,001 events" in out(r["summary"]) or (QUICK and "PARTIAL" in out(r["summary"])),
       "kernels_10m: summary does not count 10 M kernels")

# 20,000 process headers: past the budget, a clear message and a partial result.
r = every_command(P("processes_20k.gpscope"), budget="256M",
                  skip=("diff", "diff_json", "report"))
for k, v in r.items():
    expect(rss_within(v, 256 + 64), f"processes_20k {k}: peak RSS {v.rss_mib:.0f} MiB > 256 MiB budget")
s = r["summary"]
expect(s.code == 1, f"processes_20k: summary past the budget exits {s.code}, not 1")
expect("PARTIAL RESULT" in out(s) and "memory budget" in out(s),
       "processes_20k: the summary does not say it is partial")
expect(err(s).count("memory budget of 256 MiB reached") == 1,
       f"processes_20k: not one stderr line about the budget: {err(s)[-500:]}")
expect(r["summary_json"].json is None or "partial" in r["summary_json"].json,
       "processes_20k: summary JSON has no 'partial'")
# The streaming commands need less: a budget of 32 MiB stops them too.
r = every_command(P("processes_20k.gpscope"), budget="32M",
                  skip=("summary", "summary_json", "summary_csv", "diff", "diff_json", "report",
                        "stats", "stats_json", "sqlite"))
for k, v in r.items():
    expect(v.code == 1, f"processes_20k {k} with 32 MiB: exit {v.code}, not 1 (partial)")
    expect(rss_within(v, 32 + 16), f"processes_20k {k}: peak RSS {v.rss_mib:.0f} MiB > 32 MiB budget")
expect("PARTIAL RESULT" in out(r["info"]), "processes_20k: info text does not say partial")
expect("partial" in (r["info_json"].json or {}), "processes_20k: info JSON has no 'partial'")
expect("partial" in (r["metrics_json"].json or {}), "processes_20k: metrics JSON has no 'partial'")
expect(any(l.get("type") == "partial" for l in (r["dump"].json or [])),
       "processes_20k: dump has no partial line")
expect("gpscope_partial" in (r["export"].json or {}).get("metadata", {}),
       "processes_20k: export metadata has no gpscope_partial")
rep = run_measured(["report", "--max-memory", "256M", P("processes_20k.gpscope"), "-o", os.devnull],
                   timeout=300)
check_common("processes_20k", ["report"], rep)
print(f"  processes_20k report: exit {rep.code}, {rep.seconds:.2f} s, {rep.rss_mib:.0f} MiB")
expect(rep.code == 1 and "PARTIAL" in out(rep), f"processes_20k report: {out(rep)} {err(rep)}")
expect(rss_within(rep, 256 + 64), f"processes_20k report: peak RSS {rep.rss_mib:.0f} MiB > 256 MiB")

# Terminal escapes in every string (checked by check_common on every output).
r = every_command(P("terminal_escapes.gpscope"))
expect("\\x1b]0;pwned" in out(r["summary"]), "terminal_escapes: the host name is not shown escaped")
expect("gemm\\x1b[2J" in out(r["summary"]), "terminal_escapes: the kernel name is not shown escaped")
expect("\\u202e" in out(r["info"]), "terminal_escapes: info does not show the RTL override escaped")
expect("\\u009b" in out(r["info"]) or "\\u009b" in out(r["summary"]),
       "terminal_escapes: the C1 control is not shown escaped")
expect("H100\\x1b[31m" in out(r["metrics"]) or "H100" not in out(r["metrics"]),
       "terminal_escapes: metrics shows the device name unescaped")

# NaN / inf metric values: JSON stays valid (strict parse above).
r = every_command(P("nonfinite_metrics.gpscope"))
expect(r["export"].json is not None, "nonfinite_metrics: export is not valid JSON")
for k in ("summary", "metrics", "info", "diff"):
    expect(not re.search(r"\b(nan|inf|infinity)\b", out(r[k]), re.I),
           f"nonfinite_metrics: {k} prints nan/inf")

# File header version 0: not a valid trace (not "use a newer gpscope-analyze").
r = every_command(P("version_0.gpscope"))
for k, v in r.items():
    expect(v.code == 1, f"version_0 {k}: exit {v.code}")
    expect("not a valid gpscope trace" in err(v) and "newer" not in err(v),
           f"version_0 {k}: {err(v)!r}")

# Disk-full loss: counts in records beside the lost frames.
r = every_command(P("write_failed.gpscope"))
expect("write failed 1,204 records" in out(r["info"]) and "20 LOST" in out(r["info"]),
       f"write_failed: info says {out(r['info'])!r}")
# Each reader warning once (summary and report printed them twice).
for k in ("summary", "summary_json", "report"):
    n = out(r[k]).count("20 frames lost (sequence 2..21 missing)")
    expect(n == 1, f"write_failed {k}: the lost-frames warning appears {n} times")

# The file ends at a frame boundary without the end record.
r = every_command(P("missing_end.gpscope"))
for k in ("dump", "export"):
    expect("no end record" in err(r[k]), f"missing_end {k}: says nothing about the end record")

# CSV formula injection (check_csv above), and the cells are still there.
r = every_command(P("csv_formula.gpscope"))
expect("'=HYPERLINK" in out(r["summary_csv"]), "csv_formula: the formula cell is not neutralized")

# Timestamps near 2^64, ends before starts; columns of unequal length.
for f in ("timestamps_extreme.gpscope", "inconsistent_columns.gpscope"):
    every_command(P(f))

# A frame claiming 60 MiB decompressed (a bomb of a few KiB).
r = every_command(P("decompression_bomb.gpscope"))
for k, v in r.items():
    expect(rss_within(v, 200), f"decompression_bomb {k}: peak RSS {v.rss_mib:.0f} MiB")
expect("would decompress to 60 MiB" in err(r["dump"]), "decompression_bomb: no message")

# 100 k devices and streams; clock snapshots, lost intervals and syncs in
# reverse order (sorted inserts were quadratic).
r = every_command(P("many_devices_streams.gpscope"))
expect(rss_within(r["summary"], 400), "many_devices_streams: summary RSS unbounded")
# analyzer_fuzz (CI, 2026-12-02): 199 GPUs in one process, each with a span
# of centuries, from 27 KB: 600 MB and 116 s under ASan (a 30 s fuzz
# timeout). GPUs past 32 per process are counted, not modelled.
r = every_command(P("many_gpus_long_span.gpscope"))
for k, v in r.items():
    expect(rss_within(v, 400), f"many_gpus_long_span {k}: peak RSS {v.rss_mib:.0f} MiB")
    expect(v.seconds < (60 if QUICK else 10), f"many_gpus_long_span {k}: {v.seconds:.1f} s")
r = every_command(P("reverse_order_tables.gpscope"))
for k, v in r.items():
    expect(v.seconds < (150 if QUICK else 30), f"reverse_order_tables {k}: {v.seconds:.1f} s")

# A FIFO argument: refused at once (it blocked forever), for every command.
with tempfile.TemporaryDirectory() as tmp:
    fifo = os.path.join(tmp, "trace.gpscope")
    os.mkfifo(fifo)
    for cmd in (["summary"], ["report", "-o", os.path.join(tmp, "r.html")], ["export"], ["dump"],
                ["info"], ["metrics"]):
        r = run_measured(cmd + [fifo], timeout=20)
        check_common("fifo", cmd, r)
        expect(r.code == 1 and "not a regular file (a FIFO)" in err(r),
               f"fifo {cmd}: exit {r.code}, {err(r)!r}")
    r = run_measured(["diff", fifo, fifo], timeout=20)
    expect(r.code == 1 and "a FIFO" in err(r), f"fifo diff: exit {r.code}, {err(r)!r}")

# --max-memory is on every command, and a bad value is a usage error.
for cmd in ("summary", "report", "diff", "export", "dump", "info", "metrics"):
    h = run_measured([cmd, "--help"])
    expect(h.code == 0 and "--max-memory" in out(h), f"{cmd} --help does not list --max-memory")
r = run_measured(["summary", "--max-memory", "lots", P("missing_end.gpscope")])
expect(r.code == 2 and "--max-memory" in err(r), f"bad --max-memory: exit {r.code}, {err(r)!r}")

if failures:
    print(f"\n{len(failures)} failure(s)")
    sys.exit(1)
print("\nall hostile-trace regressions passed")
