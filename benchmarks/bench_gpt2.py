"""GPT-2 124M in NumPy beside Hugging Face's transformers, run by hand (needs the gpt2 extra, torch
and transformers):

    python benchmarks/bench_gpt2.py [--rounds 3] [--new 64] [--threads 2]

Writes a GPT-2 124M folder with random weights to a temporary folder (the weights do not change the
amount of work; the vocabulary's merges are made up), loads it both ways, and measures in one run:
  1. greedy decoding, tokens per second: --new tokens from a 16-token prompt, ours
     (generate.generate, with its key/value cache) and transformers' (use_cache=True) alternated;
  2. how far our logits are from transformers' at this shape, on a 64-token prompt;
  3. the peak memory our generation forward takes for a 1,024-token prompt (tracemalloc), beside
     the weights themselves;
  4. the speed decoding cannot pass on this machine: each new token reads every weight matrix once,
     so tokens/s <= memory bandwidth / bytes of weights, the bandwidth timed on a large matrix-vector
     product.
Both use --threads threads: BLAS's through threadpoolctl, torch's with set_num_threads.
"""

import argparse
import itertools
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import torch
import transformers
from safetensors.numpy import save_file
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import generate  # noqa: E402
import gpt2  # noqa: E402
import transformer  # noqa: E402

GPT2_124M = {"vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_head": 12, "n_layer": 12}


def write_gpt2_124m(folder, rng):
    """A GPT-2 124M folder as the hub holds it: random weights (std 0.02, GPT-2's initial scale),
    and a vocabulary of the 256 byte stand-ins, 50,000 made-up merges of two bytes, and <|endoftext|>."""
    V, T, C, L = (GPT2_124M[key] for key in ("vocab_size", "n_positions", "n_embd", "n_layer"))
    shapes = {"wte.weight": (V, C), "wpe.weight": (T, C), "ln_f.weight": (C,), "ln_f.bias": (C,)}
    for layer in range(L):
        shapes.update({f"h.{layer}.{name}": shape for name, shape in [
            ("ln_1.weight", (C,)), ("ln_1.bias", (C,)), ("attn.c_attn.weight", (C, 3 * C)),
            ("attn.c_attn.bias", (3 * C,)), ("attn.c_proj.weight", (C, C)), ("attn.c_proj.bias", (C,)),
            ("ln_2.weight", (C,)), ("ln_2.bias", (C,)), ("mlp.c_fc.weight", (C, 4 * C)),
            ("mlp.c_fc.bias", (4 * C,)), ("mlp.c_proj.weight", (4 * C, C)), ("mlp.c_proj.bias", (C,))]})
    tensors = {name: (1 + rng.normal(0, 0.02, shape) if name.endswith("ln_1.weight") or name.endswith("ln_2.weight")
                      or name == "ln_f.weight" else rng.normal(0, 0.02, shape)).astype(np.float32)
               for name, shape in shapes.items()}
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    bytes_ = [char for _, char in gpt2.byte_stand_ins()]
    merges = list(itertools.islice(itertools.product(bytes_, bytes_), V - 257))
    vocab = {token: i for i, token in enumerate(bytes_ + [a + b for a, b in merges] + [gpt2.END_OF_TEXT])}
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", **GPT2_124M, "n_ctx": 1024,
              "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5, "bos_token_id": 50256,
              "eos_token_id": 50256}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")


def ours_greedy(params, cfg, prompt, new):  # -> (ids, tokens/s)
    start = time.perf_counter()
    ids = list(generate.generate(params, cfg, prompt, new, cfg.context_len, generate.Sampling(0.0, 0, 1.0),
                                 np.random.default_rng(0)))
    return ids, new / (time.perf_counter() - start)


def theirs_greedy(model, prompt, new):  # -> (ids, tokens/s)
    start = time.perf_counter()
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), max_new_tokens=new, min_new_tokens=new, do_sample=False,
                             use_cache=True, pad_token_id=0)
    return out[0, len(prompt):].tolist(), new / (time.perf_counter() - start)


def logits_gap(params, cfg, model, ids):  # the largest |ours - theirs| over a prompt's logits, and their scale
    ours, _ = transformer.forward(params, np.array(ids), cfg)
    with torch.no_grad():
        theirs = model(torch.tensor([ids])).logits[0].numpy()
    return float(np.abs(ours - theirs).max()), float(np.abs(theirs).max())


def peak_bytes(run):
    """The most memory numpy held at once while run() ran, above what it held before (tracemalloc)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak - before


def bandwidth(rng, n=8192, reps=10):  # -> bytes/s that a matrix-vector product reads its matrix at
    """x @ W reads each of W's n * n float32s once and does little else: its speed is memory's."""
    W, x = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    x @ W
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        x @ W
        times.append(time.perf_counter() - start)
    return W.nbytes / min(times)


def weight_bytes_per_token(params):
    """Bytes of weights one decoding step reads: every matrix and vector, but only one row of each table."""
    return sum(p.nbytes for name, p in params.items() if name not in ("tok_emb", "pos_emb")) + \
        2 * params["tok_emb"][0].nbytes


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--new", type=int, default=64, help="new tokens per round")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as folder, threadpool_limits(args.threads):
        write_gpt2_124m(Path(folder), rng)
        started = time.perf_counter()
        params, cfg, tokenizer = gpt2.load(folder)
        load_s = time.perf_counter() - started
        model = transformers.GPT2LMHeadModel.from_pretrained(folder, dtype=torch.float32).eval()
        prompt = [int(i) for i in rng.integers(0, cfg.vocab_size, 16)]
        ours_greedy(params, cfg, prompt, 4)  # warm-up, both
        theirs_greedy(model, prompt, 4)
        rates, same = {"ours": [], "transformers": []}, True
        for _ in range(args.rounds):
            ours_ids, rate = ours_greedy(params, cfg, prompt, args.new)
            rates["ours"].append(rate)
            theirs_ids, rate = theirs_greedy(model, prompt, args.new)
            rates["transformers"].append(rate)
            same = same and ours_ids == theirs_ids
        gap, scale = logits_gap(params, cfg, model, [int(i) for i in rng.integers(0, cfg.vocab_size, 64)])
        long_prompt = rng.integers(0, cfg.vocab_size, cfg.context_len)
        peak = peak_bytes(lambda: transformer.forward_cached(params, long_prompt, cfg))
        per_second, per_token = bandwidth(rng), weight_bytes_per_token(params)
    n_params = sum(p.size for p in params.values())
    print(f"GPT-2 124M, random weights: {n_params:,} parameters of ours (the head's copy included), "
          f"float32; loaded by gpt2.load in {load_s:.1f} s; {args.threads} threads each")
    print(f"greedy decoding, {args.new} new tokens from 16, median of {args.rounds} rounds (tokens/s):")
    for who, each in rates.items():
        print(f"  {who:<14}{statistics.median(each):>8.1f}   rounds: {', '.join(f'{r:.1f}' for r in each)}")
    print(f"  the same tokens both ways: {same}")
    print(f"logits on a 64-token prompt: largest |ours - transformers| = {gap:.2e} (largest logit {scale:.2f})")
    print(f"peak memory of forward_cached on a {cfg.context_len}-token prompt: {peak / 2**20:.0f} MiB above the "
          f"weights ({transformer.flat_buffer(params).nbytes / 2**20:.0f} MiB)")
    print(f"bandwidth limit: {per_token / 2**20:.0f} MiB of weights per token at {per_second / 1e9:.1f} GB/s "
          f"-> at most {per_second / per_token:.1f} tokens/s")


if __name__ == "__main__":
    main()
