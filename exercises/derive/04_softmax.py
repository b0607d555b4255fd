"""Exercise 4, derive track: the softmax over the last axis, which attention uses.

Read "Softmax" on docs/03-attention.md, then "Attention backward", step 4, on
docs/03-attention-backward.md; derive the softmax's gradient without building its Jacobian, then
write the bodies of softmax and softmax_backward below, the forward first, and run

    python exercises/judge.py softmax --track derive

The guided stub, exercises/guided/04_softmax.py, gives the equations and hints if you get stuck.
"""

import numpy as np


def softmax(x):  # (..., n) -> (..., n), over the last axis
    """p (..., n), each row of x turned into probabilities, a new array; rows far apart and -inf
    entries (masked) included. Return p alone, not a pair: the backward reads p itself."""
    raise NotImplementedError  # your code, in place of this line


def softmax_backward(dout, probs):  # (..., n), (..., n) -> (..., n)
    """ds from dout, the gradient of the loss on the softmax's output.

    probs: (..., n), the softmax's output, each row summing to 1. dout: (..., n).
    Return ds (..., n), a new array.
    """
    raise NotImplementedError  # your code, in place of this line
