"""Exercise 4: the softmax over the last axis, which attention uses.

Write the bodies of softmax and softmax_backward below, the forward first, then run

    python exercises/judge.py softmax

The forward is judged against the project's, on rows 1000 apart and on a masked entry (-inf), and on
the page's worked example; the backward by central differences. docs/03-attention.md derives the
forward (Softmax), docs/03-attention-backward.md the backward (Attention backward, step 4); the
solution is the project's own softmax and softmax_backward in transformer.py.
"""

import numpy as np


def softmax(x):  # (..., n) -> (..., n), over the last axis
    """p, each row of x turned into probabilities. No cache: the backward needs only p.

        p_j = exp(x_j) / sum_k exp(x_k), for every row x (the last axis)         (..., n)

    Hints:
    - Subtract each row's own largest entry first (.max(axis=-1, keepdims=True)): the result does
      not change, and no exp overflows. The largest of the whole array is not enough: a row far below
      it would underflow to 0 / 0.
    - exp(-inf) is 0: a masked entry gets probability 0 with no special case.
    - Return a new array; leave x as it is.
    Return p alone, not a pair.
    """
    raise NotImplementedError  # your code, in place of this line


def softmax_backward(dout, probs):  # (..., n), (..., n) -> (..., n)
    """ds from dout = dL/dp, where p = softmax(s) row by row; probs is p, the forward's output.

    The gradient, row by row:
        dp_j/ds_i = p_j (delta_ij - p_i)                   (the Jacobian, n by n for each row)
        ds_i = sum_j dout_j p_j (delta_ij - p_i) = p_i (dout_i - sum_j dout_j p_j)      (..., n)

    Hints:
    - Every p_j of a row depends on every s_i of that row, through the shared denominator, so ds_i
      sums over all j: that sum is where the second term comes from.
    - Never build the n by n Jacobian. sum_j dout_j p_j is one number per row: a sum over the last
      axis, kept as (..., 1) with keepdims=True so that it broadcasts back against (..., n).
    - Return a new array and leave dout and probs as they are.
    Return ds.
    """
    raise NotImplementedError  # your code, in place of this line
