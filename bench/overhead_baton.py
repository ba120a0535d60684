"""Overhead side by side at block granularity: every configuration of a suite (no tracing,
gpscope, nsys, the CUPTI floors, torch.profiler, ...) runs as its own process AT THE SAME TIME,
and a token passed round a ring of FIFOs lets one process at a time run one timed block (1,000
empty kernels, 500 tiny PyTorch ops or one training step, each ended by a device synchronize).
The i-th blocks of all configurations ran within one lap of the token, a few milliseconds apart,
so the drift that moves the lent GPU's per-process launch rate by +-25% (bench/RESULTS.md,
session 13) hits them alike, and each process's start-up (torch's import, nsys's) is paid once,
in parallel. bench/overhead.py runs whole processes one after another instead.

  python3 bench/overhead_baton.py --inject build/inject/libgpscope_inject.so \\
      --floor build/bench/libgpscope_cupti_floor.so --tiny build/bench/tiny_kernels \\
      --nsys NSYS --suites cuda,torch_tiny,torch_train --generations 3 --rounds 300 \\
      --cores 0-15 --out $OUT/baton.json

A generation is one set of processes (one per configuration, started together, the ring's order
shuffled, each pinned to its own share of --cores, the shares rotating between generations);
per-process effects (where its memory landed) differ between generations, so the intervals
resample generations and then rounds inside each (two-level bootstrap). Per configuration the
table gives the median block, the added time (median and mean of the per-round differences
from the same round's baseline block) and gpscope's added time over every other
configuration's with its 95% interval. The mean is what a duty cycle amortizes
(--env-variant duty:GPSCOPE_DUTY=2s/60s: blocks inside a window cost more, the rest less).

The worker side is bench/workloads/baton.py (Python) and tiny_kernels --baton (C++). A run cut
short keeps its finished generations: `overhead_baton.py --resummarize DIR...` prints their
tables again (each generation's directory under $TMPDIR/gpscope-baton-* holds its meta.json).
"""
import glob
import json
import os
import random
import select
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from overhead import build_suites, common_parser  # noqa: E402


def parse_cores(spec):
    cores = []
    for part in filter(None, spec.split(",")):
        lo, _, hi = part.partition("-")
        cores += range(int(lo), int(hi or lo) + 1)
    return cores


class RelayError(RuntimeError):
    pass


def read_blocks(out_path):
    """A worker's block times from the last JSON line of its stdout; None without one."""
    with open(out_path) as f:
        lines = [l for l in f if l.startswith("{")]
    return json.loads(lines[-1]).get("block_us", []) if lines else None


def block_values(blocks, meta):
    """Block times in the suite's unit (meta: per_block, unit, warm), warm laps dropped."""
    return [b * meta["unit"] / meta["per_block"] for b in blocks[meta["warm"]:]]


def run_generation(procs, rounds, workdir, ready_s=240.0, lap_s=120.0, exit_s=300.0,
                   seconds=0.0):
    """procs: [(name, argv, env)], each argv ending where "--baton SPEC" goes. Runs them side
    by side for `rounds` laps of the token (fewer if `seconds` of laps pass first); returns
    {name: [block_us, ...]} (one per lap, the same count for all)."""
    n = len(procs)
    ring = [os.path.join(workdir, f"ring{i}") for i in range(n + 1)]
    ready = os.path.join(workdir, "ready")
    for path in ring + [ready]:
        if os.path.exists(path):
            os.unlink(path)
        os.mkfifo(path, 0o600)
    fds = {p: os.open(p, os.O_RDWR) for p in (ring[0], ring[n], ready)}
    running = []
    try:
        for i, (name, argv, env) in enumerate(procs):
            out = open(os.path.join(workdir, f"{name}.out"), "w")
            err = open(os.path.join(workdir, f"{name}.err"), "w")
            spec = f"{ring[i]},{ring[i + 1]},{ready}"
            running.append((name, subprocess.Popen(argv + ["--baton", spec], env=env, stdout=out,
                                                   stderr=err), out, err))

        def wait_byte(fd, deadline, what):
            while True:
                left = deadline - time.monotonic()
                dead = [name for name, p, _, _ in running if p.poll() is not None]
                if dead:
                    raise RelayError(f"{what}: {', '.join(dead)} exited (see {workdir}/*.err)")
                if left <= 0:
                    raise RelayError(f"{what}: no token after the time limit")
                r, _, _ = select.select([fd], [], [], min(left, 1.0))
                if r:
                    return os.read(fd, 1)

        deadline = time.monotonic() + ready_s
        for _ in range(n):
            wait_byte(fds[ready], deadline, "waiting for the processes to be ready")
        start, laps = time.monotonic(), 0
        while laps < rounds and not (seconds and time.monotonic() - start > seconds):
            os.write(fds[ring[0]], b"t")
            wait_byte(fds[ring[n]], time.monotonic() + lap_s, f"lap {laps}")
            laps += 1
        os.write(fds[ring[0]], b"q")
        wait_byte(fds[ring[n]], time.monotonic() + lap_s, "stopping")
        blocks = {}
        for name, p, out, err in running:
            try:
                rc = p.wait(timeout=max(1.0, exit_s))
            except subprocess.TimeoutExpired:
                raise RelayError(f"{name} did not exit")
            out.close()
            err.close()
            got = read_blocks(out.name)
            if got is None:
                raise RelayError(f"{name}: exit {rc}, no JSON line (see {err.name})")
            # A wrapper (nsys) may fail after the application finished (the H200 image's nsys
            # collects but cannot write its report): the application's own line is what counts.
            if len(got) != laps:
                raise RelayError(f"{name}: {len(got)} blocks for {laps} laps")
            blocks[name] = got
        return blocks
    finally:
        for _, p, out, err in running:
            if p.poll() is None:
                p.kill()
                p.wait()
            out.close()
            err.close()
        for fd in fds.values():
            os.close(fd)


def two_level(values, stat, reps, rng):
    """95% bootstrap interval of stat over [[x per round] per generation]: generations
    resampled, then rounds inside each."""
    boots = []
    for _ in range(reps):
        sample = []
        for g in rng.choices(range(len(values)), k=len(values)):
            sample += rng.choices(values[g], k=len(values[g]))
        x = stat(sample)
        if x == x:
            boots.append(x)
    boots.sort()
    if not boots:
        return None, None
    return boots[int(0.025 * len(boots))], boots[min(len(boots) - 1, int(0.975 * len(boots)))]


def summarize(gens, reps=2000, seed=1):
    """gens: [{config: [value per round]}] (each holds "baseline"). Per configuration the median
    value and the added value (median and mean of the per-round differences from the same
    round's baseline), gpscope's added over each other's with 95% intervals."""
    rng = random.Random(seed)
    configs = [c for c in gens[0] if c != "baseline"]
    diffs = {c: [[g[c][r] - g["baseline"][r] for r in range(len(g[c]))] for g in gens]
             for c in configs}
    out = {"median": {c: statistics.median([x for g in gens for x in g[c]]) for c in gens[0]},
           "added_median": {}, "added_mean": {}, "ratios": {}}
    for c in configs:
        flat = [x for g in diffs[c] for x in g]
        out["added_median"][c] = statistics.median(flat)
        lo, hi = two_level(diffs[c], statistics.fmean, reps, rng)
        out["added_mean"][c] = {"mean": statistics.fmean(flat), "lo": lo, "hi": hi}
    if "gpscope" in configs:
        for c in configs:
            if c == "gpscope":
                continue
            # Pair the two configurations' differences round by round (the same laps).
            pairs = [list(zip(diffs["gpscope"][i], diffs[c][i])) for i in range(len(gens))]

            def ratio(sample):
                den = statistics.median(p[1] for p in sample)
                return statistics.median(p[0] for p in sample) / den if den > 0 else float("nan")

            point = ratio([p for g in pairs for p in g])
            lo, hi = two_level(pairs, ratio, reps, rng)
            out["ratios"][c] = {"ratio": point, "lo": lo, "hi": hi}
    return out


def print_suite(title, gens):
    """Summarizes a suite's generations, prints its table, returns the summary."""
    s = summarize(gens)
    s["generations"] = gens
    base = s["median"]["baseline"]
    print(f"{title}: {len(gens)} generations x {[len(g['baseline']) for g in gens]} laps, "
          f"baseline {base:.4f}")
    print(f"  {'config':20} {'median':>9} {'added(med)':>10} {'+%':>7} {'added(mean) [95%]':>28}")
    for c, m in s["median"].items():
        if c == "baseline":
            continue
        am = s["added_mean"][c]
        print(f"  {c:20} {m:9.4f} {s['added_median'][c]:10.4f} "
              f"{100 * s['added_median'][c] / base:6.2f}% "
              f"{am['mean']:9.4f} [{am['lo']:.4f}, {am['hi']:.4f}]")
    for c, r in s["ratios"].items():
        print(f"  gpscope added / {c} added: {r['ratio']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}]")
    return s


def resummarize(roots):
    """The tables again from generations' directories (each a meta.json and one NAME.out per
    configuration), e.g. of a run cut short by its time limit after some generations ended:
      python3 bench/overhead_baton.py --resummarize $TMPDIR/gpscope-baton-*"""
    suites = {}
    for root in roots:
        for meta_path in sorted(glob.glob(os.path.join(root, "**", "meta.json"), recursive=True)):
            work = os.path.dirname(meta_path)
            with open(meta_path) as f:
                meta = json.load(f)
            gen = {}
            for out in glob.glob(os.path.join(work, "*.out")):
                blocks = read_blocks(out)
                if blocks is None:
                    gen = None  # a process that did not finish: the generation is incomplete
                    break
                gen[os.path.basename(out)[:-4]] = block_values(blocks, meta)
            if gen and "baseline" in gen and len({len(v) for v in gen.values()}) == 1:
                suites.setdefault(meta["suite"], []).append(gen)
            else:
                print(f"{work}: incomplete generation, left out", file=sys.stderr)
    if not suites:
        raise SystemExit("no complete generation found")
    for title, gens in suites.items():
        print_suite(title, gens)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--resummarize":
        return resummarize(sys.argv[2:])
    ap = common_parser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--generations", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=300, help="laps of the token per generation")
    ap.add_argument("--gen-seconds", type=float, default=0.0,
                    help="end a generation's laps after this long (0: --rounds decides)")
    ap.add_argument("--warm", type=int, default=5, help="first laps of each generation dropped")
    ap.add_argument("--block-launches", type=int, default=1000, help="cuda suite: launches per block")
    ap.add_argument("--block-ops", type=int, default=500, help="torch_tiny suite: ops per block")
    ap.add_argument("--cores", default="", help="e.g. 0-15: each process gets its own share")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    outdir = tempfile.mkdtemp(prefix="gpscope-baton-")
    suites, _ = build_suites(a, outdir)
    cores = parse_cores(a.cores)
    rng = random.Random(a.seed)
    results = {}
    for title, (cmd, _, configs) in suites.items():
        if title.startswith("cuda"):
            cmd, per, unit = [cmd[0], "--per-step", str(a.block_launches)], a.block_launches, 1.0
        elif title.startswith("torch_tiny"):
            cmd, per, unit = cmd + ["--ops-per-step", str(a.block_ops)], a.block_ops, 1.0
        else:
            per, unit = 1, 1e-3  # one step per block, in ms
        gens = []
        names = list(configs)
        share = len(cores) // len(names) if cores else 0
        if cores and share == 0:
            raise SystemExit(f"--cores {a.cores}: fewer cores than the {len(names)} configurations")
        for g in range(a.generations):
            order = names[:]
            rng.shuffle(order)
            procs = []
            for i, c in enumerate(order):
                env_extra, extra, *prefix = configs[c]
                env = dict(os.environ)
                env.pop("CUDA_INJECTION64_PATH", None)
                env.update(env_extra)
                gdir = os.path.join(outdir, f"g{g}-{c}")
                os.makedirs(gdir, exist_ok=True)
                if "GPSCOPE_OUTPUT" in env:
                    env["GPSCOPE_OUTPUT"] = gdir
                pre = [x if not x.endswith("nsys-run") else os.path.join(gdir, "nsys-run")
                       for x in (prefix[0] if prefix else [])]
                if cores:
                    k = (i + g) % len(names)
                    mine = cores[k * share:(k + 1) * share]
                    pre = ["taskset", "-c", ",".join(map(str, mine))] + pre
                procs.append((c, pre + cmd + extra, env))
            work = tempfile.mkdtemp(prefix=f"g{g}-", dir=outdir)
            t0 = time.monotonic()
            meta = {"suite": title, "per_block": per, "unit": unit, "warm": a.warm}
            with open(os.path.join(work, "meta.json"), "w") as f:
                json.dump(meta, f)
            blocks = run_generation(procs, a.rounds + a.warm, work, seconds=a.gen_seconds)
            gens.append({c: block_values(blocks[c], meta) for c in names})
            print(f"{title} generation {g}: {len(gens[-1]['baseline'])} laps of {len(names)} in "
                  f"{time.monotonic() - t0:.0f} s, order {' '.join(order)}", flush=True)
            for c in names:
                print(f"  {c:20} median {statistics.median(gens[-1][c]):.4f}", flush=True)
        results[title] = print_suite(title, gens)
        if a.out:  # after every suite: a run cut short keeps what it finished
            with open(a.out, "w") as f:
                json.dump(results, f)


if __name__ == "__main__":
    main()
