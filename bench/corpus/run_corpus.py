#!/usr/bin/env python3
"""bench/corpus/run_corpus.py: runs the real-program corpus (issue 21) on a
GPU machine, each workload traced by gpscope, and packs what came out.

  run_corpus.py --bin BIN_DIR --out OUT_DIR [--only "a b"] [--budget-s S]

BIN_DIR holds libgpscope_inject.so, gpscope-analyze and the corpus_*
programs (scripts/gpu_bundle.sh's .carry/bin, or a build tree). For each
workload of manifest.json, in its order:

  CUDA_INJECTION64_PATH=BIN/libgpscope_inject.so GPSCOPE_OUTPUT=OUT/run/NAME/trace \
  GPSCOPE_JOB=corpus-NAME [the workload's env] timeout -k 5 T PROGRAM --seconds S

(T = its timeout_s, or less when the budget is nearly spent; a workload
whose est_s no longer fits in the budget is not started and is recorded as
"not run"; analyses still running 15 s after the budget are given up, so
a caller allowing the budget + 30 s gets the archives). Each one's rc, wall
seconds and own result line (CORPUS_RESULT
{json}: steps, steady seconds, step time) are recorded; while the next
workload runs, `gpscope-analyze summary --format json` (and the text
summary) of its trace are made in the background. A failure of one
workload never stops the others.

At the end (or on SIGTERM/SIGINT: the running workload is stopped and
what exists is packed) OUT gets:
  corpus.tar.gz     results.json (one record per workload), manifest.json
                    as run, runner.log, packed.tsv (which trace is where, or
                    why it was left out), NAME/{log.txt, summary.json,
                    summary.txt, analyze.err}, and the traces (.gpscope) in
                    manifest order while they fit
  corpus-2.tar.gz   more traces, only when they did not fit in the first
  ...               (--max-parts, default 3)
Each archive stays under --part-mb (default 15 MiB: the GPU tool returns
files of at most 16 MiB); a trace above --trace-cap-mb (default 4 MiB) is
left out (its summary is kept). The traces are then deleted from OUT/run,
so a caller that archives OUT does not carry them twice.

bench/corpus/compare.py reads these archives and prints the confusion
table. Exit code: 0 when every workload that ran exited 0 and has a
summary, 1 otherwise, 2 on bad usage.
"""
import argparse
import glob
import io
import json
import os
import shutil
import signal
import site
import subprocess
import sys
import tarfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "manifest.json")
MIB = 1 << 20


class Stop(Exception):
    """SIGTERM/SIGINT: stop the running workload, pack, exit."""


def on_signal(signum, _frame):
    raise Stop(signal.Signals(signum).name)


class Log:
    """Prints and keeps every line for runner.log."""

    def __init__(self):
        self.lines = []

    def __call__(self, msg):
        line = f"[corpus {time.strftime('%H:%M:%S')}] {msg}"
        self.lines.append(line)
        print(line, flush=True)


def find_bin(bindir, name):
    for d in ("", "inject", "tools", "tools/gpscope", "tests/e2e", "bench", "bench/corpus"):
        p = os.path.join(bindir, d, name)
        if os.path.isfile(p):
            return p
    return None


def native_lib_dirs():
    """Directories holding the CUDA libraries the corpus_* programs load
    (libcublas.so.13, libcufft.so.12): the toolkit's, then pip's nvidia
    wheels' (a fallback where the toolkit lacks them)."""
    cands = ["/usr/local/cuda/lib64", "/usr/local/cuda/lib",
             "/usr/local/cuda/targets/x86_64-linux/lib"]
    if os.environ.get("CUDA_HOME"):
        cands.insert(0, os.path.join(os.environ["CUDA_HOME"], "lib64"))
    roots = []
    try:
        roots = site.getsitepackages()
    except AttributeError:  # some virtualenvs
        pass
    for r in roots:
        cands += sorted(glob.glob(os.path.join(r, "nvidia", "*", "lib")))
    out = []
    for d in cands:
        if d not in out and any(os.path.exists(os.path.join(d, f))
                                for f in ("libcublas.so.13", "libcufft.so.12")):
            out.append(d)
    return out


def load_manifest(path):
    with open(path) as f:
        m = json.load(f)
    return m, m["workloads"]


def result_line(log_path):
    """The last CORPUS_RESULT {json} line of a workload's log, or None."""
    found = None
    try:
        with open(log_path, errors="replace") as f:
            for line in f:
                if line.startswith("CORPUS_RESULT "):
                    try:
                        found = json.loads(line[len("CORPUS_RESULT "):])
                    except ValueError:
                        found = {"ok": False, "error": "unparsable result line"}
    except OSError:
        pass
    return found


def tail(path, n=4):
    try:
        with open(path, errors="replace") as f:
            return [line.rstrip("\n")[:300] for line in f.readlines()[-n:]]
    except OSError:
        return []


def analyze(analyzer, traces, wdir, timeout_s=60):
    """gpscope-analyze summary (JSON, then text) of one workload's traces.
    Returns (rc of the JSON summary, its top findings)."""
    j, t, e = (os.path.join(wdir, n) for n in ("summary.json", "summary.txt", "analyze.err"))
    rc = None
    with open(j, "w") as out, open(e, "w") as err:
        try:
            rc = subprocess.run([analyzer, "summary", "--format", "json", *traces], stdout=out,
                                stderr=err, timeout=timeout_s).returncode
        except subprocess.TimeoutExpired:
            err.write(f"run_corpus: gpscope-analyze summary --format json timed out after {timeout_s} s\n")
            rc = 124
    with open(t, "w") as out, open(e, "a") as err:
        try:
            subprocess.run([analyzer, "summary", *traces], stdout=out, stderr=err, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            err.write(f"run_corpus: gpscope-analyze summary timed out after {timeout_s} s\n")
    top = []
    try:
        with open(j) as f:
            for fd in json.load(f).get("findings", [])[:3]:
                top.append(f"{fd['rule']} ({fd['severity']})")
    except (OSError, ValueError, KeyError, TypeError):
        top = ["(no readable summary)"]
    return rc, top


def run_one(w, args, lib, log, native_dirs, deadline):
    """Runs workload w traced; returns its record (analysis not included)."""
    name = w["name"]
    wdir = os.path.join(args.out, "run", name)
    shutil.rmtree(wdir, ignore_errors=True)
    tdir = os.path.join(wdir, "trace")
    cwd = os.path.join(wdir, "cwd")
    os.makedirs(tdir)
    os.makedirs(cwd)
    seconds = args.seconds if args.seconds is not None else w["seconds"]
    if w["kind"] == "python":
        cmd = [sys.executable, os.path.join(HERE, w["program"]), "--seconds", str(seconds)]
    else:
        prog = find_bin(args.bin, w["program"])
        if prog is None:
            return {"name": name, "status": "failed", "rc": None, "seconds": 0.0,
                    "error": f"{w['program']} not built (run scripts/gpu_bundle.sh)"}
        cmd = [prog, "--seconds", str(seconds)]
    limit = int(max(3, min(w["timeout_s"], deadline - time.time())))
    env = dict(os.environ)
    for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        env.setdefault(k, "1")  # no network on the GPU machine: never try the Hub
    env.update({k: str(v) for k, v in w.get("env", {}).items()})
    env.update(CUDA_INJECTION64_PATH=lib, GPSCOPE_OUTPUT=tdir, GPSCOPE_JOB=f"corpus-{name}",
               PYTHONUNBUFFERED="1")
    if w["kind"] == "native" and native_dirs:
        old = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p]
        env["LD_LIBRARY_PATH"] = ":".join(native_dirs + old)
    log_path = os.path.join(wdir, "log.txt")
    shown_env = " ".join(f"{k}={v}" for k, v in w.get("env", {}).items())
    log(f"{name}: start ({w['kind']}, {seconds} s steady, limit {limit} s) {shown_env}".rstrip())
    t0 = time.time()
    rc = None
    with open(log_path, "w") as lf:
        lf.write(f"$ {' '.join(cmd)}\n")
        lf.flush()
        proc = subprocess.Popen(["timeout", "-k", "5", str(limit), *cmd], cwd=cwd, env=env,
                                stdout=lf, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=limit + 15)  # backstop for timeout itself
        except subprocess.TimeoutExpired:
            rc = 137
        finally:
            if proc.poll() is None or rc == 137:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # our own child's process group
                except ProcessLookupError:
                    pass
                proc.wait()
    secs = round(time.time() - t0, 2)
    shutil.rmtree(cwd, ignore_errors=True)
    traces = sorted(glob.glob(os.path.join(tdir, "*.gpscope")))
    res = result_line(log_path)
    status = "ok" if rc == 0 and traces else "failed"
    rec = {"name": name, "status": status, "rc": rc, "timed_out": rc in (124, 137),
           "seconds": secs, "limit_s": limit, "result": res,
           "traces": [{"file": os.path.basename(p), "bytes": os.path.getsize(p)} for p in traces]}
    if status != "ok":
        last = next((line for line in reversed(tail(log_path, 20)) if line.strip()), "")
        why = (res or {}).get("error") or ("timed out" if rc in (124, 137) else
                                           "no trace written" if rc == 0 else f"exit {rc}: {last.strip()}")
        rec["error"] = why
        rec["log_tail"] = tail(log_path)
    steps = (res or {}).get("steps")
    log(f"{name}: rc={rc} {secs} s" + (f", {steps} steps, {res.get('step_ms')} ms/step" if steps else "")
        + f", trace {sum(t['bytes'] for t in rec['traces']) / 1e6:.2f} MB"
        + (f"  FAILED: {rec['error']}" if status != "ok" else ""))
    return rec


def pack(args, records, manifest_text, log):
    """Writes corpus.tar.gz (+ corpus-N.tar.gz); returns the archive paths."""
    base = os.path.join(args.out, "run")
    small = []  # (path on disk, name in archive)
    traces = []
    for r in records:
        wdir = os.path.join(base, r["name"])
        for n in ("log.txt", "summary.json", "summary.txt", "analyze.err"):
            p = os.path.join(wdir, n)
            if os.path.isfile(p):
                small.append((p, f"corpus/{r['name']}/{n}"))
        for t in r.get("traces", []):
            p = os.path.join(wdir, "trace", t["file"])
            if os.path.isfile(p):
                traces.append((r, p, f"corpus/{r['name']}/{t['file']}", os.path.getsize(p)))
    part_limit = int(args.part_mb * MIB)
    cap = int(args.trace_cap_mb * MIB)
    # Small files are text and compress; count them whole anyway (safe).
    used = [sum(os.path.getsize(p) for p, _ in small) + 256 * 1024]  # + results/manifest/log
    parts = [[]]
    rows = ["workload\tfile\tbytes\tarchive"]
    for r, p, arc, size in traces:
        if size > cap:
            where = f"left out: over the {args.trace_cap_mb:g} MiB cap"
        else:
            k = next((i for i, u in enumerate(used) if u + size + 4096 <= part_limit), None)
            if k is None and len(parts) < args.max_parts:
                parts.append([])
                used.append(0)
                k = len(parts) - 1
            if k is None:
                where = f"left out: no room in {args.max_parts} archives of {args.part_mb:g} MiB"
            else:
                parts[k].append((p, arc))
                used[k] += size + 4096
                where = archive_name(k)
        rows.append(f"{r['name']}\t{os.path.basename(p)}\t{size}\t{where}")
        for t in r["traces"]:
            if t["file"] == os.path.basename(p):
                t["archive"] = where
    extra = {
        "corpus/results.json": json.dumps({"schema": "gpscope.corpus-results/1", "records": records,
                                           "args": vars(args)}, indent=1).encode(),
        "corpus/manifest.json": manifest_text.encode(),
        "corpus/packed.tsv": ("\n".join(rows) + "\n").encode(),
        "corpus/runner.log": ("\n".join(log.lines) + "\n").encode(),
    }
    out = []
    for k, files in enumerate(parts):
        path = os.path.join(args.out, archive_name(k))
        with tarfile.open(path, "w:gz", compresslevel=6) as tar:
            if k == 0:
                for arc, data in extra.items():
                    info = tarfile.TarInfo(arc)
                    info.size = len(data)
                    info.mtime = int(time.time())
                    tar.addfile(info, io.BytesIO(data))
                for p, arc in small:
                    tar.add(p, arcname=arc)
            for p, arc in files:
                tar.add(p, arcname=arc)
        out.append(path)
        log(f"packed {path}: {os.path.getsize(path) / 1e6:.2f} MB ({len(files)} traces)")
    left = [row for row in rows[1:] if "\tleft out" in row]
    if left:
        log(f"{len(left)} trace(s) left out (see packed.tsv): "
            + ", ".join(row.split("\t")[0] for row in left))
    return out


def archive_name(k):
    return "corpus.tar.gz" if k == 0 else f"corpus-{k + 1}.tar.gz"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True,
                    help="folder with libgpscope_inject.so, gpscope-analyze, corpus_*")
    ap.add_argument("--out", required=True, help="output folder (created)")
    ap.add_argument("--only", default="", help="space-separated workload names (default: all)")
    ap.add_argument("--manifest", default=MANIFEST)
    ap.add_argument("--budget-s", type=float, default=420, help="stop starting workloads after this")
    ap.add_argument("--seconds", type=float, default=None, help="override every workload's steady seconds")
    ap.add_argument("--trace-cap-mb", type=float, default=4)
    ap.add_argument("--part-mb", type=float, default=15)
    ap.add_argument("--max-parts", type=int, default=3)
    ap.add_argument("--keep-traces", action="store_true", help="leave the traces in OUT/run too")
    args = ap.parse_args()
    t_start = time.time()
    deadline = t_start + args.budget_s
    log = Log()
    try:
        with open(args.manifest) as f:
            manifest_text = f.read()
        _, workloads = load_manifest(args.manifest)
    except (OSError, ValueError, KeyError) as e:
        print(f"run_corpus: {args.manifest}: cannot read the manifest: {e}", file=sys.stderr)
        return 2
    names = [w["name"] for w in workloads]
    only = args.only.split()
    unknown = [n for n in only if n not in names]
    if unknown:
        print(f"run_corpus: unknown workload(s) {' '.join(unknown)} (known: {' '.join(names)})",
              file=sys.stderr)
        return 2
    if only:
        workloads = [w for w in workloads if w["name"] in only]
    lib = find_bin(args.bin, "libgpscope_inject.so")
    analyzer = find_bin(args.bin, "gpscope-analyze")
    if lib is None or analyzer is None:
        print(f"run_corpus: {args.bin}: libgpscope_inject.so or gpscope-analyze missing "
              "(run scripts/gpu_bundle.sh and carry .carry)", file=sys.stderr)
        return 2
    args.out = os.path.abspath(args.out)
    os.makedirs(os.path.join(args.out, "run"), exist_ok=True)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    gpu = []
    if shutil.which("nvidia-smi"):
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip().splitlines()
    native_dirs = native_lib_dirs()
    log(f"device: {gpu[0] if gpu else 'no nvidia-smi'}; "
        f"python {sys.version.split()[0]} ({sys.executable}); "
        f"{os.cpu_count()} CPUs; budget {args.budget_s:.0f} s; {len(workloads)} workloads")
    log(f"native libraries from: {', '.join(native_dirs) or 'none found (RUNPATH only)'}")
    records = []
    # One daemon thread per analysis (a trace of a few MB takes about a
    # second): a stuck gpscope-analyze can never hold the exit or the packing.
    pending = {}
    slots = threading.Semaphore(2)

    def analyze_in_background(name, traces):
        box = {}

        def work():
            with slots:
                box["result"] = analyze(analyzer, traces, os.path.join(args.out, "run", name))
        t = threading.Thread(target=work, name=f"analyze-{name}", daemon=True)
        t.start()
        pending[name] = (t, box)
    current = None
    try:
        for w in workloads:
            current = w["name"]
            left = deadline - time.time()
            if left < w.get("est_s", 15):
                records.append({"name": w["name"], "status": "not run", "rc": None, "seconds": 0.0,
                                "error": f"budget: {left:.0f} s left, est {w.get('est_s')} s"})
                log(f"{w['name']}: not run (budget: {left:.0f} s left, needs ~{w.get('est_s')} s)")
                continue
            rec = run_one(w, args, lib, log, native_dirs, deadline)
            records.append(rec)
            if rec.get("traces"):
                tdir = os.path.join(args.out, "run", w["name"], "trace")
                traces = [os.path.join(tdir, t["file"]) for t in rec["traces"]]
                analyze_in_background(w["name"], traces)
        current = None
    except Stop as e:
        log(f"{e}: stopping; packing what ran")
        if current is not None and all(r["name"] != current for r in records):
            records.append({"name": current, "status": "failed", "rc": None, "seconds": 0.0,
                            "error": f"interrupted by {e}"})
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    by_name = {r["name"]: r for r in records}
    # Analyses may run on until 15 s past the budget: the caller's limit
    # (gpu_session.sh gives the budget + 30 s) must still leave time to pack.
    for name, (t, box) in pending.items():
        t.join(timeout=max(2, deadline + 15 - time.time()))
        rc, top = box.get("result", (None, ["(analysis still running at the end)"]))
        by_name[name]["analyze_rc"] = rc
        by_name[name]["top"] = top
        if rc != 0 and by_name[name]["status"] == "ok":
            by_name[name]["status"] = "failed"
            by_name[name]["error"] = f"gpscope-analyze summary exit {rc} (analyze.err)"
    ran = [r for r in records if r["status"] != "not run"]
    ok = [r for r in ran if r["status"] == "ok"]
    log(f"{len(ok)} of {len(ran)} ran cleanly with a summary; {len(records) - len(ran)} not run; "
        f"{time.time() - t_start:.0f} s")
    for r in records:
        log(f"  {r['name']:<22} {r['status']:<8} rc={r.get('rc')} {r.get('seconds', 0):6.1f} s  "
            f"top: {', '.join(r.get('top', [])) or '-'}" + (f"  [{r['error']}]" if r.get("error") else ""))
    archives = pack(args, records, manifest_text, log)
    if not args.keep_traces:
        for p in glob.glob(os.path.join(args.out, "run", "*", "trace", "*.gpscope")):
            os.remove(p)
    log(f"archives: {' '.join(archives)}")
    return 0 if ran and len(ok) == len(ran) else 1


if __name__ == "__main__":
    sys.exit(main())
