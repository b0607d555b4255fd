"""Exercise 7 of 7, derive track: the backward of causal multi-head self-attention.

Read docs/03-attention.md, the forward step by step; derive the backward of each step on paper,
from the output projection back to the three projections, then write the body of
attention_backward below and run

    python gradcheck.py --exercise attention --track derive

Which rows of the table fail says which path is wrong. The guided stub, exercises/attention.py,
gives the equations and hints if you get stuck.
"""

import math

import numpy as np

from transformer import linear_backward, softmax_backward  # the project's; or yours, once they pass


def attention_backward(dout, cache):  # (B, T, C) -> dx (B, T, C), {"Wq": dWq, "bq": dbq, ...}
    """dx and the gradients of the eight parameters, from dout, the gradient on the attention's output.

    cache: ((q_cache, k_cache, v_cache), q, k, v, attn, out_cache), as attention_forward kept it:
    q, k, v (B, nh, T, hs), the heads; attn (B, nh, T, T), the weights after the softmax; and the
    caches of the four linear layers (three projections, the output projection) for linear_backward.
    dout: (B, T, C), C being nh heads of hs side by side.
    Return dx (B, T, C) and {"Wq": dWq, "bq": dbq, "Wk": dWk, "bk": dbk, "Wv": dWv, "bv": dbv,
    "Wo": dWo, "bo": dbo}: each (C, C) or (C,), the shape of its parameter.
    """
    raise NotImplementedError  # your code, in place of this line
