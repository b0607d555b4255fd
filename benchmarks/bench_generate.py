"""Generation speed with and without the key/value cache, run by hand:

    python benchmarks/bench_generate.py [--shape large|reference] [--tokens N] [--reps N]

A random model of the given shape (the weights do not change the amount of work) continues a
one-token prompt for N tokens with window = context_len, so the window never slides and the
cache is used for every token. Prints the median tokens per second of each way over the
repetitions, alternated in one run, and their ratio.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from transformer import ModelConfig, Sampling, generate, init_params  # noqa: E402

SHAPES = {  # context_len = the window = the 128-token context of the issue for "large"
    "reference": ModelConfig(vocab_size=575, context_len=32, emb_dim=32, num_heads=2, num_layers=2, ff_dim=128,
                             ln_eps=1e-5),
    "large": ModelConfig(vocab_size=575, context_len=128, emb_dim=256, num_heads=4, num_layers=4, ff_dim=1024,
                         ln_eps=1e-5),
}


def tokens_per_second(params, cfg, n_tokens, use_cache):
    start = time.perf_counter()
    new = list(generate(params, cfg, [0], n_tokens, cfg.context_len, Sampling(1.0, 0, 1.0),
                        np.random.default_rng(0), use_cache=use_cache))
    assert len(new) == n_tokens
    return n_tokens / (time.perf_counter() - start)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", choices=SHAPES, default="large")
    p.add_argument("--tokens", type=int, default=None, help="tokens to generate (default: context_len - 1)")
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args()
    cfg = SHAPES[args.shape]
    n_tokens = args.tokens or cfg.context_len - 1
    params = init_params(cfg, np.random.default_rng(0), dtype=np.float32)
    tokens_per_second(params, cfg, 4, True)  # warm-up
    rates = {True: [], False: []}
    for _ in range(args.reps):
        for use_cache in (True, False):
            rates[use_cache].append(tokens_per_second(params, cfg, n_tokens, use_cache))
    cached, uncached = statistics.median(rates[True]), statistics.median(rates[False])
    print(f"shape {args.shape}: {n_tokens} tokens from a 1-token prompt, window {cfg.context_len}, float32, "
          f"median of {args.reps}")
    print(f"{'with the key/value cache':<28}{cached:>10.1f} tokens/s")
    print(f"{'without (whole window)':<28}{uncached:>10.1f} tokens/s")
    print(f"{'speed-up':<28}{cached / uncached:>10.2f} x")


if __name__ == "__main__":
    main()
