"""Exercise 7: the MLP of a block, GELU(x W1 + b1) W2 + b2.

Write the bodies of mlp_forward and mlp_backward below, the forward first, then run

    python exercises/judge.py mlp

The forward is judged against the project's and the page's worked example; the backward by central
differences, a row for x and for each of W1, b1, W2 and b2. docs/04-mlp.md derives it (The MLP);
the solution is the project's own mlp_forward and mlp_backward in transformer.py.

The functions imported from transformer below are the project's: use them, or your own once they
pass (python train.py --exercises guided puts your written functions in their place, so these names
call yours there).
"""

from transformer import gelu_backward, gelu_forward, linear_backward, linear_forward


def mlp_forward(x, p):  # (B, T, C), block params -> (B, T, C)
    """out, the MLP of every position on its own, and the cache.

    p holds the block's parameters by short name: p["W1"] (C, F), p["b1"] (F,), p["W2"] (F, C), p["b2"] (C,).
        hidden    = x W1 + b1             (B, T, F), by linear_forward
        activated = GELU(hidden)          (B, T, F), by gelu_forward
        out       = activated W2 + b2     (B, T, C), by linear_forward

    Hints:
    - Three calls, each returning its output and its cache; keep the three caches.
    Return out and cache = (fc_cache, gelu_cache, proj_cache): the caches of the first linear_forward,
    of gelu_forward and of the second linear_forward, in that order.
    """
    raise NotImplementedError  # your code, in place of this line


def mlp_backward(dout, cache):  # (B, T, C) -> dx (B, T, C), {"W1": dW1, "b1": db1, "W2": dW2, "b2": db2}
    """dx and the gradients of W1, b1, W2 and b2 from dout; cache = (fc_cache, gelu_cache, proj_cache).

    The gradients: the forward's three steps, backwards.
        dactivated, dW2, db2 = linear_backward(dout, proj_cache)
        dhidden              = gelu_backward(dactivated, gelu_cache)
        dx, dW1, db1         = linear_backward(dhidden, fc_cache)

    Hints:
    - The backward of a chain is the chain of backwards in reverse order, each handed its own cache.
    Return dx, {"W1": dW1, "b1": db1, "W2": dW2, "b2": db2}.
    """
    raise NotImplementedError  # your code, in place of this line
