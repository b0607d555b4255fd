"""Exercise 3: layer normalization over the last axis.

Write the bodies of layernorm_forward and layernorm_backward below, the forward first, then run

    python exercises/judge.py layernorm

The forward is judged against the project's and the page's worked example; the backward by central
differences, a row for each of dx, dgain and dshift, so you can get them right one at a time: the
two parameters first. When it fails, the page's worked example runs through yours, row by row beside
the page's. docs/02-layernorm.md derives the equations (Layer normalization backward); the solution
is the project's own layernorm_forward and layernorm_backward in transformer.py.
"""

import numpy as np


def layernorm_forward(x, gain, shift, eps):  # (..., C), (C,), (C,) -> (..., C)
    """y, each row of x normalized to mean 0 and variance 1, then scaled and shifted; and the cache.

    For every row x of C numbers (the last axis):
        mean = (1/C) sum_c x_c,   var = (1/C) sum_c (x_c - mean)^2,   rstd = 1 / sqrt(var + eps)
        xhat = (x - mean) * rstd,   y = xhat * gain + shift                      (..., C)

    Hints:
    - .mean(axis=-1, keepdims=True) gives (..., 1), which broadcasts back against (..., C).
    - The variance is the biased one, over C (np.var's default); eps goes inside the square root,
      so that a constant row (variance 0) gives xhat = 0, not a division by 0.
    Return y and cache = (xhat, rstd, gain): xhat (..., C), rstd (..., 1), gain (C,), in that order.
    """
    raise NotImplementedError  # your code, in place of this line


def layernorm_backward(dout, cache):  # (..., C) -> dx (..., C), dgain (C,), dshift (C,)
    """dx, dgain and dshift from dout = dL/dy, the gradient on the layer's output.

    cache = (xhat, rstd, gain), as layernorm_forward kept them: xhat (..., C), rstd (..., 1), gain (C,).

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
      - mean(dxhat) and - xhat * mean(dxhat * xhat). The last one holds dxhat, not dout: they
      differ by the gain.
    - A mean over the row is .mean(axis=-1, keepdims=True): (..., 1), which broadcasts back.
    - Return new arrays: xhat *= ... or dout *= ... would write into the cache or dout, and the
      check, which calls you twice, says so.
    Return dx, dgain, dshift.
    """
    raise NotImplementedError  # your code, in place of this line
