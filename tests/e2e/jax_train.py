"""A small JAX training loop (jit-compiled MLP, plain SGD) for the GPU
hardening suite (tests/e2e/hardening_gpu.sh jax_drops): XLA runs it on its
thread pools, which make CUDA calls from many threads (with the old buffer
defaults gpscope dropped 279-1,798 of ~22 k records here).

  python3 jax_train.py --steps 300
Prints one JSON line: {"steps": N, "loss": L, "devices": [...]}.
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=4)
    a = ap.parse_args()
    import jax
    import jax.numpy as jnp

    devices = [d.platform for d in jax.devices()]
    if "gpu" not in devices and "cuda" not in devices:
        print(json.dumps({"error": "no GPU device", "devices": devices}))
        return 4
    key = jax.random.PRNGKey(0)
    sizes = [a.hidden] * (a.layers + 1)
    params = []
    for i in range(a.layers):
        key, k = jax.random.split(key)
        params.append((jax.random.normal(k, (sizes[i], sizes[i + 1])) * 0.02,
                       jnp.zeros((sizes[i + 1],))))
    key, kx, ky = jax.random.split(key, 3)
    x = jax.random.normal(kx, (a.batch, a.hidden))
    y = jax.random.normal(ky, (a.batch, a.hidden))

    def loss_fn(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jax.nn.relu(h @ w + b)
        w, b = params[-1]
        return jnp.mean((h @ w + b - y) ** 2)

    @jax.jit
    def step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return [(w - 1e-3 * gw, b - 1e-3 * gb) for (w, b), (gw, gb) in zip(params, grads)], loss

    loss = None
    for i in range(a.steps):
        params, loss = step(params, x, y)
        if i % 10 == 0:
            loss.block_until_ready()
    loss.block_until_ready()
    print(json.dumps({"steps": a.steps, "loss": float(loss), "devices": devices}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
