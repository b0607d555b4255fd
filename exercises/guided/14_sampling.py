"""Exercise 14: the distribution a token is drawn from: temperature, then top-k, then top-p.

Write the body of filtered_probs below, then run

    python exercises/judge.py sampling

It is judged on the page's worked examples (probabilities [0.1, 0.4, 0.2, 0.3]; ties; top-k before
top-p; temperature 0), and against the project's on random logits under 27 settings.
docs/10-sampling.md derives it (Top-k and top-p); the solution is the project's own filtered_probs in
transformer.py.
"""

import numpy as np

from transformer import ROUNDING  # 1e-9: top-p counts a set as reaching top_p when it falls short by less


def filtered_probs(logits, sampling):  # (V,) -> (V,) probabilities, zero outside what is kept
    """The probabilities the next token is drawn from: softmax(logits / temperature), then top-k, then
    top-p, renormalised.

    sampling.temperature: 0 means greedy (probability 1 on the largest logit, the smaller id on a tie);
    sampling.top_k: keep the k most likely ids (0: off); sampling.top_p: then keep the smallest set of
    most likely ids whose probabilities, renormalised after top-k, reach top_p (1: off).
        probs = exp((z - max z) / temperature), normalised to sum 1
        order = the ids from most to least likely, a tie to the smaller id
        keep the first k of order, then the first of those whose running sum reaches top_p
        return the kept probabilities over their sum, 0 elsewhere

    Hints:
    - Subtract the largest logit before dividing by the temperature: a tiny temperature then gives
      -inf (probability 0), never inf - inf.
    - np.argsort(-probs, kind="stable") orders ties by id.
    - A running sum of rounded probabilities can fall a hair short (0.7 + 0.1 < 0.8): compare it
      with top_p - ROUNDING.
    Return the (V,) probabilities, a new array.
    """
    raise NotImplementedError  # your code, in place of this line
