"""Shared by the corpus workloads (bench/corpus/py/*.py): the command line,
the steady-phase clock and the result line. Nothing here knows about
gpscope, and it imports no GPU library: each workload imports its own.

  from corpus_common import Steady, run

  def main(args):
      ...warm-up...
      steady = Steady(args.seconds)
      while steady.running():
          ...one step...
          steady.tick()
      sync()                      # drain the GPU before the clock stops
      return steady.result(extra=1)

  if __name__ == "__main__":
      run(main, seconds=4)

run() prints one line on stdout, `CORPUS_RESULT {json}`, with
{"workload", "ok", "steps", "steady_s", "step_ms", ...}; on an exception it
prints the traceback on stderr, `CORPUS_RESULT {"ok": false, "error": ...}`
and exits 1, so bench/corpus/run_corpus.py records a clear failure and goes
on with the next workload.
"""
import argparse
import json
import os
import sys
import time
import traceback

# No network on the GPU machine: Hugging Face libraries must not try.
for _k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_k, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

NAME = os.path.splitext(os.path.basename(sys.argv[0]))[0]


def log(msg):
    print(f"[{NAME}] {msg}", file=sys.stderr, flush=True)


class Steady:
    """The steady phase of a workload: runs until `seconds` have passed and
    at least `min_steps` steps were counted."""

    def __init__(self, seconds, min_steps=3):
        self.seconds = float(seconds)
        self.min_steps = min_steps
        self.steps = 0
        self.t0 = time.perf_counter()
        self.end = self.t0 + self.seconds

    def running(self):
        return self.steps < self.min_steps or time.perf_counter() < self.end

    def tick(self, n=1):
        self.steps += n

    def result(self, **extra):
        elapsed = time.perf_counter() - self.t0
        out = {"steps": self.steps, "steady_s": round(elapsed, 3),
               "step_ms": round(1e3 * elapsed / max(self.steps, 1), 3)}
        out.update(extra)
        return out


def versions(*modules):
    """{"torch": "2.11.0", ...} for the modules given (already imported)."""
    out = {}
    for m in modules:
        out[m.__name__.split(".")[0]] = getattr(m, "__version__", "?")
    return out


def run(main, seconds=4.0, extra_args=None):
    """Parses --seconds (and extra_args(parser)), calls main(args), prints
    the result line. Exit code 0 on success, 1 on any exception."""
    ap = argparse.ArgumentParser(description=(sys.modules["__main__"].__doc__ or "").split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=seconds, help="steady seconds after warm-up")
    if extra_args is not None:
        extra_args(ap)
    args = ap.parse_args()
    t0 = time.perf_counter()
    try:
        result = main(args) or {}
    except BaseException as e:  # noqa: BLE001 - every failure gets one clear line
        if isinstance(e, SystemExit) and e.code in (0, None):
            raise
        traceback.print_exc()
        err = f"{type(e).__name__}: {e}".splitlines()[0][:300]
        print("CORPUS_RESULT " + json.dumps({"workload": NAME, "ok": False, "error": err}), flush=True)
        log(f"FAILED: {err}")
        sys.exit(1)
    result = dict(result)
    result.setdefault("ok", True)
    result["workload"] = NAME
    result["wall_s"] = round(time.perf_counter() - t0, 3)
    print("CORPUS_RESULT " + json.dumps(result, default=str), flush=True)
