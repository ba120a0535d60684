"""A Lightning (2.x) Trainer loop: a small CNN on 64 x 64 images, bf16-mixed,
logging the loss to the progress bar every step, fed by a DataLoader with
num_workers=0 over a Dataset that augments each sample in numpy (random
crop with padding, flip, noise), the way a first Lightning script looks.

Bottleneck: input pipeline (data starvation). The main process builds
each batch itself (256 samples x ~0.1 ms of numpy) while the GPU, which
needs ~2 ms per step, waits; then Lightning copies the batch to the GPU
before the step. Lightning itself warns that the train dataloader has too
few workers. Fix: num_workers > 0 (and persistent_workers, pin_memory),
or augment on the GPU.
"""
import tempfile

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

try:
    import lightning as L
    from lightning.pytorch.callbacks import Callback
except ImportError:  # the older package name
    import pytorch_lightning as L
    from pytorch_lightning.callbacks import Callback

from corpus_common import Steady, run, versions


class AugmentedImages(Dataset):
    def __init__(self, n=2048):
        rng = np.random.default_rng(0)
        self.images = rng.standard_normal((n, 3, 64, 64), dtype=np.float32)
        self.labels = rng.integers(0, 10, n)
        self.rng = np.random.default_rng(1)

    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        img = self.images[i % len(self.images)]
        padded = np.pad(img, ((0, 0), (4, 4), (4, 4)), mode="reflect")  # site:augment
        y, x = self.rng.integers(0, 9, 2)
        img = padded[:, y:y + 64, x:x + 64]
        if self.rng.random() < 0.5:
            img = img[:, :, ::-1]
        img = img + 0.05 * self.rng.standard_normal(img.shape, dtype=np.float32)
        return torch.from_numpy(np.ascontiguousarray(img)), int(self.labels[i % len(self.labels)])


class SmallCNN(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.BatchNorm2d(64), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(64, 128, 3, padding=1), torch.nn.BatchNorm2d(128), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(128, 256, 3, padding=1), torch.nn.BatchNorm2d(256), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(256, 10))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


class StopAfter(Callback):
    """Counts batches; after `warmup` of them, runs `seconds` more and stops."""

    def __init__(self, seconds, warmup=3):
        self.seconds, self.warmup, self.batches, self.steady = seconds, warmup, 0, None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.batches += 1
        if self.batches == self.warmup:
            torch.cuda.synchronize()
            self.steady = Steady(self.seconds)
        elif self.steady is not None:
            self.steady.tick()
            if not self.steady.running():
                trainer.should_stop = True


def main(args):
    torch.manual_seed(0)
    stop = StopAfter(args.seconds)
    with tempfile.TemporaryDirectory() as root:
        trainer = L.Trainer(accelerator="gpu", devices=1, precision="bf16-mixed", max_epochs=1000,
                            logger=False, enable_checkpointing=False, enable_model_summary=False,
                            num_sanity_val_steps=0, default_root_dir=root, callbacks=[stop])
        loader = DataLoader(AugmentedImages(), batch_size=256, shuffle=True,  # site:loader_config
                            num_workers=0)
        trainer.fit(SmallCNN(), loader)  # site:fit
    torch.cuda.synchronize()
    if stop.steady is None:
        raise RuntimeError(f"training ended after {stop.batches} batches, before the steady phase")
    return stop.steady.result(batch=256, workers=0, **versions(torch, L))


if __name__ == "__main__":
    run(main, seconds=4)
