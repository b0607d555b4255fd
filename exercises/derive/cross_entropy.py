"""Exercise 4 of 7, derive track: the backward of the mean cross-entropy of the logits, softmax and loss fused.

Read "Softmax and cross-entropy" on docs/06-output.md; derive the gradient of the mean loss on
the logits on paper, then write the body of cross_entropy_backward below and run

    python gradcheck.py --exercise cross_entropy --track derive

The guided stub, exercises/cross_entropy.py, gives the equations and hints if you get stuck.
"""

import numpy as np


def cross_entropy_backward(cache):  # -> dlogits (N, V)
    """The gradient of the mean loss on the logits. No dout: the loss is where the backward pass starts.

    cache: (probs, targets), as cross_entropy_forward kept them: probs (N, V), the softmax of each
    row of logits; targets (N,), ints in [0, V).
    Return dlogits (N, V), a new array.
    """
    raise NotImplementedError  # your code, in place of this line
