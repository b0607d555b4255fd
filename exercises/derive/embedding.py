"""Exercise 5 of 7, derive track: the backward of the embeddings, where the backward pass ends.

Read "Token embedding" to "Embedding sum" on docs/01-embeddings.md; work out on paper which rows
of the two tables each row of dX0 reaches (an id may occur more than once), then write the body
of embed_backward below and run

    python gradcheck.py --exercise embedding --track derive

The guided stub, exercises/embedding.py, gives the equations and hints if you get stuck.
"""

import numpy as np


def embed_backward(dX0, ids, grads):  # (..., T, C), (..., T) -> adds into grads["tok_emb"], grads["pos_emb"]
    """Add the gradients of the two tables into grads; return nothing.

    dX0: (..., T, C), the gradient on the embeddings' output.
    ids: (T,) or (B, T) ints, the forward's input; the backward has no other cache.
    grads["tok_emb"]: (V, C) and grads["pos_emb"]: (context_len, C), arrays of zeros to add into.
    """
    raise NotImplementedError  # your code, in place of this line
