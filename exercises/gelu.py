"""Exercise 2 of 7: the backward of GELU, the MLP's activation (the tanh approximation).

Write the body of gelu_backward below, then run

    python gradcheck.py --exercise gelu

docs/04-mlp.md derives the equation (GELU); the solution is the project's own gelu_backward in
transformer.py: read it when yours passes, or when you are stuck.
"""

from transformer import GELU_CUBIC, GELU_SCALE  # sqrt(2/pi) and 0.044715, as the forward used them


def gelu_backward(dout, cache):  # (...) -> (...)
    """dx from dout = dL/dy, entry by entry.

    The forward (gelu_forward) computed, for every entry x of its input,
        u = sqrt(2/pi) (x + 0.044715 x^3),    y = 0.5 x (1 + tanh u)
    and kept cache = (x, tanh_u), both of the input's shape.

    The gradient:
        dy/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx,   du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
        dx = dout * dy/dx                                                     (the input's shape)

    Hints:
    - y = 0.5 x * (1 + tanh u) is a product of two factors that both depend on x: the product rule
      gives two terms, and leaving out the first, 0.5 (1 + tanh u), is the usual mistake.
    - d tanh(u)/du = 1 - tanh^2 u, and tanh u is in the cache: there is no need for np.tanh again.
    - Every entry is on its own: no sums, and dx has the shape of x.
    - Return a new array and leave the cache and dout as they are.
    Return dx.
    """
    raise NotImplementedError  # your code, in place of this line
