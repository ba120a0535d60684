"""Hugging Face transformers GPT-2 (124M shape, random weights, fp16)
generating text greedily for one user at a time: model.generate() with a
32-token prompt and 64 new tokens (KV cache on, batch 1), again and again.

Bottleneck: launch-bound decoding. Each new token runs ~150 tiny kernels
(batch 1, one position) that take less GPU time than the Python and launch
calls that issue them; generate() also checks its stopping criteria on
the GPU every token (a small sync). Fix: batch users, static KV cache +
torch.compile / CUDA graphs, a serving engine.
"""
import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel

from corpus_common import Steady, run, versions


def main(args):
    dev = torch.device("cuda")
    torch.manual_seed(0)
    config = GPT2Config()
    model = GPT2LMHeadModel(config).to(dev, torch.float16).eval()
    prompts = [torch.randint(0, config.vocab_size, (1, 32), device=dev) for _ in range(4)]
    mask = torch.ones(1, 32, dtype=torch.long, device=dev)
    new_tokens = 64

    def generate(i):
        return model.generate(input_ids=prompts[i % 4], attention_mask=mask,  # site:generate
                              max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                              do_sample=False, pad_token_id=config.eos_token_id)

    with torch.inference_mode():
        out = generate(0)
        torch.cuda.synchronize()
        steady = Steady(args.seconds, min_steps=2)
        while steady.running():
            out = generate(steady.steps)
            steady.tick()
        torch.cuda.synchronize()
    r = steady.result(tokens_per_call=int(out.shape[1] - 32), **versions(torch, transformers))
    r["ms_per_token"] = round(r["step_ms"] / max(r["tokens_per_call"], 1), 3)
    return r


if __name__ == "__main__":
    run(main, seconds=4)
