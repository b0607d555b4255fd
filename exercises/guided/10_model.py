"""Exercise 10: the whole model, forward, then the loss and every parameter's gradient.

Write the bodies of forward and loss_and_grads below, forward first, then run

    python exercises/judge.py model

forward is judged against the project's for ids (B, T) and (T,), its cache through the project's
loss_and_grads, and on the page's worked example; loss_and_grads by central differences on every
entry of every parameter of a small model. docs/07-model.md derives it; the solution is the project's
own forward and loss_and_grads in transformer.py.

The functions imported from transformer below are the project's: use them, or your own once they
pass (python train.py --exercises guided puts your written functions in their place, so these names
call yours there).
"""

import numpy as np

from transformer import (block_backward, block_forward, block_params, check_ids, cross_entropy_backward,
                         cross_entropy_forward, embed_backward, embed_forward, layernorm_backward, layernorm_forward,
                         linear_backward, linear_forward, write_grads, zeros_like)


def forward(params, ids, cfg):  # (T,) or (B, T) ints -> logits (T, V) or (B, T, V), cache
    """The logits of every position, and the cache loss_and_grads needs.

    params: the model's tensors by name ("tok_emb", "block0.Wq", ..., "W_out", "b_out"); cfg: its
    ModelConfig. block_params(params, layer) gives one block's tensors by short name.
        batch  = ids as (B, T)                                  (T,) -> (1, T)
        X      = embed_forward(params, batch)                   (B, T, C)
        X      = block_forward(X, block l, cfg), l = 0 .. L-1   (B, T, C)
        Xf     = LN_f(X)                                        params["lnf_gain"], params["lnf_shift"]
        logits = Xf W_out + b_out                               (B, T, V), back to ids' shape + (V,)

    Hints:
    - check_ids(ids, cfg) refuses ids that are not (T,) or (B, T), too long or outside the vocabulary.
    - One code path for both shapes: reshape to (B, T) first, and the logits back at the end.
    Return logits and cache = (batch, block_caches, lnf_cache, head_cache): batch (B, T), the list of
    the blocks' caches in order, the final layer norm's cache, the head's linear_forward cache.
    """
    raise NotImplementedError  # your code, in place of this line


def loss_and_grads(params, ids, targets, cfg):  # (T,) or (B, T) ids and targets -> loss, grads
    """The mean cross-entropy over every position, and its gradient for every parameter.

    targets: the ids each position should predict, of ids' shape.
        logits, cache = forward(params, ids, cfg)
        loss          = cross_entropy_forward(logits as (N, V), targets as (N,))
        dlogits       = cross_entropy_backward, back in (B, T, V)
        then each backward in the reverse order of the forward: the head, LN_f, the blocks from the
        last to the first, the embeddings.

    Hints:
    - grads = zeros_like(params) is one buffer laid out as params, which clipping and AdamW read
      whole: write each gradient into its place, write_grads(grads, {"W_out": dW_out, ...}) and,
      for block l, write_grads(grads, block_grads, prefix=f"block{l}."). embed_backward adds into it.
    - The blocks' caches are in forward order: walk them backwards.
    Return loss (a float) and grads.
    """
    raise NotImplementedError  # your code, in place of this line
