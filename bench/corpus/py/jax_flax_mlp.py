"""JAX/Flax MLP training (bf16 compute, optax AdamW, batch 8192, width
4096), one jitted step with donated state, the batch on the device; the
loss is read every 50 steps for the log.

Healthy control: GEMM-bound on the GPU, JAX's asynchronous dispatch keeps
the queue full; nothing above info expected.
"""
import jax

from corpus_common import Steady, run
from jax_common import build


def main(args):
    train_step, params, opt_state, x, y, info = build(batch=8192, din=1024, width=4096, depth=4)
    for _ in range(3):  # compile + warm-up
        params, opt_state, loss = train_step(params, opt_state, x, y)
    jax.block_until_ready(loss)
    steady = Steady(args.seconds)
    while steady.running():
        params, opt_state, loss = train_step(params, opt_state, x, y)
        steady.tick()
        if steady.steps % 50 == 0:
            print(f"step {steady.steps} loss {float(loss):.4f}", flush=True)
    jax.block_until_ready(params)
    return steady.result(**info)


if __name__ == "__main__":
    run(main, seconds=4)
