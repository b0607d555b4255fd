"""Exercise 3, derive track: layer normalization over the last axis.

Read "Shifting and scaling each row" on docs/02-layernorm.md; derive dx, dgain and dshift on paper
(each entry of a row reaches the output directly, through the row's mean and through its variance),
then write the bodies of layernorm_forward and layernorm_backward below, the forward first, and run

    python exercises/judge.py layernorm --track derive

The guided stub, exercises/guided/03_layernorm.py, gives the equations and hints if you get stuck.
"""

import numpy as np


def layernorm_forward(x, gain, shift, eps):  # (..., C), (C,), (C,) -> (..., C)
    """y (..., C), each row normalized, scaled by gain and shifted by shift, and the cache.

    eps: added to each row's variance (the biased one) under the square root.
    Return y and the cache (xhat, rstd, gain): xhat (..., C), the normalized rows; rstd (..., 1), one
    over each row's standard deviation, eps included; gain (C,). In that order: layernorm_backward reads it.
    """
    raise NotImplementedError  # your code, in place of this line


def layernorm_backward(dout, cache):  # (..., C) -> dx (..., C), dgain (C,), dshift (C,)
    """dx, dgain and dshift from dout, the gradient of the loss on the layer's output.

    cache: (xhat, rstd, gain), as layernorm_forward kept them: xhat (..., C), the normalized rows;
    rstd (..., 1), one over each row's standard deviation (eps included); gain (C,).
    dout: (..., C).
    Return dx (..., C), dgain (C,), dshift (C,), new arrays.
    """
    raise NotImplementedError  # your code, in place of this line
