"""timm ViT-S/16 (vit_small_patch16_224, random weights) training: batch
256, bf16 autocast, fused AdamW, synthetic images and labels on the GPU,
loss logged every 20 steps.

Healthy control: GEMM/attention-bound training with the host well ahead
of the GPU; nothing above info expected.
"""
import timm
import torch

from corpus_common import Steady, run, versions


def main(args):
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = timm.create_model("vit_small_patch16_224", pretrained=False, num_classes=1000).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05, fused=True)
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    xs = [torch.randn(256, 3, 224, 224, device=dev) for _ in range(2)]
    ys = [torch.randint(0, 1000, (256,), device=dev) for _ in range(2)]

    def step(i):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(xs[i % 2]), ys[i % 2])
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
        if steady.steps % 20 == 0:
            print(f"step {steady.steps} loss {loss.item():.4f}", flush=True)
    torch.cuda.synchronize()
    return steady.result(batch=256, **versions(torch, timm))


if __name__ == "__main__":
    run(main, seconds=4)
