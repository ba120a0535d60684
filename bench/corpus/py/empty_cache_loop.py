"""torchvision ResNet-50 training (bf16 autocast, channels_last, batches on
the GPU) that calls torch.cuda.empty_cache() after every step, as people do
"to free memory".

Bottleneck: implicitly synchronizing allocation and free. empty_cache()
hands every cached block back to the driver (cudaFree, which waits for the
device), so each step's forward pass allocates its activations again with
cudaMalloc; the host spends its time in the driver while the GPU idles.
Fix: drop the call (PyTorch's caching allocator exists to avoid exactly
this), or PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True if memory is
really short.
"""
import torch
import torchvision

from corpus_common import Steady, run, versions


def main(args):
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).to(dev, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(64, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (64,), device=dev)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.empty_cache()  # site:empty_cache
        return loss

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    steady = Steady(args.seconds)
    while steady.running():
        loss = step()
        if steady.steps % 50 == 0:
            print(f"step {steady.steps} loss {loss.item():.4f}", flush=True)
        steady.tick()
    torch.cuda.synchronize()
    return steady.result(max_reserved_mb=round(torch.cuda.max_memory_reserved() / 2**20),
                         **versions(torch, torchvision))


if __name__ == "__main__":
    run(main, seconds=4)
