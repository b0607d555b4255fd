"""Exercise 10, derive track: the whole model, forward, then the loss and every gradient.

Read docs/07-model.md; the whole backward is the whole forward reversed, line for line. Write the
bodies of forward and loss_and_grads below, forward first, and run

    python exercises/judge.py model --track derive

The guided stub, exercises/guided/10_model.py, gives the equations and hints if you get stuck. The names
imported from transformer are the project's; python train.py --exercises derive puts your written
functions in their place there.
"""

import numpy as np

from transformer import (block_backward, block_forward, block_params, check_ids, cross_entropy_backward,
                         cross_entropy_forward, embed_backward, embed_forward, layernorm_backward, layernorm_forward,
                         linear_backward, linear_forward, write_grads, zeros_like)


def forward(params, ids, cfg):  # (T,) or (B, T) ints -> logits (T, V) or (B, T, V), cache
    """The logits of every position, and the cache.

    params: every tensor by name ("tok_emb", "pos_emb", "block0.ln1_gain", ..., "W_out", "b_out").
    ids: (T,) or (B, T) ints, checked by check_ids. cfg: the ModelConfig.
    Return logits, of ids' shape and V more, and the cache (batch, block_caches, lnf_cache,
    head_cache): ids as (B, T); the list of the blocks' caches in order; the final layer norm's cache;
    the head's linear_forward cache. loss_and_grads reads it in that order.
    """
    raise NotImplementedError  # your code, in place of this line


def loss_and_grads(params, ids, targets, cfg):  # (T,) or (B, T) ids and targets -> loss, grads
    """The mean cross-entropy over every position, and its gradient for every parameter.

    targets: of ids' shape, the id each position should predict.
    Return loss, a float, and grads: zeros_like(params) with every gradient written into its place (one
    buffer laid out as params, which clipping and AdamW read whole).
    """
    raise NotImplementedError  # your code, in place of this line
