"""Hugging Face transformers GPT-2 (124M shape, GPT2Config defaults, random
weights) trained on a pre-tokenized synthetic corpus: batch 16 x 512, bf16
autocast, AdamW, gradient clipping, the token batch copied to the GPU each
step (64 KB), loss logged every 20 steps.

Healthy control: GEMM-bound training. The weights' copies to the GPU at
start-up (hundreds of MB from pageable memory, before the first step) are
one-time work and must stay info; the 64 KB input copy per step is
negligible. Nothing above info expected.
"""
import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel

from corpus_common import Steady, run, versions


def main(args):
    dev = torch.device("cuda")
    torch.manual_seed(0)
    config = GPT2Config()  # n_layer 12, n_embd 768, n_head 12, vocab 50257
    model = GPT2LMHeadModel(config).to(dev)  # site:weights_to_gpu
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    g = torch.Generator().manual_seed(0)
    corpus = torch.randint(0, config.vocab_size, (512, 512), generator=g)  # tokens, on the host

    def step(i):
        idx = torch.arange(16) + (16 * i) % (corpus.shape[0] - 16)
        input_ids = corpus[idx].to(dev)  # site:h2d
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=input_ids, labels=input_ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
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
    return steady.result(batch=16, seq=512, **versions(torch, transformers))


if __name__ == "__main__":
    run(main, seconds=5)
