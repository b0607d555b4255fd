"""Exercise 1, derive track: the embeddings, where the forward pass starts and the backward ends.

Read docs/01-embeddings.md; derive what each table's gradient collects on paper, then write the
bodies of embed_forward and embed_backward below, the forward first, and run

    python exercises/judge.py embedding --track derive

The guided stub, exercises/guided/01_embedding.py, gives the equations and hints if you get stuck.
"""

import numpy as np


def embed_forward(params, ids, start=0):  # (..., T) ints -> (..., T, C); start: position of the first id
    """X0, each token's vector at its position, (..., T, C).

    params["tok_emb"] (V, C), a row per token id; params["pos_emb"] (context_len, C), a row per position.
    ids: (T,) or (B, T) ints in [0, V). start: the position of the first id (not 0 in generation only).
    Return X0 alone, not a pair: the backward needs only ids.
    """
    raise NotImplementedError  # your code, in place of this line


def embed_backward(dX0, ids, grads):  # (..., T, C), (..., T) -> adds into grads["tok_emb"], grads["pos_emb"]
    """Add the gradients of the two tables into grads["tok_emb"] (V, C) and grads["pos_emb"]
    (context_len, C); return nothing.

    dX0: (..., T, C), the gradient on the forward's output. ids: (T,) or (B, T), as the forward read them.
    An id may occur more than once.
    """
    raise NotImplementedError  # your code, in place of this line
