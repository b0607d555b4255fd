"""Exercise 6 of 7: the backward of layer normalization over the last axis.

Write the body of layernorm_backward below, then run

    python gradcheck.py --exercise layernorm

The table has a row for each of dx, dgain and dshift, so you can get them right one at a time:
the two parameters first. docs/02-layernorm.md derives the equations (Layer normalization
backward); the solution is the project's own layernorm_backward in transformer.py: read it when
yours passes, or when you are stuck.
"""

import numpy as np


def layernorm_backward(dout, cache):  # (..., C) -> dx (..., C), dgain (C,), dshift (C,)
    """dx, dgain and dshift from dout = dL/dy, the gradient on the layer's output.

    The forward (layernorm_forward) computed, for every row x of C numbers,
        mean = (1/C) sum_c x_c,   var = (1/C) sum_c (x_c - mean)^2,   rstd = 1 / sqrt(var + eps)
        xhat = (x - mean) * rstd,   y = xhat * gain + shift
    and kept cache = (xhat, rstd, gain): xhat (..., C), rstd (..., 1), gain (C,).

    The gradients, with "over all rows" meaning every leading axis together:
        dshift = dout summed over all rows                                         (C,)
        dgain  = (dout * xhat) summed over all rows                                (C,)
        dxhat  = dout * gain                                                       (..., C)
        dx     = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))          (..., C)
    where each mean is over the row, the last axis.

    Hints:
    - y = xhat * gain + shift, entry by entry, for every row: gain and shift are used by every
      row, so their gradients sum over all the leading axes. dout.reshape(-1, C) makes them one.
      Get dgain and dshift to pass first; dx may fail meanwhile (return np.zeros_like(dout) for it).
    - xhat = (x - mean) * rstd depends on each x_c three ways: directly, through the row's mean,
      and through the row's variance. dx is the sum of the three paths: the terms dxhat,
      - mean(dxhat) and - xhat * mean(dxhat * xhat).
    - A mean over the row is .mean(axis=-1, keepdims=True): (..., 1), which broadcasts back.
    - Return new arrays: xhat *= ... or dout *= ... would write into the cache or dout, and the
      check, which calls you twice, says so.
    Return dx, dgain, dshift.
    """
    raise NotImplementedError  # your code, in place of this line
