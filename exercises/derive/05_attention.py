"""Exercise 5, derive track: causal multi-head self-attention.

Read docs/03-attention.md, the forward step by step, and docs/03-attention-backward.md; derive the
backward of each step on paper, from the output projection back to the three projections, then write
the bodies of attention_forward and attention_backward below, the forward first, and run

    python exercises/judge.py attention --track derive

Which rows of the table fail says which path is wrong. The guided stub,
exercises/guided/05_attention.py, gives the equations and hints if you get stuck. The names imported
from transformer are the project's; python train.py --exercises derive puts your written functions
in their place there.
"""

import math

import numpy as np

from transformer import AttentionCache, causal_mask, linear_backward, linear_forward, softmax, softmax_backward


def attention_forward(x, p, num_heads, past=None):  # (B, T, C), block params -> (B, T, C)
    """out (B, T, C), and the cache.

    x: (B, T, C). p: the block's parameters by short name, "Wq", "Wk", "Wv", "Wo" (C, C) and "bq",
    "bk", "bv", "bo" (C,). num_heads: nh heads of hs numbers, nh times hs being C. past: None, or in
    generation the keys and values of the positions before x, a pair of (B, nh, S - T, hs) arrays.
    Return out and AttentionCache((q_cache, k_cache, v_cache), q, k, v, attn, out_cache): the caches of
    the linear_forward of the queries, keys and values; the heads q (B, nh, T, hs), k and v (B, nh, S,
    hs), the past included; attn (B, nh, T, S), the weights after the softmax; the cache of the output
    projection's linear_forward.
    """
    raise NotImplementedError  # your code, in place of this line


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
