"""Numerical gradients by central differences, to check the hand-written backward passes.

Used by the tests only. Work in float64: with h = 1e-5 the central difference is accurate to
about h^2 from the truncation and 1e-16 / h from rounding, so float64 agrees with an exact
backward to about 1e-10, while float32 could not tell a right gradient from a slightly wrong one.
"""

import numpy as np


def numerical_grad(f, x, h=1e-5):
    """df/dx for every entry of x: (f(x + h e_i) - f(x - h e_i)) / 2h.

    f takes no arguments and returns a scalar computed from x, which it reads by reference: each
    entry of x is perturbed in place and restored before the next one.
    Example: x = np.array([3.0]), f = lambda: (x * x).sum() -> array([6.])
    """
    assert x.dtype == np.float64, f"check gradients in float64, got {x.dtype}"
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        original = x[index]
        x[index] = original + h
        f_plus = f()
        x[index] = original - h
        f_minus = f()
        x[index] = original
        grad[index] = (f_plus - f_minus) / (2 * h)
    return grad


def relative_error(analytic, numeric):
    """The largest gap between two gradients of one tensor, relative to the tensor's largest entry.

    Relative to the largest entry, not entry by entry, because an entry that is almost 0 would
    turn the rounding noise of the central difference into a huge relative error.
    Example: analytic = [1.0, 0.0], numeric = [1.0, 1e-9] -> 1e-9
    """
    scale = max(np.max(np.abs(analytic)), np.max(np.abs(numeric)))
    return 0.0 if scale == 0 else float(np.max(np.abs(analytic - numeric)) / scale)


def check_params(loss, params, grads, h=1e-5):
    """The relative error of every parameter's gradient: {name: worst relative error}.

    loss() returns the scalar loss from the current values of params; grads are the analytic
    gradients to check, with the same keys.
    """
    return {name: relative_error(grads[name], numerical_grad(loss, params[name], h)) for name in params}
