"""Exercise 5 of 7: the backward of the embeddings, where the backward pass ends.

Write the body of embed_backward below, then run

    python gradcheck.py --exercise embedding

docs/01-embeddings.md derives the equations (Embedding backward); the solution is the project's
own embed_backward in transformer.py: read it when yours passes, or when you are stuck.
"""

import numpy as np


def embed_backward(dX0, ids, grads):  # (..., T, C), (..., T) -> adds into grads["tok_emb"], grads["pos_emb"]
    """Add the gradients of the two tables into grads; return nothing.

    The forward (embed_forward) computed, for each sequence b and position t,
        X0[b, t] = tok_emb[ids[b, t]] + pos_emb[t]
    with ids (T,) or (B, T) and X0 of shape (..., T, C). The backward has no cache: ids is all it
    needs. grads["tok_emb"] (V, C) and grads["pos_emb"] (context_len, C) are arrays to add into.

    The gradients:
        dtok_emb[v] = sum over every (b, t) with ids[b, t] == v of dX0[b, t]     (V, C)
        dpos_emb[t] = sum over b of dX0[b, t]  for t < T,  and 0 for t >= T     (context_len, C)

    Hints:
    - An id that appears twice was read twice: its row collects both gradients. grads["tok_emb"]
      [ids] += dX0 keeps only one of them (NumPy reads, adds and writes each repeated row once);
      np.add.at(table, rows, values) adds them one by one.
    - Position t is read by every sequence of the batch: sum over the batch axis. ids may be (T,)
      or (B, T); dX0.reshape(-1, T, C) and ids.reshape(-1) give every case one form.
    - Add with +=, into the arrays in grads, and only into rows 0..T-1 of pos_emb: rows from T on
      were not read, and keep the 0 they hold.
    """
    raise NotImplementedError  # your code, in place of this line
