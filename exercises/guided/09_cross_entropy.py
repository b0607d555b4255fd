"""Exercise 9: the mean cross-entropy of the logits, the softmax and the loss fused.

Write the bodies of cross_entropy_forward and cross_entropy_backward below, the forward first, then run

    python exercises/judge.py cross_entropy

The forward is judged against the project's, on logits 1000 apart, and on the page's worked example
(logits [1, 2, 3], loss 0.4076); the backward by central differences. docs/06-output.md derives both
(The gradient on the logits); the solution is the project's own cross_entropy_forward and
cross_entropy_backward in transformer.py.
"""

import numpy as np


def cross_entropy_forward(logits, targets):  # (N, V), (N,) -> mean loss (scalar)
    """loss, the mean over N rows of -log softmax(logits row)[target], and the cache.

    targets: N ints in [0, V), the id each row should predict.
        shifted = z - max(z), row by row         (no exp overflows; the softmax does not change)
        -log p_y = log sum_j exp(shifted_j) - shifted_y
        loss = (1/N) sum over rows of -log p_y

    Hints:
    - shifted[np.arange(N), targets] is one entry per row, at its target.
    - Each row's own largest logit: .max(axis=-1, keepdims=True).
    Return loss as a Python float (float(...)) and cache = (probs, targets): probs (N, V), each row's
    softmax, and targets as they came.
    """
    raise NotImplementedError  # your code, in place of this line


def cross_entropy_backward(cache):  # -> dlogits (N, V)
    """dlogits, the gradient of the mean loss on the logits. It takes no dout: the loss is where
    the backward pass starts (dL/dL = 1). cache = (probs, targets), as cross_entropy_forward kept it.

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
