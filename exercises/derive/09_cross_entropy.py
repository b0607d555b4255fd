"""Exercise 9, derive track: the mean cross-entropy of the logits, the softmax and the loss fused.

Read docs/06-output.md; derive the gradient of the mean loss on the logits, the softmax folded in,
then write the bodies of cross_entropy_forward and cross_entropy_backward below, the forward first,
and run

    python exercises/judge.py cross_entropy --track derive

The guided stub, exercises/guided/09_cross_entropy.py, gives the equations and hints if you get stuck.
"""

import numpy as np


def cross_entropy_forward(logits, targets):  # (N, V), (N,) -> mean loss (scalar)
    """loss, the mean over the N rows of minus the log of the target's probability, and the cache.

    logits: (N, V), rows far apart included. targets: (N,) ints in [0, V).
    Return loss, a Python float, and the cache (probs, targets): probs (N, V), each row's softmax.
    """
    raise NotImplementedError  # your code, in place of this line


def cross_entropy_backward(cache):  # -> dlogits (N, V)
    """dlogits, the gradient of the mean loss on the logits. No dout: the loss is where the backward
    pass starts.

    cache: (probs, targets), as cross_entropy_forward kept them: probs (N, V), each row's softmax;
    targets (N,), ints in [0, V).
    Return dlogits (N, V), a new array.
    """
    raise NotImplementedError  # your code, in place of this line
