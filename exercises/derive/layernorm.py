"""Exercise 6 of 7, derive track: the backward of layer normalization over the last axis.

Read "Shifting and scaling each row" on docs/02-layernorm.md; derive dx, dgain and dshift on
paper (each entry of a row reaches the output directly, through the row's mean and through its
variance), then write the body of layernorm_backward below and run

    python gradcheck.py --exercise layernorm --track derive

The guided stub, exercises/layernorm.py, gives the equations and hints if you get stuck.
"""

import numpy as np


def layernorm_backward(dout, cache):  # (..., C) -> dx (..., C), dgain (C,), dshift (C,)
    """dx, dgain and dshift from dout, the gradient of the loss on the layer's output.

    cache: (xhat, rstd, gain), as layernorm_forward kept them: xhat (..., C), the normalized rows;
    rstd (..., 1), one over each row's standard deviation (eps included); gain (C,).
    dout: (..., C).
    Return dx (..., C), dgain (C,), dshift (C,), new arrays.
    """
    raise NotImplementedError  # your code, in place of this line
