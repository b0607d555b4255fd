"""Exercise 5: causal multi-head self-attention.

Write the bodies of attention_forward and attention_backward below, the forward first, then run

    python exercises/judge.py attention

The forward is judged against the project's, with and without a past (the keys and values that
generation keeps), its cache through the project's attention_backward, and on the page's worked
example; the backward by central differences, a row for x and for each of the eight parameters:
which rows fail says which path is wrong. docs/03-attention.md derives the forward,
docs/03-attention-backward.md the backward; the solution is the project's own attention_forward and
attention_backward in transformer.py.

The functions imported from transformer below are the project's: use them, or your own once they
pass (python train.py --exercises guided puts your written functions in their place, so these names
call yours there).
"""

import math

import numpy as np

from transformer import AttentionCache, causal_mask, linear_backward, linear_forward, softmax, softmax_backward


def attention_forward(x, p, num_heads, past=None):  # (B, T, C), block params -> (B, T, C)
    """out, each position's mix of the values of the positions it may see, and the cache.

    p holds the block's parameters by short name: p["Wq"], p["Wk"], p["Wv"], p["Wo"] (C, C) and
    p["bq"], p["bk"], p["bv"], p["bo"] (C,). With nh = num_heads heads of hs = C / nh numbers each:
        Q, K, V = x Wq + bq, x Wk + bk, x Wv + bv        (B, T, C) each, by linear_forward
        q, k, v = Q, K, V split into heads               (B, T, C) -> (B, nh, T, hs)
        scores  = q k^T / sqrt(hs) + causal_mask(T, S)   (B, nh, T, S), -inf where key s is later than query t
        attn    = softmax(scores)                        (B, nh, T, S), over the last axis
        heads   = attn v                                 (B, nh, T, hs)
        merged  = the heads side by side                 (B, nh, T, hs) -> (B, T, C)
        out     = merged Wo + bo                         (B, T, C), by linear_forward
    S = T without a past. past, in generation: (k_past, v_past), each (B, nh, S - T, hs), the keys and
    values of the S - T positions before x; k and v are then np.concatenate([past one, x's one], axis=2).

    Hints:
    - Split: rows.reshape(B, T, nh, hs).transpose(0, 2, 1, 3). Merge: the reverse,
      heads.transpose(0, 2, 1, 3).reshape(B, T, C).
    - k.swapaxes(-1, -2) is k^T for every head at once, and @ multiplies the last two axes.
    - causal_mask(T, S, x.dtype) is 0 where query t may see key s and -inf elsewhere; with a past the
      T queries are the last T of the S positions.
    Return out and cache = AttentionCache((q_cache, k_cache, v_cache), q, k, v, attn, out_cache): the
    caches of the three linear_forward calls of Q, K and V, the heads q (B, nh, T, hs), k and v
    (B, nh, S, hs, the past included: generation keeps them), attn (B, nh, T, S), and the cache of
    the linear_forward of the output.
    """
    raise NotImplementedError  # your code, in place of this line


def attention_backward(dout, cache):  # (B, T, C) -> dx (B, T, C), {"Wq": dWq, "bq": dbq, ...}
    """dx and the gradients of the eight parameters, from dout = dL/dout, the gradient on the output.

    cache = ((q_cache, k_cache, v_cache), q, k, v, attn, out_cache), as attention_forward kept it
    (with no past: S = T).

    The gradients, for one head (^T: the last two axes swapped, .swapaxes(-1, -2)):
        dmerged, dWo, dbo = linear_backward(dout, out_cache)
        dheads = dmerged split into heads                (B, T, C) -> (B, nh, T, hs)
        dattn  = dheads v^T          dv = attn^T dheads
        dscores = softmax_backward(dattn, attn) / sqrt(hs)
        dq = dscores k               dk = dscores^T q
        dx, dWq, dbq, ... : linear_backward of dq, dk, dv, each back in (B, T, C)
        dx = dx_q + dx_k + dx_v

    Hints:
    - For a product of matrices P = A B the chain rule gives dA = dP B^T and dB = A^T dP:
      heads = attn v and q k^T are both such products.
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
