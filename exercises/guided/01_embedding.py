"""Exercise 1: the embeddings, where the forward pass starts and the backward pass ends.

Write the bodies of embed_forward and embed_backward below, the forward first, then run

    python exercises/judge.py embedding

The forward is judged against the project's on random ids and on the page's worked example (ids
[2, 0, 2]); the backward by central differences, with the page's example beside yours when it fails.
docs/01-embeddings.md derives both (Embedding backward); the solution is the project's own
embed_forward and embed_backward in transformer.py: read them when yours passes, or when you are stuck.
"""

import numpy as np


def embed_forward(params, ids, start=0):  # (..., T) ints -> (..., T, C); start: position of the first id
    """X0, each token's vector at its position. No cache: the backward needs only ids.

    params["tok_emb"] (V, C) holds a row per token id, params["pos_emb"] (context_len, C) a row per
    position; ids is (T,) or (B, T), ints in [0, V); start is the position of the first id (0, except in
    generation, where the positions before it are in the key/value cache).
        X0[..., t, :] = tok_emb[ids[..., t]] + pos_emb[start + t]                (..., T, C)

    Hints:
    - tok_emb[ids] picks a row per id whatever the shape of ids: (T,) -> (T, C), (B, T) -> (B, T, C).
    - The positions are a slice of rows, start to start + T: (T, C), which broadcasts over B.
    Return X0 alone, not a pair.
    """
    raise NotImplementedError  # your code, in place of this line


def embed_backward(dX0, ids, grads):  # (..., T, C), (..., T) -> adds into grads["tok_emb"], grads["pos_emb"]
    """Add the gradients of the two tables into grads; return nothing.

    The forward computed X0[b, t] = tok_emb[ids[b, t]] + pos_emb[t] for each sequence b and position t,
    with ids (T,) or (B, T) and X0 of shape (..., T, C). grads["tok_emb"] (V, C) and grads["pos_emb"]
    (context_len, C) are arrays to add into.

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
