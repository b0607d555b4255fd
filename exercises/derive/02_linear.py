"""Exercise 2, derive track: the linear layer, y = x W + b.

Read "A backward primer" on docs/02-layernorm.md, and "Linear layer" on the same page up to its
backward; derive dx, dW and db on paper, then write the bodies of linear_forward and linear_backward
below, the forward first, and run

    python exercises/judge.py linear --track derive

The guided stub, exercises/guided/02_linear.py, gives the equations and hints if you get stuck.
"""


def linear_forward(x, W, b):  # (..., n_in), (n_in, n_out), (n_out,) -> (..., n_out)
    """y (..., n_out) and the cache (x, W): that pair, in that order, which linear_backward reads."""
    raise NotImplementedError  # your code, in place of this line


def linear_backward(dout, cache):  # (..., n_out) -> dx (..., n_in), dW (n_in, n_out), db (n_out,)
    """dx, dW and db from dout, the gradient of the loss on the layer's output.

    cache: (x, W), as linear_forward kept them: x (..., n_in), W (n_in, n_out).
    dout: (..., n_out), the shape of the output.
    Return dx (..., n_in), dW (n_in, n_out), db (n_out,), new arrays.
    """
    raise NotImplementedError  # your code, in place of this line
