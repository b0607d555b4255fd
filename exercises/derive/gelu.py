"""Exercise 2 of 7, derive track: the backward of GELU, the MLP's activation (the tanh approximation).

Read "GELU" on docs/04-mlp.md up to its forward; derive dy/dx on paper, then write the body of
gelu_backward below and run

    python gradcheck.py --exercise gelu --track derive

The guided stub, exercises/gelu.py, gives the equations and hints if you get stuck.
"""

from transformer import GELU_CUBIC, GELU_SCALE  # the forward's two constants, sqrt(2/pi) and 0.044715


def gelu_backward(dout, cache):  # (...) -> (...)
    """dx from dout, the gradient of the loss on GELU's output, entry by entry.

    cache: (x, tanh_u), as gelu_forward kept them, both of the input's shape.
    dout: the input's shape.
    Return dx, the input's shape, a new array.
    """
    raise NotImplementedError  # your code, in place of this line
