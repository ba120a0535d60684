"""Checks one traced workload's call stacks (tests/e2e/stacks_gpu.sh).

  python3 check_stacks.py FACTS CASE SITE STEPS TRIGGERS [MODULE FUNC]

FACTS: tests/e2e/stack_facts output (JSON lines). SITE: "file.py:LINE" (or
"file.cu:LINE" with MODULE, the native executable whose frames are the
user's, and FUNC, the function dladdr names there). TRIGGERS: the
comma-separated triggers that count (e.g. SYNC or SYNC,AFTER_IDLE).

The innermost user frame of a stack: Python frames outside site-packages,
dist-packages and the standard library; for a native case, the first frame
in MODULE (its line from addr2line when it is installed, else its function
name). Prints one line, PASS or FAIL, with the numbers: at least 90% of the
STEPS steps must have a counted stack at SITE; every sample must join an API
record (>= 99%: CUPTI may drop records); no id before its definition.
Exit 0 on PASS, 1 on FAIL.
"""
import collections
import json
import os
import shutil
import subprocess
import sys


def user_frame_py(frames):
    for f in frames:
        if f["kind"] != "py":
            continue
        path = f["file"]
        if ("/site-packages/" in path or "/dist-packages/" in path or path.startswith("<")
                or "/lib/python3" in path):
            continue
        return "%s:%d" % (os.path.basename(path), f["line"])
    return None


def main():
    facts, case, site, steps, triggers = sys.argv[1:6]
    module = sys.argv[6] if len(sys.argv) > 6 else ""
    func = sys.argv[7] if len(sys.argv) > 7 else ""
    steps = int(steps)
    triggers = set(triggers.split(","))
    samples, summary = [], {}
    with open(facts) as f:
        for line in f:
            if not line.strip():
                continue
            j = json.loads(line)
            if j.get("summary"):
                summary = j
            else:
                samples.append(j)
    addr2line = shutil.which("addr2line")
    lines = {}

    def user_frame_native(frames):
        for f in frames:
            if f["kind"] != "native" or os.path.basename(f["file"]) != module:
                continue
            if addr2line:
                key = (f["file"], f["offset"])
                if key not in lines:
                    p = subprocess.run([addr2line, "-e", f["file"], hex(f["offset"])],
                                       capture_output=True, text=True)
                    loc = p.stdout.strip().split(" ")[0]
                    lines[key] = os.path.basename(loc.split(":")[0]) + ":" + loc.split(":")[-1] \
                        if ":" in loc else "?"
                return lines[key]
            return f["func"] or "?"

    want = site if (not module or addr2line) else func
    sites = collections.Counter()
    at_site = 0
    counted = 0
    for s in samples:
        if s["trigger"] not in triggers:
            continue
        counted += 1
        u = user_frame_native(s["frames"]) if module else user_frame_py(s["frames"])
        sites[u] += 1
        if u == want:
            at_site += 1
    joined = summary.get("joined", 0)
    total = summary.get("samples", 0)
    problems = []
    if at_site < 0.9 * steps:
        problems.append("%d stacks at %s, want >= %d" % (at_site, want, int(0.9 * steps + 0.999)))
    if total == 0 or joined < 0.99 * total:
        problems.append("%d of %d samples join an API record" % (joined, total))
    if summary.get("order_errors", 1) != 0:
        problems.append("%s ids used before their definition" % summary.get("order_errors"))
    top = ", ".join("%s x%d" % (k, v) for k, v in sites.most_common(3))
    print("%s %s: %d steps, %d samples (%d joined), %d %s stacks, %d at %s; drops %d; top sites: %s%s"
          % ("PASS" if not problems else "FAIL", case, steps, total, joined, counted,
             "/".join(sorted(triggers)), at_site, want, summary.get("stack_drops", 0), top,
             "" if not problems else " -- " + "; ".join(problems)))
    print("  capabilities: %s" % summary.get("capabilities"))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
