"""torchvision ResNet-50 training (bf16 autocast, channels_last, batch 128)
fed by a DataLoader that keeps up: pre-decoded uint8 images in memory, light
augmentation (RandomResizedCrop + flip on uint8 tensors) on 10 workers,
pinned memory, non_blocking copies, normalisation on the GPU.

Healthy control: the GPU is the bottleneck (compute-bound convolutions);
nothing above info expected. The H2D copy of each batch is pinned and
small next to the step.
"""
import os

import torch
import torchvision
from torch.utils.data import DataLoader, Dataset
from torchvision.transforms import v2 as T

from corpus_common import Steady, log, run, versions


class DecodedImages(Dataset):
    """A bank of already-decoded images (uint8, 3 x 256 x 256), sampled with
    light augmentation."""

    def __init__(self, bank=512, length=100_000):
        g = torch.Generator().manual_seed(0)
        self.images = torch.randint(0, 256, (bank, 3, 256, 256), dtype=torch.uint8, generator=g)
        self.length = length
        self.transform = T.Compose([T.RandomResizedCrop(224, antialias=True),
                                    T.RandomHorizontalFlip()])

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        return self.transform(self.images[i % len(self.images)]), i % 1000


def main(args):
    dev = torch.device("cuda")
    torch.manual_seed(0)
    st = os.statvfs("/dev/shm") if os.path.isdir("/dev/shm") else None
    if st is not None:
        log(f"/dev/shm: {st.f_bavail * st.f_frsize / 2**30:.1f} GiB free")
    model = torchvision.models.resnet50(weights=None).to(dev, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    loader = DataLoader(DecodedImages(), batch_size=128, shuffle=True, num_workers=10,
                        pin_memory=True, persistent_workers=True, prefetch_factor=2,
                        drop_last=True)

    steady = None
    for i, (images, labels) in enumerate(loader):  # site:loader
        images = images.to(dev, non_blocking=True).to(memory_format=torch.channels_last)
        labels = labels.to(dev, non_blocking=True)
        images = (images.float() - mean) / std
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(images), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if i == 4:  # warm-up: workers started, cuDNN picked its algorithms
            torch.cuda.synchronize()
            steady = Steady(args.seconds)
        elif steady is not None:
            steady.tick()
            if steady.steps % 20 == 0:
                print(f"step {steady.steps} loss {loss.item():.4f}", flush=True)
            if not steady.running():
                break
    torch.cuda.synchronize()
    return steady.result(batch=128, workers=10, **versions(torch, torchvision))


if __name__ == "__main__":
    run(main, seconds=5)
