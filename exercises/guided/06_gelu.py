"""Exercise 6: GELU, the MLP's activation (the tanh approximation).

Write the bodies of gelu_forward and gelu_backward below, the forward first, then run

    python exercises/judge.py gelu

The forward is judged against the project's and the page's worked example; the backward by central
differences. docs/04-mlp.md derives the equations (GELU); the solution is the project's own
gelu_forward and gelu_backward in transformer.py: read them when yours passes, or when you are stuck.
"""

import numpy as np

from transformer import GELU_CUBIC, GELU_SCALE  # sqrt(2/pi) and 0.044715, the constants of the approximation


def gelu_forward(x):  # (...) -> (...)
    """y = GELU(x), entry by entry, and the cache.

        u = sqrt(2/pi) (x + 0.044715 x^3),    y = 0.5 x (1 + tanh u)            (x's shape)

    Hints:
    - Every entry is on its own: no sums, no axes.
    Return y and cache = (x, tanh_u), both of x's shape, in that order: tanh u is kept so that the
    backward need not compute it again.
    """
    raise NotImplementedError  # your code, in place of this line


def gelu_backward(dout, cache):  # (...) -> (...)
    """dx from dout = dL/dy, entry by entry; cache = (x, tanh_u), as gelu_forward kept it.

    The gradient:
        dy/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx,   du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
        dx = dout * dy/dx                                                     (the input's shape)

    Hints:
    - y = 0.5 x * (1 + tanh u) is a product of two factors that both depend on x: the product rule
      gives two terms, and leaving out the first, 0.5 (1 + tanh u), is the usual mistake.
    - d tanh(u)/du = 1 - tanh^2 u, and tanh u is in the cache: there is no need for np.tanh again.
    - Every entry is on its own: no sums, and dx has the shape of x.
    - Return a new array and leave the cache and dout as they are.
    Return dx.
    """
    raise NotImplementedError  # your code, in place of this line
