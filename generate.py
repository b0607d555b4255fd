"""Sampling from a trained model: one-shot on the command line, and the functions talk.py uses.

    python generate.py "The little cat" --max_new_tokens 80 --seed 1

Each new token is drawn from the last position's logits, filtered in this order:
    1. temperature: divide the logits by it (0 means greedy: take the most likely token)
    2. top_k: keep the k most likely tokens (0 means off)
    3. top_p: of what is left, keep the smallest set of most likely tokens whose probability
       reaches top_p (nucleus sampling)
    4. renormalise what is kept and draw one token with a seeded np.random.Generator
Ties in the ordering go to the smaller token id, so a filter never depends on sort luck.
"""

from dataclasses import dataclass

import numpy as np

import checkpoint
import config
from transformer import forward


@dataclass(frozen=True)
class Sampling:
    temperature: float  # 0 means greedy
    top_k: int  # 0 means off
    top_p: float  # 1 means off

    def __post_init__(self):
        if not self.temperature >= 0:
            raise ValueError(f"temperature must be 0 (greedy) or more, got {self.temperature}")
        if not (isinstance(self.top_k, (int, np.integer)) and self.top_k >= 0):
            raise ValueError(f"top_k must be a whole number, 0 (off) or more, got {self.top_k}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")


def filtered_probs(logits, sampling):  # (V,) -> (V,) probabilities, zero outside what is kept
    """The distribution a token is drawn from: softmax(logits / temperature), then top-k, then top-p.

    Example: logits [2, 1, 0, -1], temperature 1, top_k 2 -> [0.731, 0.269, 0, 0]
    """
    scaled = np.asarray(logits, dtype=np.float64) / sampling.temperature
    probs = np.exp(scaled - scaled.max())
    probs /= probs.sum()
    order = np.argsort(-probs, kind="stable")  # most likely first; ties to the smaller id
    keep = len(probs)
    if sampling.top_k:
        keep = min(keep, sampling.top_k)
    if sampling.top_p < 1:
        kept = probs[order[:keep]]
        reach = np.cumsum(kept) / kept.sum()  # probabilities renormalised after top-k
        keep = min(keep, int(np.searchsorted(reach, sampling.top_p)) + 1)  # first prefix reaching top_p
    filtered = np.zeros_like(probs)
    filtered[order[:keep]] = probs[order[:keep]]
    return filtered / filtered.sum()


def sample_next(logits, sampling, rng):  # (V,) -> int
    """One token id drawn from a row of logits, as the module docstring says."""
    if sampling.temperature == 0:
        return int(np.argmax(logits))  # the first of equal maxima
    cumulative = np.cumsum(filtered_probs(logits, sampling))
    # the token whose slice of [0, 1) holds a uniform draw; tokens with probability 0 have no slice
    return int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))


def generate(params, cfg, prompt_ids, max_new_tokens, window, sampling, rng, stop_id=None):
    """Yield up to max_new_tokens new ids, each as soon as it is drawn; stop after stop_id.

    Each step feeds the model only the last `window` ids, so a prompt of any length works.
    """
    if len(prompt_ids) == 0:
        raise ValueError("the prompt is empty: give at least one character")
    if not 0 < window <= cfg.context_len:
        raise ValueError(f"the window must be in 1..{cfg.context_len} (context_len), got {window}")
    ids = list(prompt_ids)
    for _ in range(max_new_tokens):
        logits, _ = forward(params, np.array(ids[-window:]), cfg)
        next_id = sample_next(logits[-1], sampling, rng)
        ids.append(next_id)
        yield next_id
        if next_id == stop_id:
            return


def main(argv=None):
    p = config.parser("Continue a prompt with a trained model (see talk.py for a conversation).")
    p.add_argument("prompt", help="the text to continue")
    args = p.parse_args(argv)
    s = config.settings(args)
    model = checkpoint.load(s.checkpoint)
    prompt_ids = model.tokenizer.encode(args.prompt)
    sampling = Sampling(s.temperature, s.top_k, s.top_p)
    rng = np.random.default_rng(s.seed)
    new_ids = generate(model.params, model.cfg, prompt_ids, s.max_new_tokens, s.seq_len, sampling, rng)
    print(model.tokenizer.decode(prompt_ids), end="", flush=True)
    for token_id in new_ids:
        print(model.tokenizer.decode([token_id]), end="", flush=True)
    print()


if __name__ == "__main__":
    config.run(main)
