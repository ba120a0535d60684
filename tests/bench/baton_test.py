"""bench/overhead_baton.py's relay and statistics, on stand-in workloads of known cost
(baton_fake_worker.py) under a drift of +-40% that every process shares."""
import contextlib
import io
import json
import os
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import overhead_baton  # noqa: E402

WORKER = [sys.executable, os.path.join(HERE, "baton_fake_worker.py")]


def procs(costs, extra_env=None):
    out = []
    for name, us in costs.items():
        env = dict(os.environ, FAKE_US=str(us))
        env.update((extra_env or {}).get(name, {}))
        out.append((name, list(WORKER), env))
    return out


class BatonTest(unittest.TestCase):
    def test_pairs_blocks_of_a_lap_and_recovers_known_costs(self):
        costs = {"baseline": 1500, "gpscope": 1800, "nsys": 1700}  # added 300 and 200: 1.5x
        gens = []
        for g in range(2):
            with tempfile.TemporaryDirectory() as d:
                blocks = overhead_baton.run_generation(procs(costs), 80, d)
            self.assertEqual(sorted(blocks), sorted(costs))
            for name in costs:
                self.assertEqual(len(blocks[name]), 80, name)
            gens.append(blocks)
        s = overhead_baton.summarize(gens, reps=300)
        # The drift moves single blocks by up to +-40%; pairing within a lap cancels it. It
        # scales every cost alike (and the laps it slows are sampled less often), so the added
        # time is checked against the same laps' baseline: 300 and 200 over 1500 us.
        base = s["median"]["baseline"]
        self.assertAlmostEqual(s["added_median"]["gpscope"] / base, 0.2, delta=0.04)
        self.assertAlmostEqual(s["added_median"]["nsys"] / base, 0.1333, delta=0.04)
        r = s["ratios"]["nsys"]
        self.assertLess(r["lo"], 1.5)
        self.assertGreater(r["hi"], 1.5)
        self.assertLess(r["hi"] - r["lo"], 1.0)
        m = s["added_mean"]["gpscope"]
        self.assertLessEqual(m["lo"], m["mean"])
        self.assertGreaterEqual(m["hi"], m["mean"])

    def test_resummarize_reads_finished_generations_and_skips_cut_ones(self):
        with tempfile.TemporaryDirectory() as root:
            for g in range(2):
                work = os.path.join(root, f"g{g}")
                os.mkdir(work)
                overhead_baton.run_generation(procs({"baseline": 500, "gpscope": 700}), 30, work)
                with open(os.path.join(work, "meta.json"), "w") as f:
                    json.dump({"suite": "fake (us/block)", "per_block": 1, "unit": 1.0,
                               "warm": 5}, f)
            cut = os.path.join(root, "g2")  # a generation its time limit ended: no JSON line
            os.mkdir(cut)
            with open(os.path.join(cut, "meta.json"), "w") as f:
                json.dump({"suite": "fake (us/block)", "per_block": 1, "unit": 1.0, "warm": 5}, f)
            open(os.path.join(cut, "baseline.out"), "w").close()
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                overhead_baton.resummarize([root])
            self.assertIn("fake (us/block): 2 generations x [25, 25] laps", out.getvalue())
            self.assertIn("g2: incomplete generation, left out", err.getvalue())

    def test_a_process_that_dies_ends_the_run_with_its_name(self):
        with tempfile.TemporaryDirectory() as d:
            t0 = time.monotonic()
            with self.assertRaises(overhead_baton.RelayError) as e:
                overhead_baton.run_generation(
                    procs({"baseline": 200, "gpscope": 200},
                          {"gpscope": {"FAKE_DIE_AFTER": "5"}}), 50, d, lap_s=20)
            self.assertIn("gpscope exited", str(e.exception))
            self.assertLess(time.monotonic() - t0, 15)

    def test_a_process_that_never_gets_ready_times_out(self):
        with tempfile.TemporaryDirectory() as d:
            hang = [("baseline", list(WORKER), dict(os.environ, FAKE_US="100")),
                    ("stuck", [sys.executable, "-c", "import time, sys; time.sleep(60)"],
                     dict(os.environ))]
            t0 = time.monotonic()
            with self.assertRaises(overhead_baton.RelayError) as e:
                overhead_baton.run_generation(hang, 5, d, ready_s=2)
            self.assertIn("ready", str(e.exception))
            self.assertLess(time.monotonic() - t0, 10)


if __name__ == "__main__":
    unittest.main()
