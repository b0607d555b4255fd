"""Exercise 12: clipping the gradients to a global L2 norm.

Write the body of clip_grad_norm below, then run

    python exercises/judge.py clip_grad_norm

It is judged on the page's example (a norm of 5 clipped to 1), on norms below, just above and twice
max_norm, on whether it scales in place, and against the project's. docs/08-training.md derives it
(Gradient clipping); the solution is the project's own clip_grad_norm in transformer.py.
"""

import math

import numpy as np

from transformer import flat_buffer


def clip_grad_norm(grads, max_norm):
    """Scale every gradient in place so that their global L2 norm is at most max_norm; return the norm
    they had before.

    grads: the model's gradients by name, every tensor a view into one flat buffer, flat_buffer(grads).
        norm = sqrt(sum over every entry of every tensor of g^2)
        if norm > max_norm: every g becomes g * max_norm / norm

    Hints:
    - Global: one norm for all the tensors together, not one per tensor.
    - In place: AdamW reads the same buffer next, so scale the buffer (or each tensor with *=); a new
      array in grads[name] would not be seen.
    - Any norm above max_norm is clipped, however little above.
    Return norm, the norm before clipping, a float.
    """
    raise NotImplementedError  # your code, in place of this line
