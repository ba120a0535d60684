"""JAX/Flax MLP training (bf16, optax AdamW, ~1 ms of GPU per step) that
converts the loss to a Python float every step to keep a history, the JAX
form of PyTorch's loss.item().

Bottleneck: host sync per step. float(loss) blocks the host until the step
is done, so JAX's asynchronous dispatch cannot run ahead: the GPU idles
while the host returns from the sync and dispatches the next step. Fix:
keep the losses on the device (stack them, read every N steps) or read them
one step late.
"""
import jax

from corpus_common import Steady, run
from jax_common import build


def main(args):
    train_step, params, opt_state, x, y, info = build(batch=2048, din=1024, width=4096, depth=3)
    history = []
    for _ in range(3):  # compile + warm-up
        params, opt_state, loss = train_step(params, opt_state, x, y)
    jax.block_until_ready(loss)
    steady = Steady(args.seconds)
    while steady.running():
        params, opt_state, loss = train_step(params, opt_state, x, y)
        history.append(float(loss))  # site:float_loss
        steady.tick()
    jax.block_until_ready(params)
    return steady.result(last_loss=round(history[-1], 4), **info)


if __name__ == "__main__":
    run(main, seconds=4)
