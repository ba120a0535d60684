"""A stand-in workload for tests/bench/baton_test.py: each block busy-waits FAKE_US
microseconds times a drift factor every process shares (a function of the wall clock, as the
lent GPU's launch rate drifts), through bench/workloads/baton.py's relay."""
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                                "workloads"))
import baton  # noqa: E402


def block():
    drift = 1.0 + 0.4 * math.sin(time.time() * 7.0)  # +-40%, common to every process
    end = time.perf_counter() + float(os.environ["FAKE_US"]) * drift / 1e6
    while time.perf_counter() < end:
        pass


if __name__ == "__main__":
    if os.environ.get("FAKE_DIE_AFTER"):
        n = [int(os.environ["FAKE_DIE_AFTER"])]

        def dying():
            n[0] -= 1
            if n[0] < 0:
                os._exit(7)
            block()
        baton.relay(sys.argv[sys.argv.index("--baton") + 1], dying)
    spec = sys.argv[sys.argv.index("--baton") + 1]
    print(json.dumps({"block_us": baton.relay(spec, block)}), flush=True)
