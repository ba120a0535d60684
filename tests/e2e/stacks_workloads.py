"""Workloads whose call sites gpscope's stacks must name (tests/e2e/stacks_gpu.sh).

  python3 stacks_workloads.py item|empty_cache|dataloader|jax STEPS

Each prints {"steps": N} at the end. The lines the stacks must name carry a
"# site: NAME" comment; stacks_gpu.sh writes their numbers down and checks
them against these markers before it runs anything.
"""
import json
import sys
import time


def slow_host(ms):
    until = time.perf_counter() + ms / 1000.0
    x = 0.0
    while time.perf_counter() < until:
        x += 1.0
    return x


def item(steps):
    import torch
    model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 1)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(512, 1024, device="cuda")
    for _ in range(steps):
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        value = loss.item()  # site: item
        slow_host(5)  # slow host Python after the sync
    return value


def empty_cache(steps):
    import torch
    x = torch.randn(1024, 1024, device="cuda")
    for _ in range(steps):
        tmp = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")  # a cached block to free
        x = torch.tanh(x @ x * 1e-3)
        del tmp
        torch.cuda.empty_cache()  # site: empty_cache
        slow_host(2)
    torch.cuda.synchronize()


def dataloader(steps):
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Slow(Dataset):
        def __len__(self):
            return steps * 8

        def __getitem__(self, i):
            slow_host(2)  # a slow __getitem__: 8 per batch
            return torch.randn(256)

    model = torch.nn.Linear(256, 256).cuda()
    for batch in DataLoader(Slow(), batch_size=8, num_workers=0):
        batch = batch.to("cuda")  # site: dataloader
        out = model(batch).sum()
        out.backward()
    torch.cuda.synchronize()


def jax_steps(steps):
    import jax
    import jax.numpy as jnp

    @jax.jit
    def step(w, x):
        loss = jnp.mean(jnp.tanh(x @ w) ** 2)
        return w - 1e-3 * jax.grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w), loss

    key = jax.random.PRNGKey(0)
    w = jax.random.normal(key, (1024, 1024))
    x = jax.random.normal(key, (512, 1024))
    for _ in range(steps):
        w, loss = step(w, x)
        value = float(loss)  # site: jax
        slow_host(2)
    return value


def main():
    mode, steps = sys.argv[1], int(sys.argv[2])
    {"item": item, "empty_cache": empty_cache, "dataloader": dataloader, "jax": jax_steps}[mode](steps)
    print(json.dumps({"steps": steps}))


if __name__ == "__main__":
    main()
