"""Overhead benchmark: baseline vs gpscope vs the bare-CUPTI floor vs
torch.profiler, runs interleaved in one invocation (round-robin, so drift
hits every configuration alike). Prints a table and writes JSON.

  python3 bench/overhead.py --inject build/inject/libgpscope_inject.so \
      --floor build/bench/libgpscope_cupti_floor.so --tiny build/bench/tiny_kernels \
      --rounds 5 --out $OUT/overhead.json

Two collectors side by side in one run: --compare NAME=PATH adds PATH (another build of
libgpscope_inject.so, e.g. the one of an older commit) as configuration NAME to every suite,
interleaved with the others; the table then gives NAME's added time over the floor's next to
gpscope's, and gpscope's added time over NAME's (`tests/e2e/gpu_session.sh OUT
overhead_compare` runs the bundle's libgpscope_inject_base.so, built from 54d91a1).

Which part of gpscope's per-launch cost is whose: --env-variant NAME:K=V adds gpscope with
extra environment to every suite, e.g. no-api:GPSCOPE_API=0, stacks-off:GPSCOPE_STACKS=0,
no-sync:CUDA_INJECTION64_PATH=.../libgpscope_inject_diag.so,GPSCOPE_DIAG_OFF=sync (GPSCOPE_DIAG_OFF
takes memcpy, memset, sync, overhead; the GPSCOPE_DIAG_* switches are read only by that
diagnosis build, inject/diag_switches.h, so such a variant names it);
`tests/e2e/gpu_session.sh OUT overhead_parts` runs the usual set, `... overhead_stacks`
call-site stacks on against off (--only-configs keeps the run short).

Against Nsight Systems (issue 24): --nsys PATH adds configuration "nsys" (`nsys profile -t cuda`,
its report written to a scratch directory) to every suite; the table then gives gpscope's added
time over nsys's with a 95% bootstrap interval over the rounds (paired: each round's added time is
its sample minus the same round's baseline). Use --rounds 10 or more.

Configurations: baseline (no tracing), floor (a bare CUPTI client with gpscope's activity kinds
and API kinds, bench/cupti_floor.cc), floor-bare (the same without the API kinds), gpscope,
standby (gpscope loaded, tracing off), torch.profiler (CUDA activities) and torch.profiler-cpu
(CPU and CUDA) in the PyTorch suites, nsys with --nsys.

Targets (issue 3): launch-bound loop, gpscope's added time <= 1.15x the
floor's added time; training loop, <= 1% step-time increase (medians).
Between separate runs the H200's step time moves +-5%: for the training
loop's 1% see also bench/overhead_ab.py (tracing vs standby in one process).
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "workloads", "torch_train.py")


def run(cmd, env_extra, key, prefix=()):
    cmd = list(prefix) + cmd
    env = dict(os.environ)
    env.pop("CUDA_INJECTION64_PATH", None)
    env.update(env_extra)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    # A wrapper (nsys) may fail after the application finished (the H200 image's nsys
    # collects but cannot write its report): the application's own line is what counts.
    if (p.returncode != 0 and not prefix) or not lines:
        raise RuntimeError(f"{cmd} failed ({p.returncode}): {p.stderr[-2000:]}")
    line = lines[-1]
    return json.loads(line)[key]


def ratio_ci(samples, num, den, reps=4000, seed=1):
    """Median over rounds of num's added time over the median of den's, with a 95% bootstrap
    interval that resamples whole rounds (each keeps its own baseline: drift cancels)."""
    base = samples["baseline"]
    n = min(len(base), len(samples[num]), len(samples[den]))
    if n < 2:
        return None
    an = [samples[num][i] - base[i] for i in range(n)]
    ad = [samples[den][i] - base[i] for i in range(n)]

    def stat(idx):
        d = statistics.median(ad[i] for i in idx)
        return statistics.median(an[i] for i in idx) / d if d > 0 else float("nan")

    point = stat(range(n))
    rng = random.Random(seed)
    boots = sorted(x for x in (stat([rng.randrange(n) for _ in range(n)]) for _ in range(reps))
                   if x == x)
    if not boots:
        return None
    return {"ratio": point, "lo": boots[int(0.025 * len(boots))],
            "hi": boots[min(len(boots) - 1, int(0.975 * len(boots)))], "rounds": n}


def build_suites(a, outdir):
    """The suites {title: (command, JSON key, {config: (env, extra args[, prefix])})} that the
    options in a ask for (also bench/overhead_baton.py's)."""
    gp = {"CUDA_INJECTION64_PATH": os.path.abspath(a.inject), "GPSCOPE_OUTPUT": outdir}
    fl = {"CUDA_INJECTION64_PATH": os.path.abspath(a.floor)}
    # gpscope loaded but tracing off until `gpscope attach` (GPSCOPE_STANDBY=1):
    # its cost against baseline is what bench/overhead_ab.py's tracing-vs-standby
    # ratio leaves out. On the launch-bound loops any per-launch cost shows ~100x.
    sb = dict(gp, GPSCOPE_STANDBY="1")
    py = sys.executable
    # The floor enables CUPTI's API kinds too, as gpscope does; "floor-bare"
    # leaves them out (the kernel, copy, set, sync, overhead, device and
    # context kinds only): the table's "bare CUPTI kinds" column.
    fb = dict(fl, GPSCOPE_API="0")
    cuda_configs = {"baseline": ({}, []), "floor": (fl, []), "floor-bare": (fb, []),
                    "gpscope": (gp, []), "standby": (sb, [])}
    for v in a.variants:
        name = os.path.basename(v).replace("libgpscope_inject_", "").replace(".so", "")
        cuda_configs[name] = ({"CUDA_INJECTION64_PATH": os.path.abspath(v), "GPSCOPE_OUTPUT": outdir}, [])
    variants = {}
    for v in a.env_variant:
        name, _, pairs = v.partition(":")
        extra, key = {}, None
        for kv in pairs.split(","):
            if "=" in kv:
                key, _, extra[key] = kv.partition("=")
            elif key is not None:  # a list value: GPSCOPE_DIAG_OFF=memcpy,memset
                extra[key] += "," + kv
        if not name or not extra:
            raise SystemExit(f"--env-variant {v!r}: want NAME:K=V[,K=V]")
        variants[name] = (dict(gp, **extra), [])
    cuda_configs.update(variants)
    compares = {}
    for c in a.compare:
        name, _, path = c.partition("=")
        if not name or not path or not os.path.exists(path):
            raise SystemExit(f"--compare {c!r}: want NAME=PATH to an existing library")
        compares[name] = ({"CUDA_INJECTION64_PATH": os.path.abspath(path), "GPSCOPE_OUTPUT": outdir}, [])
    cuda_configs.update(compares)
    suites = {
        "cuda_tiny_kernels (us/launch)": (
            [a.tiny, str(a.kernels)], "us_per_launch", cuda_configs),
        "torch_tiny_ops (us/op)": (
            [py, TRAIN, "--mode", "tiny", "--ops", str(a.ops)], "us_per_op",
            dict({"baseline": ({}, []), "floor": (fl, []), "floor-bare": (fb, []),
                  "gpscope": (gp, []), "standby": (sb, []),
                  "torch.profiler": ({}, ["--profiler"]),
                  "torch.profiler-cpu": ({}, ["--profiler", "--profiler-cpu"])},
                 **variants, **compares)),
        "torch_train (ms/step)": (
            [py, TRAIN, "--mode", "train", "--steps", str(a.steps)] + a.train_args.split(),
            "step_ms_median",
            dict({"baseline": ({}, []), "floor": (fl, []), "floor-bare": (fb, []),
                  "gpscope": (gp, []),
                  "torch.profiler": ({}, ["--profiler"]),
                  "torch.profiler-cpu": ({}, ["--profiler", "--profiler-cpu"])},
                 **variants, **compares)),
    }
    if a.nsys:
        nsys_prefix = [a.nsys, "profile", "-t", "cuda", "--force-overwrite=true",
                       "-o", os.path.join(outdir, "nsys-run")]
        for _, _, configs in suites.values():
            configs["nsys"] = ({}, [], nsys_prefix)
    wanted = {"cuda": "cuda_tiny_kernels (us/launch)", "torch_tiny": "torch_tiny_ops (us/op)",
              "torch_train": "torch_train (ms/step)"}
    suites = {wanted[k]: suites[wanted[k]] for k in a.suites.split(",")}
    if a.no_profiler:
        for _, _, configs in suites.values():
            configs.pop("torch.profiler", None)
            configs.pop("torch.profiler-cpu", None)
    if a.only_configs:
        keep = set(a.only_configs.split(",")) | {"baseline"}
        for _, _, configs in suites.values():
            for c in [c for c in configs if c not in keep]:
                configs.pop(c)
    return suites, compares


def common_parser(**kw):
    """The options that choose the suites and configurations (bench/overhead_baton.py's too)."""
    ap = argparse.ArgumentParser(**kw)
    ap.add_argument("--inject", required=True)
    ap.add_argument("--floor", required=True)
    ap.add_argument("--tiny", required=True)
    ap.add_argument("--kernels", type=int, default=200000)
    ap.add_argument("--ops", type=int, default=100000)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--out", default="")
    ap.add_argument("--variants", nargs="*", default=[],
                    help="extra injection libraries (diagnosis builds) for the CUDA tiny-kernel suite")
    ap.add_argument("--env-variant", action="append", default=[], metavar="NAME:K=V[,K=V]",
                    help="gpscope with extra environment, in the launch-bound suites; e.g. "
                         "'no-api:GPSCOPE_API=0' or 'no-sync:CUDA_INJECTION64_PATH=LIB,"
                         "GPSCOPE_DIAG_OFF=sync' with LIB the diagnosis build "
                         "libgpscope_inject_diag.so, which alone reads GPSCOPE_DIAG_* (attribute "
                         "the per-launch cost part by part)")
    ap.add_argument("--compare", action="append", default=[], metavar="NAME=PATH",
                    help="another libgpscope_inject.so as configuration NAME in every suite")
    ap.add_argument("--suites", default="cuda,torch_tiny,torch_train")
    ap.add_argument("--only-configs", default="",
                    help="comma-separated configurations to run (baseline always runs), e.g. "
                         "baseline,gpscope,stacks-off")
    ap.add_argument("--nsys", default="",
                    help="path of nsys: adds configuration 'nsys' (nsys profile -t cuda) to every suite")
    ap.add_argument("--no-profiler", action="store_true", help="leave torch.profiler out")
    ap.add_argument("--train-args", default="--batch 16384 --hidden 8192",
                    help="model size of the realistic training loop")
    return ap


def main():
    ap = common_parser()
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    outdir = tempfile.mkdtemp(prefix="gpscope-bench-")
    suites, compares = build_suites(a, outdir)
    results = {}
    for name, (cmd, key, configs) in suites.items():
        samples = {c: [] for c in configs}
        order = list(configs)
        for r in range(a.rounds):
            # Rotate the order each round: no configuration always runs
            # first (cold) or right after the heaviest one.
            k = r % len(order)
            for c in order[k:] + order[:k]:
                env, extra, *prefix = configs[c]
                samples[c].append(run(cmd + extra, env, key, prefix[0] if prefix else ()))
                # Each sample as it comes, so a run cut short still reports.
                print(f"sample {name} round {r} {c} {samples[c][-1]:.4f}", flush=True)
        med = {c: statistics.median(v) for c, v in samples.items()}
        base = med["baseline"]
        added = {c: med[c] - base for c in med}
        # Paired: each round's sample over the same round's baseline, so
        # drift between rounds (clocks, temperature, noisy neighbours)
        # cancels; the median of those ratios is the robust increase.
        paired = {c: statistics.median(v[i] / samples["baseline"][i] for i in range(len(v)))
                  for c, v in samples.items()}
        r = {"samples": samples, "median": med, "added": added,
             "increase_pct": {c: 100.0 * added[c] / base for c in med},
             "paired_increase_pct": {c: 100.0 * (paired[c] - 1.0) for c in med}}
        if added.get("floor", 0) > 0:
            r["gpscope_over_floor_added"] = added["gpscope"] / added["floor"]
            for c in compares:
                r[f"{c}_over_floor_added"] = added[c] / added["floor"]
        for c in compares:
            if added[c] > 0:
                r[f"gpscope_over_{c}_added"] = added["gpscope"] / added[c]
        for c in ["nsys", "floor"] + list(compares):
            if c in samples and c != "gpscope":
                ci = ratio_ci(samples, "gpscope", c)
                if ci is not None:
                    r[f"gpscope_over_{c}_added_ci"] = ci
        results[name] = r
    print(f"{'workload':32} {'config':16} {'median':>10} {'added':>9} {'+%':>7} {'paired+%':>9}")
    for name, r in results.items():
        for c in r["median"]:
            print(f"{name:32} {c:16} {r['median'][c]:10.4f} {r['added'][c]:9.4f} "
                  f"{r['increase_pct'][c]:6.2f}% {r['paired_increase_pct'][c]:8.2f}%")
        if "gpscope_over_floor_added" in r:
            print(f"{name:32} gpscope added / floor added = {r['gpscope_over_floor_added']:.3f}")
        for c in compares:
            if f"{c}_over_floor_added" in r:
                print(f"{name:32} {c} added / floor added = {r[f'{c}_over_floor_added']:.3f}")
            if f"gpscope_over_{c}_added" in r:
                print(f"{name:32} gpscope added / {c} added = {r[f'gpscope_over_{c}_added']:.3f}")
        for k, ci in r.items():
            if k.endswith("_added_ci"):
                other = k[len("gpscope_over_"):-len("_added_ci")]
                print(f"{name:32} gpscope added / {other} added, paired by round: {ci['ratio']:.3f} "
                      f"[{ci['lo']:.3f}, {ci['hi']:.3f}] 95% bootstrap, {ci['rounds']} rounds")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
