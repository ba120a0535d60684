# Diagnostic (issue 20, the exit hook of 7e67969): a daemon Python thread keeps making
# synchronizing CUDA calls (each one takes a Python call-site stack of its own frames)
# while the main thread returns and the interpreter finalizes under it.
#   python3 exit_race.py cupy|jax SECONDS
# Exits 0 after printing {"framework", "calls"}; a crash at exit shows in the exit status.
import json
import sys
import threading
import time

framework, seconds = sys.argv[1], float(sys.argv[2])
calls = [0]

if framework == "cupy":
    import cupy as cp
    a = cp.ones(1 << 16, dtype=cp.float32)

    def one_call():
        return float(a.sum())  # a kernel, a copy to the host, a sync
elif framework == "jax":
    import jax.numpy as jnp
    a = jnp.ones(1 << 16)

    def one_call():
        return float(jnp.sum(a))
else:
    raise SystemExit("framework: cupy or jax")

one_call()


def loop():
    while True:
        one_call()
        calls[0] += 1


threading.Thread(target=loop, daemon=True).start()
time.sleep(seconds)
print(json.dumps({"framework": framework, "calls": calls[0]}), flush=True)
