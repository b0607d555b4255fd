"""Exercise 3 of 7: the backward of the softmax over the last axis, which attention uses.

Write the body of softmax_backward below, then run

    python gradcheck.py --exercise softmax

docs/03-attention-backward.md derives the equation (Attention backward, step 4, the softmax); the
solution is the project's own softmax_backward in transformer.py: read it when yours passes, or
when you are stuck.
"""


def softmax_backward(dout, probs):  # (..., n), (..., n) -> (..., n)
    """ds from dout = dL/dp, where p = softmax(s) row by row.

    The forward (softmax) computed, for every row s of its input,
        p_j = exp(s_j) / sum_k exp(s_k)
    and its output p is all the backward needs: `probs`, of the input's shape (..., n).

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
