"""Exercise 8: one pre-LN transformer block, x + attention(LN1(x)), then + MLP(LN2(.)).

Write the bodies of block_forward and block_backward below, the forward first, then run

    python exercises/judge.py block

The forward is judged against the project's, with and without a past, its cache through the
project's block_backward, and on the page's worked example; the backward by central differences, a
row for x and for each of the block's sixteen parameters. docs/05-block.md derives it (The residual
stream); the solution is the project's own block_forward and block_backward in transformer.py.

The functions imported from transformer below are the project's: use them, or your own once they
pass (python train.py --exercises guided puts your written functions in their place, so these names
call yours there).
"""

from transformer import (BlockCache, attention_backward, attention_forward, layernorm_backward, layernorm_forward,
                         mlp_backward, mlp_forward)


def block_forward(x, p, cfg, past=None):  # (B, T, C), block params -> (B, T, C)
    """out, x with the attention branch and then the MLP branch added, and the cache.

    p holds the block's parameters by short name (p["ln1_gain"], p["Wq"], ..., p["b2"]); cfg is the
    model's ModelConfig (cfg.num_heads, cfg.ln_eps); past, in generation, goes to attention_forward.
        h1    = LN1(x)                    layernorm_forward(x, p["ln1_gain"], p["ln1_shift"], cfg.ln_eps)
        x_mid = x + attention(h1)         attention_forward(h1, p, cfg.num_heads, past)
        h2    = LN2(x_mid)                layernorm_forward with p["ln2_gain"], p["ln2_shift"]
        out   = x_mid + MLP(h2)           mlp_forward(h2, p)                                (B, T, C)

    Hints:
    - x + branch makes a new array; x += branch would write into the caller's x.
    Return out and cache = BlockCache(ln1_cache, attn_cache, ln2_cache, mlp_cache): the four layers'
    caches, by name (generation reads cache.attention).
    """
    raise NotImplementedError  # your code, in place of this line


def block_backward(dout, cache):  # (B, T, C) -> dx (B, T, C), {short name: gradient}
    """dx and the gradient of each of the block's sixteen parameters, by short name, from dout.

    cache = (ln1_cache, attn_cache, ln2_cache, mlp_cache), as block_forward kept it.

    The gradients, the forward backwards:
        dh2, grads                        = mlp_backward(dout, mlp_cache)
        dx_mid, dln2_gain, dln2_shift     = layernorm_backward(dh2, ln2_cache)
        dx_mid                            = dx_mid + dout            (the residual: out = x_mid + ...)
        dh1, attention's eight gradients  = attention_backward(dx_mid, attn_cache)
        dx, dln1_gain, dln1_shift         = layernorm_backward(dh1, ln1_cache)
        dx                                = dx + dx_mid              (the residual: x_mid = x + ...)

    Hints:
    - A residual x + f(x) hands its gradient to x unchanged, and f's backward adds to it: x reaches
      the output by two paths, so its gradient is the sum of both.
    - One dict of sixteen gradients: "W1", "b1", "W2", "b2", "ln2_gain", "ln2_shift", "Wq", ..., "bo",
      "ln1_gain", "ln1_shift".
    Return dx, the dict.
    """
    raise NotImplementedError  # your code, in place of this line
