"""Sampling: draw each next token from a trained model, one-shot on the command line.

    python generate.py "The little cat" --max_new_tokens 80 --seed 1

Each new token is drawn from the last position's logits, filtered in this order:
    1. temperature: divide the logits by it (0 means greedy: take the most likely token)
    2. top_k: keep the k most likely tokens (0 means off)
    3. top_p: of what is left, keep the smallest set of most likely tokens whose probability
       reaches top_p (nucleus sampling)
    4. renormalise what is kept and draw one token with a seeded np.random.Generator
Ties in the ordering go to the smaller token id, so a filter never depends on sort luck.

The command line is talk.py's (engineering/prompting.py): the sampling settings of config.py, the
window, where the reply ends, and --checkpoint, a run's name or a folder.
"""

import math
from dataclasses import dataclass

import numpy as np

import config
from engineering.errors import InputError, run_script
from transformer import forward_cached


ROUNDING = 1e-9  # top-p counts a set as reaching top_p when it falls short by less than this


@dataclass(frozen=True)
class Sampling:
    temperature: float  # 0 means greedy
    top_k: int  # 0 means off
    top_p: float  # 1 means off

    def __post_init__(self):
        if not 0 <= self.temperature < math.inf:
            raise InputError(f"temperature must be a finite number, 0 (greedy) or more, got {self.temperature}")
        if isinstance(self.top_k, bool) or not (isinstance(self.top_k, (int, np.integer)) and self.top_k >= 0):
            raise InputError(f"top_k must be a whole number, 0 (off) or more, got {self.top_k}")
        if not 0 < self.top_p <= 1:
            raise InputError(f"top_p must be in (0, 1], got {self.top_p}")


def filtered_probs(logits, sampling):  # (V,) -> (V,) probabilities, zero outside what is kept
    """The distribution a token is drawn from: softmax(logits / temperature), then top-k, then top-p.

    Example: logits [2, 1, 0, -1], temperature 1, top_k 2 -> [0.731, 0.269, 0, 0]
    """
    logits = np.asarray(logits, dtype=np.float64)
    shifted = logits - logits.max()  # <= 0, so dividing by a tiny temperature gives -inf at worst, never nan
    if sampling.temperature == 0:
        probs = (np.arange(len(logits)) == np.argmax(logits)).astype(np.float64)  # the first of equal maxima
    else:
        with np.errstate(over="ignore"):  # -inf, for a token far below the maximum, is the right answer
            probs = np.exp(shifted / sampling.temperature)
        probs /= probs.sum()
    order = np.argsort(-probs, kind="stable")  # most likely first; ties to the smaller id
    keep = len(probs)
    if sampling.top_k:
        keep = min(keep, sampling.top_k)
    if sampling.top_p < 1:
        kept = probs[order[:keep]]
        reach = np.cumsum(kept) / kept.sum()  # probabilities renormalised after top-k
        # the first prefix reaching top_p; a sum of rounded probabilities such as 0.7 + 0.1 can come
        # out a hair under 0.8, which would otherwise keep one token too many
        keep = int(np.searchsorted(reach, sampling.top_p - ROUNDING)) + 1
    filtered = np.zeros_like(probs)
    filtered[order[:keep]] = probs[order[:keep]]
    return filtered / filtered.sum()


def sample_next(logits, sampling, rng):  # (V,) -> int
    """One token id drawn from a row of logits, as the module docstring says."""
    if sampling.temperature == 0:  # greedy: the id filtered_probs would keep, without sorting V (performance.md)
        return int(np.argmax(logits))
    cumulative = np.cumsum(filtered_probs(logits, sampling))
    # the token whose slice of [0, total) holds a uniform draw; tokens with probability 0 have no slice
    return int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))


def generate(params, cfg, prompt_ids, max_new_tokens, window, sampling, rng, stop_id=None, use_cache=True,
             first_allowed=None):
    """Yield up to max_new_tokens new ids, each as soon as it is drawn; stop after stop_id.

    The model reads only the last `window` ids, so a prompt of any length works. With use_cache,
    while the window still grows each new id costs the work of one position: the keys and values
    of the earlier ones are kept (a key/value cache). Once the window is full it slides, every
    id moves to a new position, and the model reads the whole window again. first_allowed, a (V,)
    array of booleans, limits the first draw to the ids where it is True (heal_prompt).
    """
    if len(prompt_ids) == 0:
        raise InputError("the prompt is empty: give at least one character")
    assert 0 < window <= cfg.context_len, f"the window must be in 1..{cfg.context_len} (context_len), got {window}"
    context = list(prompt_ids)[-window:]
    logits, past = forward_cached(params, context, cfg)
    for step in range(max_new_tokens):
        scores = logits
        if step == 0 and first_allowed is not None:
            scores = np.where(first_allowed, scores, -np.inf)  # probability 0 for every other id
        next_id = sample_next(scores, sampling, rng)
        yield next_id
        if next_id == stop_id or step == max_new_tokens - 1:
            return
        context.append(next_id)
        if use_cache and len(context) <= window:
            logits, past = forward_cached(params, [next_id], cfg, past)
        else:
            context = context[-window:]
            logits, past = forward_cached(params, context, cfg)


def continue_prompt(model, text, asked, sampling, rng):
    """Print the prompt's known characters, then the model's continuation, token by token. asked: what the
    command line or the conversation set (window, max_new_tokens, strict, exact, full)."""
    from engineering import checkpoint, prompting  # the command line's engineering: `import generate` loads the model

    prompt_ids = prompting.known_prompt_ids(model.tokenizer, text, asked.strict)
    first_allowed = None
    if not asked.exact:
        prompt_ids, first_allowed = prompting.heal_prompt(model.tokenizer, prompt_ids)
    new_ids = generate(model.params, model.cfg, prompt_ids, asked.max_new_tokens, asked.window, sampling, rng,
                       first_allowed=first_allowed)
    kind = None if asked.full else checkpoint.corpus_kind(model.meta)
    prompting.print_continuation(model.tokenizer, prompt_ids, new_ids, kind)


def main(argv=None):
    import gradcheck  # the command line's own: `import generate` loads the model and the sampling
    from engineering import learners, prompting

    parser = prompting.sampling_parser(config, "Continue a prompt with a trained model (see talk.py for a "
                                               "conversation).")
    parser.add_argument("prompt", help="the text to continue")
    learners.add_options(parser, gradcheck.TRACKS)
    args = prompting.parse_sampling(parser, argv)
    model = prompting.load_for_sampling(args, config.checkpoint)
    sampling = Sampling(args.temperature, args.top_k, args.top_p)
    with learners.in_place(args, gradcheck):  # --exercises TRACK: the model computed by the functions you wrote
        continue_prompt(model, args.prompt, args, sampling, np.random.default_rng(args.seed))


if __name__ == "__main__":
    run_script(main)
