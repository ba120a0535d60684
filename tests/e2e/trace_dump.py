"""Loads a gpscope trace through `gpscope-analyze dump` (JSON lines) for the
GPU e2e checks. Shared by check_workload.py and check_torch.py."""
import collections
import glob
import json
import os
import subprocess


class Trace:
    def __init__(self, analyze_bin, trace_dir):
        self.files = sorted(glob.glob(os.path.join(trace_dir, "*.gpscope")))
        if not self.files:
            raise SystemExit(f"FAIL: no trace file in {trace_dir}")
        p = subprocess.run([analyze_bin, "dump", *self.files], capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"FAIL: gpscope-analyze dump exited {p.returncode}: {p.stderr}")
        self.warnings = [l for l in p.stderr.splitlines() if l.strip()]
        self.by_type = collections.defaultdict(list)
        for line in p.stdout.splitlines():
            ev = json.loads(line)
            self.by_type[ev["type"]].append(ev)

    def __getitem__(self, t):
        return self.by_type.get(t, [])


class Checker:
    def __init__(self, name):
        self.name = name
        self.failures = []
        self.passed = 0

    def eq(self, what, got, want):
        if got == want:
            self.passed += 1
            print(f"  ok   {what}: {got}")
        else:
            self.failures.append(f"{what}: got {got}, want {want}")
            print(f"  FAIL {what}: got {got}, want {want}")

    def true(self, what, cond, detail=""):
        if cond:
            self.passed += 1
            print(f"  ok   {what} {detail}")
        else:
            self.failures.append(f"{what} {detail}")
            print(f"  FAIL {what} {detail}")

    def finish(self):
        print(f"{self.name}: {self.passed} passed, {len(self.failures)} failed")
        return 1 if self.failures else 0
