"""Exercise 7, derive track: the MLP of a block, GELU(x W1 + b1) W2 + b2.

Read "The MLP" on docs/04-mlp.md; the backward of a chain of layers is the chain of their backwards.
Write the bodies of mlp_forward and mlp_backward below, the forward first, and run

    python exercises/judge.py mlp --track derive

The guided stub, exercises/guided/07_mlp.py, gives the equations and hints if you get stuck. The names
imported from transformer are the project's; python train.py --exercises derive puts your written
functions in their place there.
"""

from transformer import gelu_backward, gelu_forward, linear_backward, linear_forward


def mlp_forward(x, p):  # (B, T, C), block params -> (B, T, C)
    """out (B, T, C) and the cache.

    p: the block's parameters by short name, "W1" (C, F), "b1" (F,), "W2" (F, C), "b2" (C,).
    Return out and the cache (fc_cache, gelu_cache, proj_cache): the caches of the first
    linear_forward, of gelu_forward and of the second linear_forward, in that order.
    """
    raise NotImplementedError  # your code, in place of this line


def mlp_backward(dout, cache):  # (B, T, C) -> dx (B, T, C), {"W1": dW1, "b1": db1, "W2": dW2, "b2": db2}
    """dx and the gradients of W1, b1, W2 and b2 from dout (B, T, C).

    cache: (fc_cache, gelu_cache, proj_cache), as mlp_forward kept it.
    Return dx (B, T, C) and {"W1": dW1, "b1": db1, "W2": dW2, "b2": db2}, each its parameter's shape.
    """
    raise NotImplementedError  # your code, in place of this line
