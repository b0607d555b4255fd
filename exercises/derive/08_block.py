"""Exercise 8, derive track: one pre-LN transformer block.

Read docs/05-block.md; derive how a gradient crosses a residual connection, then write the bodies of
block_forward and block_backward below, the forward first, and run

    python exercises/judge.py block --track derive

The guided stub, exercises/guided/08_block.py, gives the equations and hints if you get stuck. The names
imported from transformer are the project's; python train.py --exercises derive puts your written
functions in their place there.
"""

from transformer import (BlockCache, attention_backward, attention_forward, layernorm_backward, layernorm_forward,
                         mlp_backward, mlp_forward)


def block_forward(x, p, cfg, past=None):  # (B, T, C), block params -> (B, T, C)
    """out (B, T, C), and the cache.

    p: the block's sixteen parameters by short name ("ln1_gain", "ln1_shift", "Wq", ..., "W2", "b2").
    cfg: the ModelConfig (cfg.num_heads, cfg.ln_eps). past: for attention_forward, in generation.
    Return out and BlockCache(ln1_cache, attn_cache, ln2_cache, mlp_cache), the caches of the first
    layer norm, the attention, the second layer norm and the MLP, by name: generation reads its attention.
    """
    raise NotImplementedError  # your code, in place of this line


def block_backward(dout, cache):  # (B, T, C) -> dx (B, T, C), {short name: gradient}
    """dx and the gradient of each of the block's sixteen parameters from dout (B, T, C).

    cache: (ln1_cache, attn_cache, ln2_cache, mlp_cache), as block_forward kept it.
    Return dx (B, T, C) and one dict of the sixteen gradients by short name, each its parameter's shape.
    """
    raise NotImplementedError  # your code, in place of this line
