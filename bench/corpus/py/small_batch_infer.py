"""timm ResNet-50 (random weights) serving one image at a time: batch 1,
fp32, eager, torch.inference_mode(), the input already on the GPU; the
predicted classes stay on the GPU and are read every 200 requests.

Bottleneck: launch-bound. ~160 kernels per request, each a few us to a
few tens of us on the GPU, each costing more host time (Python module
calls + launch) than GPU time: the GPU idles between launches. Fix: batch
requests, CUDA graphs (torch.compile(mode="reduce-overhead")), TensorRT.
"""
import timm
import torch

from corpus_common import Steady, run, versions


def main(args):
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = timm.create_model("resnet50", pretrained=False).to(dev).eval()
    images = [torch.randn(1, 3, 224, 224, device=dev) for _ in range(8)]
    preds = []
    with torch.inference_mode():
        for i in range(10):
            model(images[i % 8])
        torch.cuda.synchronize()
        steady = Steady(args.seconds)
        while steady.running():
            preds.append(model(images[steady.steps % 8]).argmax(-1))  # site:forward
            steady.tick()
            if len(preds) == 200:
                torch.cat(preds).tolist()
                preds.clear()
        torch.cuda.synchronize()
    return steady.result(batch=1, **versions(torch, timm))


if __name__ == "__main__":
    run(main, seconds=3)
