# Diagnostic (not a test): where is the main thread while XLA's threads make CUDA calls?
# Samples the main thread's innermost stacks_workloads.py line every ~0.2 ms with
# CLOCK_REALTIME stamps, runs stacks_workloads.jax_steps, writes the samples as JSON.
import json, os, sys, threading, time
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import stacks_workloads as w

samples = []
stop = False
main_id = threading.main_thread().ident

def sampler():
    while not stop:
        f = sys._current_frames().get(main_id)
        line = None; inner = None
        if f is not None:
            inner = "%s:%d" % (os.path.basename(f.f_code.co_filename), f.f_lineno)
            while f is not None:
                if f.f_code.co_filename.endswith("stacks_workloads.py"):
                    line = f.f_lineno; break
                f = f.f_back
        samples.append((time.clock_gettime_ns(time.CLOCK_REALTIME), line, inner))
        time.sleep(0.0002)

sys.setswitchinterval(0.0002)
t = threading.Thread(target=sampler, daemon=True); t.start()
w.jax_steps(int(sys.argv[2]) if len(sys.argv) > 2 else 50)
stop = True; t.join()
json.dump(samples, open(sys.argv[1], "w"))
print(json.dumps({"samples": len(samples)}))
