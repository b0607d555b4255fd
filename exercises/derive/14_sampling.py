"""Exercise 14, derive track: the distribution a token is drawn from.

Read docs/10-sampling.md up to "Top-k and top-p, worked by hand", then write the body of
filtered_probs below and run

    python exercises/judge.py sampling --track derive

The guided stub, exercises/guided/14_sampling.py, gives the equations and hints if you get stuck.
"""

import numpy as np

from transformer import ROUNDING  # 1e-9: top-p counts a set as reaching top_p when it falls short by less


def filtered_probs(logits, sampling):  # (V,) -> (V,) probabilities, zero outside what is kept
    """The (V,) probabilities the next token is drawn from, a new array: the temperature, then top-k,
    then top-p, renormalised; 0 outside what is kept.

    logits: (V,). sampling.temperature (0: greedy), sampling.top_k (0: off), sampling.top_p (1: off).
    Ties go to the smaller id.
    """
    raise NotImplementedError  # your code, in place of this line
