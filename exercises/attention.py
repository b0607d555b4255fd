"""Exercise 7 of 7: the backward of causal multi-head self-attention.

Write the body of attention_backward below, then run

    python gradcheck.py --exercise attention

The table has a row for x and for each of the eight parameters: which rows fail says which path
is wrong. docs/03-attention-backward.md derives every step (Attention backward); the solution is the
project's own attention_backward in transformer.py: read it when yours passes, or when you are
stuck. Every step is a rule met in an earlier exercise; use the project's linear_backward and
softmax_backward (or your own, once they pass).
"""

import math

import numpy as np

from transformer import linear_backward, softmax_backward


def attention_backward(dout, cache):  # (B, T, C) -> dx (B, T, C), {"Wq": dWq, "bq": dbq, ...}
    """dx and the gradients of the eight parameters, from dout = dL/dout, the gradient on the output.

    The forward (attention_forward) computed, with nh heads of hs = C / nh numbers each,
        Q, K, V = x Wq + bq, x Wk + bk, x Wv + bv        (B, T, C) each, split into (B, nh, T, hs)
        scores  = Q K^T / sqrt(hs) + mask                (B, nh, T, T), mask -inf where s > t
        attn    = softmax(scores)                        (B, nh, T, T), over the last axis
        heads   = attn V                                 (B, nh, T, hs)
        merged  = the heads side by side                 (B, T, C)
        out     = merged Wo + bo                         (B, T, C)
    and kept cache = ((q_cache, k_cache, v_cache), q, k, v, attn, out_cache): q, k and v the heads
    (B, nh, T, hs), attn (B, nh, T, T), and the four linear layers' caches, for linear_backward.

    The gradients, for one head (^T: the last two axes swapped, .swapaxes(-1, -2)):
        dmerged, dWo, dbo = linear_backward(dout, out_cache)
        dheads = dmerged split into heads                (B, T, C) -> (B, nh, T, hs)
        dattn  = dheads V^T          dV = attn^T dheads
        dscores = softmax_backward(dattn, attn) / sqrt(hs)
        dQ = dscores K               dK = dscores^T Q
        dx, dWq, dbq, ... : linear_backward of dQ, dK, dV, each back in (B, T, C)
        dx = dx_q + dx_k + dx_v

    Hints:
    - For a product of matrices P = A B the chain rule gives dA = dP B^T and dB = A^T dP:
      heads = attn V and Q K^T are both such products.
    - The split was reshape(B, T, nh, hs) then transpose(0, 2, 1, 3); undo it in reverse order:
      transpose(0, 2, 1, 3) then reshape(B, T, C) (call .reshape on the transposed array).
    - The masked scores need nothing of their own: their attn is 0, so softmax_backward gives 0.
    - The scores were divided by sqrt(hs), so their gradient is too; forget it and only the paths
      through the scores fail (Wq, bq, Wk, x), while Wv, bv, Wo and bo pass.
    - x fed all three projections: its gradient is the sum of the three dx.
    - bk's gradient comes out 0 (a bias added to every key adds one number to a whole row of
      scores, and the softmax ignores it); the table judges it by its size.
    Return dx, {"Wq": dWq, "bq": dbq, "Wk": dWk, "bk": dbk, "Wv": dWv, "bv": dbv, "Wo": dWo, "bo": dbo}.
    """
    raise NotImplementedError  # your code, in place of this line
