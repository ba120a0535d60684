"""Tests of the corpus scripts that run without a GPU (ctest corpus_scripts):
run_corpus.py end to end on stand-in workloads and a stand-in
gpscope-analyze (watchdog, failures, budget, packing caps and parts, trace
clean-up), compare.py's verdicts and summary on what that run packed (and
on a re-analysis), and check_manifest.py's checks on broken copies of the
real manifest.

  python3 -m unittest discover -s bench/corpus -p 'test_*.py' -v
"""
import copy
import json
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import check_manifest  # noqa: E402

MIB = 1 << 20

# A stand-in for gpscope-analyze: the first line of each trace names the
# finding ("FINDING rule severity"); STANDIN_NONE=1 makes it find nothing.
ANALYZER = """\
#!{py}
import json, os, sys
args = sys.argv[1:]
if args[:1] != ["summary"]:
    sys.exit(2)
files = [a for a in args[1:] if not a.startswith("--") and a != "json"]
findings = []
for f in files:
    with open(f, "rb") as fh:
        words = fh.readline().decode(errors="replace").split()
    if words[:1] == ["FINDING"] and os.environ.get("STANDIN_NONE") != "1":
        findings.append({{"rule": words[1], "severity": words[2], "cost_ns": 2500000}})
findings.append({{"rule": "dominant-kernel", "severity": "info", "cost_ns": 1}})
if "--format" in args:
    print(json.dumps({{"schema": "gpscope.summary/1", "findings": findings}}))
else:
    print("text summary of", len(files), "file(s)")
"""

# A stand-in workload: writes a trace of SIZE bytes whose first line is
# FIRST, prints its result line, and exits RC; SLEEP seconds first.
WORKLOAD = """\
import json, os, sys, time
first, size, rc, sleep = {first!r}, {size}, {rc}, {sleep}
time.sleep(sleep)
out = os.environ["GPSCOPE_OUTPUT"]
with open(os.path.join(out, os.environ["GPSCOPE_JOB"] + "_host.gpscope"), "wb") as f:
    head = (first + "\\n").encode()
    f.write(head + os.urandom(max(0, size - len(head))))
print("CORPUS_RESULT " + json.dumps({{"ok": rc == 0, "steps": 7, "step_ms": 1.5,
      "blocking": os.environ.get("CUDA_LAUNCH_BLOCKING"), "seconds_arg": sys.argv[-1]}}))
sys.exit(rc)
"""


def workload(name, expected, prog, **kw):
    w = {"name": name, "kind": "python", "program": prog, "seconds": 1, "timeout_s": 20, "est_s": 2,
         "libraries": [], "env": {}, "healthy": expected == "none", "bottleneck": "x",
         "expected": expected, "needs_new_rule": False, "acceptable": [], "sites": [],
         "issue20": False}
    w.update(kw)
    return w


class RunAndCompareTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        t = cls.tmp.name
        bindir = os.path.join(t, "bin")
        os.makedirs(bindir)
        open(os.path.join(bindir, "libgpscope_inject.so"), "w").close()
        an = os.path.join(bindir, "gpscope-analyze")
        with open(an, "w") as f:
            f.write(ANALYZER.format(py=sys.executable))
        os.chmod(an, 0o755)
        cls.analyzer = an

        def prog(name, first="FINDING host-sync warning", size=1000, rc=0, sleep=0.0):
            p = os.path.join(t, f"{name}.py")
            with open(p, "w") as f:
                f.write(WORKLOAD.format(first=first, size=size, rc=rc, sleep=sleep))
            return p

        ws = [
            workload("right", "host-sync", prog("right")),
            workload("alt", "host-sync", prog("alt", "FINDING implicit-sync warning"),
                     acceptable=["implicit-sync"]),
            workload("wrong", "data-starvation", prog("wrong", "FINDING launch-bound critical")),
            workload("awaits", "host-bound", prog("awaits", "FINDING data-starvation warning"),
                     needs_new_rule=True),
            workload("clean", "none", prog("clean", "no findings here")),
            workload("big", "host-sync", prog("big", size=3 * MIB)),
            workload("big2", "host-sync", prog("big2", size=3 * MIB)),
            workload("huge", "host-sync", prog("huge", size=6 * MIB)),
            workload("crash", "host-sync", prog("crash", rc=3)),
            workload("hang", "host-sync", prog("hang", sleep=30), timeout_s=3),
            workload("envvar", "host-sync", prog("envvar"), env={"CUDA_LAUNCH_BLOCKING": "1"}),
            workload("skipped", "host-sync", prog("skipped"), est_s=100000),
        ]
        cls.manifest = {"schema": "gpscope.corpus/1", "workloads": ws}
        cls.mpath = os.path.join(t, "manifest.json")
        with open(cls.mpath, "w") as f:
            json.dump(cls.manifest, f)
        cls.out = os.path.join(t, "out")
        cls.proc = subprocess.run(
            [sys.executable, os.path.join(HERE, "run_corpus.py"), "--bin", bindir, "--out", cls.out,
             "--manifest", cls.mpath, "--budget-s", "120", "--part-mb", "5", "--trace-cap-mb", "5",
             "--max-parts", "2"], capture_output=True, text=True, timeout=120)
        with tarfile.open(os.path.join(cls.out, "corpus.tar.gz")) as tar:
            cls.results = json.load(tar.extractfile("corpus/results.json"))
            cls.packed = tar.extractfile("corpus/packed.tsv").read().decode()
            cls.names1 = tar.getnames()
        cls.recs = {r["name"]: r for r in cls.results["records"]}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def archives(self):
        return sorted(os.path.join(self.out, n) for n in os.listdir(self.out) if n.endswith(".tar.gz"))

    def test_runner_fails_overall_when_a_workload_fails(self):
        self.assertEqual(self.proc.returncode, 1, self.proc.stdout + self.proc.stderr)

    def test_each_workload_gets_its_status_rc_and_result(self):
        r = self.recs
        self.assertEqual(r["right"]["status"], "ok")
        self.assertEqual(r["right"]["rc"], 0)
        self.assertEqual(r["right"]["result"]["steps"], 7)
        self.assertEqual(r["right"]["result"]["seconds_arg"], "1")  # --seconds from the manifest
        self.assertEqual(r["right"]["top"][0], "host-sync (warning)")
        self.assertEqual(r["crash"]["status"], "failed")
        self.assertEqual(r["crash"]["rc"], 3)
        self.assertTrue(r["crash"]["error"].startswith("exit 3: CORPUS_RESULT"), r["crash"]["error"])
        self.assertEqual(r["skipped"]["status"], "not run")
        self.assertIn("budget", r["skipped"]["error"])

    def test_watchdog_stops_a_hung_workload_and_the_rest_run(self):
        h = self.recs["hang"]
        self.assertTrue(h["timed_out"], h)
        self.assertEqual(h["rc"], 124)
        self.assertLess(h["seconds"], 15)
        self.assertEqual(self.recs["envvar"]["status"], "ok")  # listed after it

    def test_workload_env_reaches_the_program(self):
        self.assertEqual(self.recs["envvar"]["result"]["blocking"], "1")
        self.assertIsNone(self.recs["right"]["result"]["blocking"])

    def test_packing_caps_traces_splits_parts_and_cleans_up(self):
        arcs = self.archives()
        self.assertEqual([os.path.basename(a) for a in arcs], ["corpus-2.tar.gz", "corpus.tar.gz"])
        for a in arcs:
            self.assertLessEqual(os.path.getsize(a), 5 * MIB)
        rows = {line.split("\t")[0]: line.split("\t")[3] for line in self.packed.splitlines()[1:]}
        self.assertIn("over the 5 MiB cap", rows["huge"])
        self.assertEqual(rows["right"], "corpus.tar.gz")
        self.assertEqual(sorted([rows["big"], rows["big2"]]), ["corpus-2.tar.gz", "corpus.tar.gz"])
        self.assertIn("corpus/huge/summary.json", self.names1)  # summary kept without its trace
        left = [f for _, _, fs in os.walk(os.path.join(self.out, "run")) for f in fs
                if f.endswith(".gpscope")]
        self.assertEqual(left, [])

    def test_compare_gives_each_verdict(self):
        out = subprocess.run([sys.executable, os.path.join(HERE, "compare.py"), "--format", "json",
                              *self.archives()], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        d = json.loads(out.stdout)
        v = {r["name"]: r["verdict"] for r in d["rows"]}
        self.assertEqual(v, {"right": "match", "alt": "acceptable", "wrong": "MISS", "awaits": "new rule",
                             "clean": "match", "big": "match", "big2": "match", "huge": "match",
                             "crash": "failed", "hang": "failed", "envvar": "match",
                             "skipped": "not run"})
        self.assertIn("top finding right 7 (match 6, acceptable 1), MISS 1, awaiting a new rule 1; "
                      "failed 2, not run 1. Healthy controls clean 1/1", d["summary"])

    def test_compare_reanalyzes_packed_traces_and_keeps_summaries_of_left_out_ones(self):
        env = dict(os.environ, STANDIN_NONE="1")
        out = subprocess.run([sys.executable, os.path.join(HERE, "compare.py"), "--format", "json",
                              "--analyze", self.analyzer, *self.archives()],
                             capture_output=True, text=True, env=env)
        self.assertEqual(out.returncode, 0, out.stderr)
        rows = {r["name"]: r for r in json.loads(out.stdout)["rows"]}
        self.assertEqual(rows["right"]["actual"], "none")  # re-analyzed: nothing found now
        self.assertEqual(rows["right"]["verdict"], "MISS")
        self.assertEqual(rows["huge"]["actual"], "host-sync")  # trace left out: packed summary
        self.assertTrue(rows["huge"]["shown"].endswith("*"))

    def test_compare_markdown_has_the_table_and_the_confusion_matrix(self):
        out = subprocess.run([sys.executable, os.path.join(HERE, "compare.py"), "--format", "md",
                              *self.archives()], capture_output=True, text=True)
        self.assertIn("| wrong | data-starvation | launch-bound (critical, 2.5 ms) | MISS |", out.stdout)
        self.assertIn("| expected \\ actual |", out.stdout)

    def test_sigterm_stops_the_running_workload_and_still_packs(self):
        t = self.tmp.name
        ws = [workload("first", "host-sync", os.path.join(t, "right.py")),
              workload("sleeper", "host-sync", os.path.join(t, "hang.py"), timeout_s=60),
              workload("never", "host-sync", os.path.join(t, "right.py"))]
        mpath = os.path.join(t, "manifest-term.json")
        with open(mpath, "w") as f:
            json.dump({"workloads": ws}, f)
        out = os.path.join(t, "out-term")
        p = subprocess.Popen([sys.executable, os.path.join(HERE, "run_corpus.py"), "--bin",
                              os.path.dirname(self.analyzer), "--out", out, "--manifest", mpath],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 30
        while time.time() < deadline and not os.path.isdir(os.path.join(out, "run", "sleeper")):
            time.sleep(0.1)
        time.sleep(1.0)
        t0 = time.time()
        p.send_signal(signal.SIGTERM)
        log, _ = p.communicate(timeout=30)
        self.assertLess(time.time() - t0, 10, log)
        self.assertEqual(p.returncode, 1, log)
        with tarfile.open(os.path.join(out, "corpus.tar.gz")) as tar:
            recs = {r["name"]: r for r in json.load(tar.extractfile("corpus/results.json"))["records"]}
        self.assertEqual(recs["first"]["status"], "ok")
        self.assertEqual(recs["sleeper"]["error"], "interrupted by SIGTERM")
        self.assertNotIn("never", recs)

    def test_unknown_workload_is_bad_usage(self):
        r = subprocess.run([sys.executable, os.path.join(HERE, "run_corpus.py"), "--bin", "/nonexistent",
                            "--out", os.path.join(self.tmp.name, "o2"), "--manifest", self.mpath,
                            "--only", "nope"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown workload(s) nope", r.stderr)


@unittest.skipUnless(os.environ.get("CORPUS_ANALYZER"), "CORPUS_ANALYZER (a gpscope-analyze) not set")
class RealAnalyzerTest(unittest.TestCase):
    """compare.py --analyze with the real gpscope-analyze on recorded H200
    traces (tests/data): the top finding it reports is the first
    warning/critical finding of the analyzer's own JSON, whatever the rules
    say today."""

    TRACES = {"starved": "torch_train_starved.gpscope", "sync": "torch_train_sync.gpscope"}

    def test_compare_reads_the_real_summary_schema(self):
        analyzer = os.environ["CORPUS_ANALYZER"]
        data = os.path.join(check_manifest.REPO, "tests", "data")
        with tempfile.TemporaryDirectory() as t:
            ws = [workload(n, "data-starvation", "x.py") for n in self.TRACES]
            os.makedirs(os.path.join(t, "corpus"))
            with open(os.path.join(t, "corpus", "manifest.json"), "w") as f:
                json.dump({"workloads": ws}, f)
            want = {}
            for name, trace in self.TRACES.items():
                d = os.path.join(t, "corpus", name)
                os.makedirs(d)
                with open(os.path.join(data, trace), "rb") as src:
                    blob = src.read()
                with open(os.path.join(d, trace), "wb") as dst:
                    dst.write(blob)
                r = subprocess.run([analyzer, "summary", "--format", "json", os.path.join(data, trace)],
                                   capture_output=True, text=True, check=True)
                loud = [f["rule"] for f in json.loads(r.stdout)["findings"]
                        if f["severity"] in ("warning", "critical")]
                want[name] = loud[0] if loud else "none"
            out = subprocess.run([sys.executable, os.path.join(HERE, "compare.py"), "--format", "json",
                                  "--analyze", analyzer, t], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            rows = {r["name"]: r for r in json.loads(out.stdout)["rows"]}
            for name in self.TRACES:
                self.assertEqual(rows[name]["actual"], want[name])
                self.assertEqual(rows[name]["verdict"],
                                 "match" if want[name] == "data-starvation" else "MISS")


class CheckManifestTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(HERE, "manifest.json")) as f:
            cls.m = json.load(f)
        cls.rules = check_manifest.catalogue(os.path.join(check_manifest.REPO, "tools/analyses/rules.cc"))

    def problems(self, edit):
        m = copy.deepcopy(self.m)
        edit(m)
        return "\n".join(check_manifest.check(m, self.rules))

    def by_name(self, m, name):
        return next(w for w in m["workloads"] if w["name"] == name)

    def test_the_committed_manifest_passes(self):
        self.assertEqual(check_manifest.check(self.m, self.rules), [])

    def test_catalogue_reads_rule_ids_not_evidence_keys(self):
        self.assertIn("data-starvation", self.rules)
        self.assertIn("straggler-rank", self.rules)
        self.assertNotIn("kernels", self.rules)

    def test_a_site_line_that_moved_is_caught(self):
        p = self.problems(lambda m: self.by_name(m, "item_then_host")["sites"][0].update(line=1))
        self.assertIn("site item: line 1 but the tag is on line", p)

    def test_an_unlisted_tag_is_caught(self):
        p = self.problems(lambda m: self.by_name(m, "empty_cache_loop").update(sites=[]))
        self.assertIn("has 'site:empty_cache' that the manifest does not list", p)

    def test_an_unknown_rule_must_be_marked_new(self):
        p = self.problems(lambda m: self.by_name(m, "tiny_ops_64").update(expected="launch-storm"))
        self.assertIn("launch-storm is not a rule of rules.cc", p)

    def test_a_new_rule_that_exists_is_caught(self):
        def edit(m):
            w = self.by_name(m, "tiny_ops_64")
            w.update(needs_new_rule=True, expected_cause="x" * 50)
        self.assertIn("launch-bound exists in rules.cc", self.problems(edit))

    def test_healthy_controls_expect_none(self):
        p = self.problems(lambda m: self.by_name(m, "sgemm").update(expected="low-occupancy"))
        self.assertIn("a healthy control expects 'none'", p)

    def test_readme_table_is_current_and_a_stale_one_is_caught(self):
        self.assertEqual(check_manifest.readme_problems(self.m), [])
        m = copy.deepcopy(self.m)
        self.by_name(m, "cufft")["expected"] = "dominant-kernel"
        self.assertIn("table is stale", "\n".join(check_manifest.readme_problems(m)))

    def test_too_small_a_corpus_is_caught(self):
        p = self.problems(lambda m: m.update(workloads=m["workloads"][:10]))
        self.assertIn("want at least 24", p)


if __name__ == "__main__":
    unittest.main()
