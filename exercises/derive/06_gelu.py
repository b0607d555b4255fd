"""Exercise 6, derive track: GELU, the MLP's activation (the tanh approximation).

Read "GELU" on docs/04-mlp.md; derive dy/dx on paper (a product of two factors that both depend on
x), then write the bodies of gelu_forward and gelu_backward below, the forward first, and run

    python exercises/judge.py gelu --track derive

The guided stub, exercises/guided/06_gelu.py, gives the equations and hints if you get stuck.
"""

import numpy as np

from transformer import GELU_CUBIC, GELU_SCALE  # sqrt(2/pi) and 0.044715, the constants of the approximation


def gelu_forward(x):  # (...) -> (...)
    """y, GELU of every entry of x (x's shape), and the cache (x, tanh_u), both of x's shape, in that
    order: tanh_u is the tanh of the approximation's inner term, kept for the backward."""
    raise NotImplementedError  # your code, in place of this line


def gelu_backward(dout, cache):  # (...) -> (...)
    """dx from dout, the gradient of the loss on GELU's output, entry by entry.

    cache: (x, tanh_u), as gelu_forward kept them, both of the input's shape.
    Return dx, of the input's shape, a new array.
    """
    raise NotImplementedError  # your code, in place of this line
