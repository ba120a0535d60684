"""Hugging Face transformers BERT (bert-base shape, BertConfig defaults,
random weights) as an embedding service: fp16, batch 128 x 256 tokens
under torch.inference_mode(), the [CLS] embeddings of each batch copied
back to the host (emb.cpu(), 393 KB) as a service would return them.

Healthy control: GEMM/attention-bound inference (~10 ms of GPU per
batch). The per-batch read-back syncs, but the host needs only a fraction
of the GPU time to queue the next batch, so the GPU barely idles. Nothing
above info expected.
"""
import torch
import transformers
from transformers import BertConfig, BertModel

from corpus_common import Steady, run, versions


def main(args):
    dev = torch.device("cuda")
    torch.manual_seed(0)
    config = BertConfig()  # 12 layers, hidden 768, 12 heads, vocab 30522
    model = BertModel(config).to(dev, torch.float16).eval()
    batches = [torch.randint(0, config.vocab_size, (128, 256), device=dev) for _ in range(4)]
    mask = torch.ones(128, 256, dtype=torch.long, device=dev)
    returned = []

    def step(i):
        out = model(input_ids=batches[i % 4], attention_mask=mask).last_hidden_state
        returned.append(out[:, 0].float().cpu())  # site:d2h
        if len(returned) > 64:
            returned.pop(0)

    with torch.inference_mode():
        for i in range(3):
            step(i)
        torch.cuda.synchronize()
        steady = Steady(args.seconds)
        while steady.running():
            step(steady.steps)
            steady.tick()
        torch.cuda.synchronize()
    return steady.result(batch=128, seq=256, **versions(torch, transformers))


if __name__ == "__main__":
    run(main, seconds=4)
