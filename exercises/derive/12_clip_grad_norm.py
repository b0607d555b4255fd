"""Exercise 12, derive track: clipping the gradients to a global L2 norm.

Read "Gradient clipping" on docs/08-training.md, then write the body of clip_grad_norm below and run

    python exercises/judge.py clip_grad_norm --track derive

The guided stub, exercises/guided/12_clip_grad_norm.py, gives the equations and hints if you get stuck.
"""

import math

import numpy as np

from transformer import flat_buffer


def clip_grad_norm(grads, max_norm):
    """Scale every gradient in place so that their global L2 norm is at most max_norm; return the norm
    they had before, a float.

    grads: the model's gradients by name, every tensor a view into one flat buffer, flat_buffer(grads),
    which AdamW reads next.
    """
    raise NotImplementedError  # your code, in place of this line
