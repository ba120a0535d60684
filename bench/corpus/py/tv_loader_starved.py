"""torchvision ResNet-50 training fed by a DataLoader that cannot keep up:
torchvision's FakeData (a PIL image generated per sample) through CPU-heavy
augmentation (RandomResizedCrop, ColorJitter with hue) on 2 workers, no
pinned memory. The GPU step takes ~10 ms; a batch takes the workers ~100+ ms.

Bottleneck: input pipeline (data starvation). Before every step the host
waits in the DataLoader for the next batch and then copies it to the GPU
(an H2D copy of each new batch precedes each step). Fix: more workers,
cheaper or GPU-side augmentation (DALI, torchvision.transforms.v2 on GPU
tensors), pin_memory=True, pre-decoded data.
"""
import torch
import torchvision
from torch.utils.data import DataLoader
from torchvision.transforms import v2 as T

from corpus_common import Steady, run, versions


def main(args):
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).to(dev, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    transform = T.Compose([  # site:transform
        T.RandomResizedCrop(224, antialias=True),
        T.RandomHorizontalFlip(),
        T.ColorJitter(0.4, 0.4, 0.4, 0.1),
        T.ToImage(),
        T.ToDtype(torch.float32, scale=True),
        T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    data = torchvision.datasets.FakeData(size=100_000, image_size=(3, 256, 256),
                                         num_classes=1000, transform=transform)
    loader = DataLoader(data, batch_size=32, shuffle=True, num_workers=2)  # site:loader_config

    steady = None
    for i, (images, labels) in enumerate(loader):  # site:loader
        images = images.to(dev).to(memory_format=torch.channels_last)  # site:h2d
        labels = labels.to(dev)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(images), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if i == 2:  # three warm-up batches (workers started, cuDNN picked)
            torch.cuda.synchronize()
            steady = Steady(args.seconds)
        elif steady is not None:
            steady.tick()
            if not steady.running():
                break
    torch.cuda.synchronize()
    return steady.result(batch=32, workers=2, **versions(torch, torchvision))


if __name__ == "__main__":
    run(main, seconds=5)
