"""Exercise 4 of 7: the backward of the mean cross-entropy of the logits, softmax and loss fused.

Write the body of cross_entropy_backward below, then run

    python gradcheck.py --exercise cross_entropy

docs/06-output.md derives the equation (The gradient on the logits); the solution is the
project's own cross_entropy_backward in transformer.py: read it when yours passes, or when you
are stuck.
"""

import numpy as np


def cross_entropy_backward(cache):  # -> dlogits (N, V)
    """dlogits, the gradient of the mean loss on the logits. It takes no dout: the loss is where
    the backward pass starts (dL/dL = 1).

    The forward (cross_entropy_forward) computed, for N rows of logits z and their targets y,
        p_r = softmax(z_r),    loss = (1/N) sum_r -log p_r,y_r
    and kept cache = (probs, targets): probs (N, V), each row p_r; targets (N,), ints in [0, V).

    The gradient:
        dlogits_rj = (p_rj - onehot(y_r)_j) / N,   onehot(y_r)_j = 1 where j == y_r, else 0   (N, V)

    Hints:
    - -log softmax(z)_y = log sum_j exp(z_j) - z_y: the first term gives p_j for every j, the
      second -1 at the target alone. The softmax's Jacobian is folded in: no sum over j is left.
    - The loss is a mean over N rows, so every entry carries a factor 1/N.
    - probs[np.arange(N), targets] is the one entry per row at its target.
    - Start from a new array (probs / N is one) and subtract there: probs -= ... would write into
      the cache, and the check, which calls you twice, says so.
    Return dlogits.
    """
    raise NotImplementedError  # your code, in place of this line
