"""The JAX/Flax MLP shared by jax_flax_mlp.py and jax_item_sync.py: a Flax
linen model (bf16 compute, fp32 parameters) trained with optax AdamW in one
jitted step. Falls back to a plain-JAX MLP when flax.linen is missing (the
result line says which ran)."""
import functools

import jax
import jax.numpy as jnp
import optax

try:
    import flax
    import flax.linen as nn
except Exception:  # noqa: BLE001 - any import problem: run the plain-JAX model
    flax = None
    nn = None


def _key(seed):
    make = getattr(jax.random, "key", None) or jax.random.PRNGKey
    return make(seed)


def build(batch, din, width, depth, lr=1e-3):
    """Returns (train_step, params, opt_state, x, y, info). train_step is
    jitted with params and opt_state donated."""
    k_data, k_init, k_y = jax.random.split(_key(0), 3)
    x = jax.random.normal(k_data, (batch, din), jnp.bfloat16)
    y = jax.random.normal(k_y, (batch, din), jnp.float32)
    if nn is not None:
        class MLP(nn.Module):
            width: int
            depth: int
            out: int

            @nn.compact
            def __call__(self, h):
                for _ in range(self.depth):
                    h = nn.gelu(nn.Dense(self.width, dtype=jnp.bfloat16)(h))
                return nn.Dense(self.out, dtype=jnp.bfloat16)(h)

        model = MLP(width=width, depth=depth, out=din)
        params = model.init(k_init, x)["params"]

        def apply(p, h):
            return model.apply({"params": p}, h)
        impl = f"flax.linen {getattr(flax, '__version__', '?')}"
    else:
        sizes = [din] + [width] * depth + [din]
        keys = jax.random.split(k_init, len(sizes) - 1)
        params = [{"w": jax.random.normal(k, (a, b), jnp.float32) / jnp.sqrt(a),
                   "b": jnp.zeros((b,), jnp.float32)}
                  for k, a, b in zip(keys, sizes[:-1], sizes[1:])]

        def apply(p, h):
            for i, layer in enumerate(p):
                h = h @ layer["w"].astype(jnp.bfloat16) + layer["b"].astype(jnp.bfloat16)
                if i < len(p) - 1:
                    h = jax.nn.gelu(h)
            return h
        impl = "plain jax (flax.linen not importable)"

    tx = optax.adamw(lr)
    opt_state = tx.init(params)

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def train_step(p, s, xb, yb):
        def loss_fn(q):
            pred = apply(q, xb).astype(jnp.float32)
            return jnp.mean((pred - yb) ** 2)
        loss, grads = jax.value_and_grad(loss_fn)(p)
        updates, s = tx.update(grads, s, p)
        return optax.apply_updates(p, updates), s, loss

    info = {"model": impl, "jax": jax.__version__, "optax": optax.__version__,
            "backend": jax.default_backend(), "device": str(jax.devices()[0])}
    return train_step, params, opt_state, x, y, info
