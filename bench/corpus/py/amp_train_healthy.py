"""Mixed-precision training of PyTorch's own transformer encoder
(torch.nn.TransformerEncoder: 8 layers, d_model 1024, 16 heads, batch 32 x
512 tokens) under bf16 autocast with fused AdamW; the token batches are on
the GPU and the loss is logged every 50 steps.

Healthy control: GEMM/attention-bound on the GPU, the host queues far
ahead; nothing above info expected.
"""
import torch
import torch.nn.functional as F

from corpus_common import Steady, run, versions


def main(args):
    dev = torch.device("cuda")
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=1024, nhead=16, dim_feedforward=4096,
                                             dropout=0.0, batch_first=True, norm_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=8, enable_nested_tensor=False).to(dev)
    head = torch.nn.Linear(1024, 1024).to(dev)
    params = list(model.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4, fused=True)
    xs = [torch.randn(32, 512, 1024, device=dev) for _ in range(4)]

    def step(i):
        x = xs[i % 4]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.mse_loss(head(model(x)).float(), x)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for i in range(3):
        step(i)
    torch.cuda.synchronize()
    steady = Steady(args.seconds)
    while steady.running():
        loss = step(steady.steps)
        steady.tick()
        if steady.steps % 50 == 0:
            print(f"step {steady.steps} loss {loss.item():.4f}", flush=True)
    torch.cuda.synchronize()
    return steady.result(**versions(torch))


if __name__ == "__main__":
    run(main, seconds=4)
