"""A GPT in NumPy: the parameters, each layer as a forward/backward pair, the model and its loss.

Shape letters used in the signature comments:
    B   sequences in a batch            T   tokens in a sequence (at most context_len)
    C   emb_dim, the width of a token vector
    nh  num_heads                       hs  head_dim, C // nh unless set
    kvh kv_heads, heads of keys and values (nh unless set)
    F   ff_dim, the MLP's hidden width  V   vocab_size
    L   num_layers                      N   B * T, rows once a batch is flattened

Every layer is a `*_forward` returning (output, cache) and a `*_backward` right below it taking
(dout, cache). The cache is a plain tuple handed from one to the other: there is no hidden state.
forward and loss_and_grads take ids of shape (T,) or (B, T); the layers work on (B, T, ...) arrays.
The dtype of the parameters is the dtype of the computation: float32 in, float32 out.
Today's pieces (RMSNorm, rotary positions, SwiGLU, grouped keys and values, QK-norm) are options of ModelConfig;
each pair sits beside its GPT-2 sibling, and a model with one of them takes modern_forward (cfg.family).

After the model, two sections of what it is for: what turns gradients into better parameters (the
learning-rate schedule, clipping, AdamW), which train.py's loop calls, and drawing the next token
(temperature, top-k, top-p, generate), which generate.py, talk.py and the lab call.
"""

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int  # V: rows of the token table and width of the logits; set by the tokenizer
    context_len: int  # Tmax: rows of the position table, the longest sequence the model reads
    emb_dim: int  # C: width of every token vector in the residual stream
    num_heads: int  # nh: attention heads per block; each has emb_dim // num_heads dimensions
    num_layers: int  # L: transformer blocks
    ff_dim: int  # F: hidden width of each block's MLP
    ln_eps: float  # added to the variance in every layer norm
    # today's family: each default is GPT-2's, and a model with every one at its default is GPT-2's, bit for bit
    norm: str = "layernorm"  # or "rmsnorm": x / sqrt(mean(x^2) + eps) * gain, no mean taken away, no shift
    positions: str = "learned"  # or "rope": no pos_emb; each head's q and k turned by an angle per position
    rope_theta: float = 10000.0  # with rope, pair i of a head turns by t * rope_theta^(-2i/hs) at position t
    mlp: str = "gelu"  # or "swiglu": (silu(x W_gate) * (x W_up)) W_down
    kv_heads: int = 0  # kvh: heads of keys and values, each serving num_heads / kv_heads query heads; 0 = num_heads
    qk_norm: bool = False  # each head's q and k through an RMSNorm over its hs numbers, before the turn (Qwen3)
    bias: bool = True  # False: no bias in any linear layer, no shift in any norm
    tied_head: bool = False  # True: logits = Xf tok_emb^T, no W_out and no b_out
    head_dim: int = 0  # hs, the width of a head; 0 = emb_dim // num_heads (Wq is (C, nh hs), Wo (nh hs, C))

    def __post_init__(self):
        for name in ("vocab_size", "context_len", "emb_dim", "num_heads", "num_layers", "ff_dim"):
            if not (isinstance(getattr(self, name), (int, np.integer)) and getattr(self, name) > 0):
                raise ValueError(f"ModelConfig.{name} must be a positive integer, got {getattr(self, name)!r}")
        for name in ("kv_heads", "head_dim"):
            if not (isinstance(getattr(self, name), (int, np.integer)) and getattr(self, name) >= 0):
                raise ValueError(f"ModelConfig.{name} must be 0 or a positive integer, got {getattr(self, name)!r}")
        if self.emb_dim % self.num_heads and not self.head_dim:
            raise ValueError(f"emb_dim ({self.emb_dim}) must be divisible by num_heads ({self.num_heads})")
        if not self.ln_eps > 0:
            raise ValueError(f"ln_eps must be positive, got {self.ln_eps}")
        # 0 stands for GPT-2's value, and the field then holds that number: cfg.head_dim and cfg.kv_heads are sizes
        object.__setattr__(self, "head_dim", self.head_dim or self.emb_dim // self.num_heads)
        object.__setattr__(self, "kv_heads", self.kv_heads or self.num_heads)
        self.check_options()

    def check_options(self):
        """Raise ValueError, naming the value, unless today's options can build a model."""
        for name, choices in (("norm", ("layernorm", "rmsnorm")), ("positions", ("learned", "rope")),
                              ("mlp", ("gelu", "swiglu")), ("qk_norm", (False, True)), ("bias", (True, False)),
                              ("tied_head", (False, True))):
            if getattr(self, name) not in choices or type(getattr(self, name)) is not type(choices[0]):
                raise ValueError(f"{name} must be {' or '.join(map(repr, choices))}, got {getattr(self, name)!r}")
        if self.num_heads % self.kv_heads:
            raise ValueError(f"kv_heads ({self.kv_heads}) must divide num_heads ({self.num_heads}): each key/value "
                             f"head serves num_heads / kv_heads query heads")
        if self.positions == "rope" and self.head_dim % 2:
            raise ValueError(f"positions 'rope' turns a head's numbers in pairs: its head_dim must be even, got "
                             f"{self.head_dim}")
        if not self.rope_theta > 0:
            raise ValueError(f"rope_theta must be positive, got {self.rope_theta}")

    @property
    def family(self):  # "gpt2" where every option of today's is GPT-2's, else "modern": forward takes modern_forward
        gpt2 = ("layernorm", "learned", "gelu", self.num_heads, False, True, False, self.emb_dim // self.num_heads)
        options = (self.norm, self.positions, self.mlp, self.kv_heads, self.qk_norm, self.bias, self.tied_head,
                   self.head_dim)
        return "gpt2" if options == gpt2 else "modern"


# ---------------------------------------------------------------------------------------------
# Parameters: a flat dict of named tensors, all of them views into one contiguous buffer, so the
# optimizer and the gradient clipping can treat the whole model as a single vector.

BLOCK_KEYS = ("ln1_gain", "ln1_shift", "Wq", "bq", "Wk", "bk", "Wv", "bv", "Wo", "bo",
              "ln2_gain", "ln2_shift", "W1", "b1", "W2", "b2")


def param_shapes(cfg):
    """Name -> shape of every parameter, in the canonical order that checkpoints keep."""
    if cfg.family == "modern":  # one of today's options: modern_param_shapes gives the tensors and their order
        return modern_param_shapes(cfg)
    V, Tmax, C, F = cfg.vocab_size, cfg.context_len, cfg.emb_dim, cfg.ff_dim
    shapes = {"tok_emb": (V, C), "pos_emb": (Tmax, C)}
    block = {"ln1_gain": (C,), "ln1_shift": (C,), "Wq": (C, C), "bq": (C,), "Wk": (C, C), "bk": (C,),
             "Wv": (C, C), "bv": (C,), "Wo": (C, C), "bo": (C,), "ln2_gain": (C,), "ln2_shift": (C,),
             "W1": (C, F), "b1": (F,), "W2": (F, C), "b2": (C,)}
    for layer in range(cfg.num_layers):
        shapes.update({f"block{layer}.{key}": block[key] for key in BLOCK_KEYS})
    shapes.update({"lnf_gain": (C,), "lnf_shift": (C,), "W_out": (C, V), "b_out": (V,)})
    return shapes


# Without biases (bias off) each of these is the number 0, a constant: the layers read it as they read a bias,
# its gradient is let go (kept), and it is no parameter.
NO_BIAS = dict.fromkeys(("ln1_shift", "bq", "bk", "bv", "bo", "ln2_shift", "b1", "b2", "b_gate", "b_up", "b_down",
                         "lnf_shift", "b_out"), 0.0)


def modern_param_shapes(cfg):
    """param_shapes of a model with today's options, in this canonical order (GPT-2's, where they are off):
        tok_emb, pos_emb (learned positions only),
        per block l: the first norm (ln1_gain, ln1_shift; RMSNorm: rms1_gain), Wq, bq, Wk, bk, Wv, bv,
                     rmsq_gain, rmsk_gain (qk_norm only), Wo, bo, the second norm (ln2_... or rms2_gain),
                     the MLP (W1, b1, W2, b2; SwiGLU: W_gate, b_gate, W_up, b_up, W_down, b_down),
        the final norm (lnf_gain, lnf_shift; RMSNorm: rmsf_gain), W_out, b_out (untied head only);
    without biases, none of the names in NO_BIAS. Wq is (C, nh hs), Wk and Wv (C, kvh hs), Wo (nh hs, C)."""
    V, Tmax, C, F, hs = cfg.vocab_size, cfg.context_len, cfg.emb_dim, cfg.ff_dim, cfg.head_dim
    q_width, kv_width = cfg.num_heads * hs, cfg.kv_heads * hs
    mlp = {"W1": (C, F), "b1": (F,), "W2": (F, C), "b2": (C,)} if cfg.mlp == "gelu" else \
        {"W_gate": (C, F), "b_gate": (F,), "W_up": (C, F), "b_up": (F,), "W_down": (F, C), "b_down": (C,)}
    qk_norm = {"rmsq_gain": (hs,), "rmsk_gain": (hs,)} if cfg.qk_norm else {}
    block = {**norm_shapes("1", cfg), "Wq": (C, q_width), "bq": (q_width,), "Wk": (C, kv_width), "bk": (kv_width,),
             "Wv": (C, kv_width), "bv": (kv_width,), **qk_norm, "Wo": (q_width, C), "bo": (C,), **norm_shapes("2", cfg),
             **mlp}
    shapes = {"tok_emb": (V, C), **({"pos_emb": (Tmax, C)} if cfg.positions == "learned" else {})}
    for layer in range(cfg.num_layers):
        shapes.update({f"block{layer}.{key}": shape for key, shape in block.items()})
    shapes.update({**norm_shapes("f", cfg), **({} if cfg.tied_head else {"W_out": (C, V), "b_out": (V,)})})
    return {name: shape for name, shape in shapes.items() if cfg.bias or name.split(".")[-1] not in NO_BIAS}


def norm_shapes(which, cfg):  # the tensors of norm "1", "2" or "f": LayerNorm's gain and shift, or RMSNorm's gain
    if cfg.norm == "rmsnorm":
        return {f"rms{which}_gain": (cfg.emb_dim,)}
    return {f"ln{which}_gain": (cfg.emb_dim,), f"ln{which}_shift": (cfg.emb_dim,)}


def pack(tensors, dtype=None):
    """Copy a dict of arrays into one new flat buffer; return a dict of views into it, same order.

    Example: pack({"a": np.ones((2, 2)), "b": np.zeros(3)}) -> views of one buffer of 7 numbers
    """
    dtype = dtype or np.result_type(*tensors.values())
    flat = np.concatenate([t.reshape(-1) for t in tensors.values()], dtype=dtype)
    return views_into(flat, {name: t.shape for name, t in tensors.items()})


def views_into(flat, shapes):
    """A dict of views into the 1-D buffer flat, back to back, one per name with its shape.

    Example: views_into(np.arange(7), {"a": (2, 2), "b": (3,)}) -> {"a": [[0, 1], [2, 3]], "b": [4, 5, 6]}
    """
    views, offset = {}, 0
    for name, shape in shapes.items():
        size = math.prod(shape)
        views[name] = flat[offset: offset + size].reshape(shape)
        offset += size
    return views


def flat_buffer(tensors):
    """The one 1-D buffer that every tensor of a packed dict is a view of, in order."""
    flat = next(iter(tensors.values())).base
    assert flat is not None and all(t.base is flat for t in tensors.values()), \
        "these tensors do not share one buffer: make them with init_params, zeros_like or pack"
    assert flat.size == sum(t.size for t in tensors.values()), "the buffer holds more than these tensors"
    return flat


def zeros_like(tensors):
    """A packed dict of zeros with the keys, order, shapes and dtype of `tensors`."""
    flat = np.zeros(sum(t.size for t in tensors.values()), dtype=np.result_type(*tensors.values()))
    return views_into(flat, {name: t.shape for name, t in tensors.items()})


def write_grads(grads, named, prefix=""):
    """Write each gradient of named, {name: array}, into its view in grads (zeros_like), under prefix + name.

    One of another shape than its tensor, from a backward gone wrong, takes the view's place in the dict
    instead: gradcheck then names both shapes, and flat_buffer, which clipping and AdamW call, refuses it.
    Example: write_grads(grads, {"Wq": dWq}, prefix="block0.") -> grads["block0.Wq"][...] = dWq
    """
    for name, grad in named.items():
        if np.shape(grad) == grads[prefix + name].shape:
            grads[prefix + name][...] = grad  # [...]: into the view, so into the buffer
        else:
            grads[prefix + name] = grad


def xavier_uniform(n_in, n_out, rng):
    """An (n_in, n_out) matrix drawn from U(-a, a), a = sqrt(6 / (n_in + n_out)), in float64."""
    a = math.sqrt(6.0 / (n_in + n_out))
    return rng.uniform(-a, a, size=(n_in, n_out))


def init_params(cfg, rng, dtype=np.float64):
    """Fresh parameters: Xavier uniform matrices (both tables too), LN gains 1, everything else 0.

    The draws are made in float64 in the canonical order, then cast, so a float32 model is exactly
    the float64 model of the same seed rounded to float32.
    """
    params = {}
    for name, shape in param_shapes(cfg).items():
        if len(shape) == 2:
            params[name] = xavier_uniform(*shape, rng)
        elif name.endswith("_gain"):
            params[name] = np.ones(shape)
        else:
            params[name] = np.zeros(shape)
    return pack(params, dtype)


def block_params(tensors, layer):
    """The tensors of one block under their short names: {"Wq": tensors["block0.Wq"], ...}."""
    return {key: tensors[f"block{layer}.{key}"] for key in BLOCK_KEYS}


def modern_block_params(tensors, layer):
    """block_params of a model with today's options, whose blocks hold other tensors; each absent bias is 0."""
    prefix = f"block{layer}."
    return {**NO_BIAS, **{name[len(prefix):]: t for name, t in tensors.items() if name.startswith(prefix)}}


# ---------------------------------------------------------------------------------------------
# Embeddings: the first step of forward and the last of the backward pass.

def embed_forward(params, ids, start=0):  # (..., T) ints -> (..., T, C); start: position of the first id
    return params["tok_emb"][ids] + params["pos_emb"][start: start + ids.shape[-1]]


def embed_backward(dX0, ids, grads):  # (..., T, C), (..., T) -> adds into grads["tok_emb"], grads["pos_emb"]
    T, C = dX0.shape[-2:]
    # grads["tok_emb"][ids[t]] += dX0[t], once for every t: np.add.at adds a repeated id's rows one by
    # one, where grads["tok_emb"][ids] += dX0 would keep only the last of them
    np.add.at(grads["tok_emb"], ids.reshape(-1), dX0.reshape(-1, C))
    grads["pos_emb"][:T] += dX0.reshape(-1, T, C).sum(axis=0)  # rows from T on keep a gradient of 0


# With rotary positions (RoPE) there is no position table: the token rows alone open the model, and the
# positions enter each attention as turns of its queries and keys (rope_forward).

def token_embed_forward(params, ids):  # (..., T) ints -> (..., T, C)
    return params["tok_emb"][ids]


def token_embed_backward(dX0, ids, grads):  # (..., T, C), (..., T) -> adds into grads["tok_emb"]
    np.add.at(grads["tok_emb"], ids.reshape(-1), dX0.reshape(-1, dX0.shape[-1]))  # a repeated id collects every row


# ---------------------------------------------------------------------------------------------
# Linear layer: y = x W + b, with W stored (n_in, n_out).

def linear_forward(x, W, b):  # (..., n_in), (n_in, n_out), (n_out,) -> (..., n_out)
    return x @ W + b, (x, W)


def linear_backward(dout, cache):  # (..., n_out) -> dx (..., n_in), dW (n_in, n_out), db (n_out,)
    x, W = cache
    n_in, n_out = W.shape
    # W and b act on every row alike, so their gradients sum over all N rows, flattened to (N, ...)
    dW = x.reshape(-1, n_in).T @ dout.reshape(-1, n_out)  # dL/dW_ij = sum over rows of x_i * dout_j
    db = dout.reshape(-1, n_out).sum(axis=0)
    dx = dout @ W.T  # (..., n_out) @ (n_out, n_in) -> (..., n_in)
    return dx, dW, db


# ---------------------------------------------------------------------------------------------
# Layer normalization over the last axis: y = (x - mean) / sqrt(var + eps) * gain + shift.

def layernorm_forward(x, gain, shift, eps):  # (..., C), (C,), (C,) -> (..., C)
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)  # (..., 1), the biased variance
    rstd = 1.0 / np.sqrt(variance + eps)  # (..., 1)
    xhat = centred * rstd
    return xhat * gain + shift, (xhat, rstd, gain)


def layernorm_backward(dout, cache):  # (..., C) -> dx (..., C), dgain (C,), dshift (C,)
    xhat, rstd, gain = cache
    C = xhat.shape[-1]
    dgain = (dout * xhat).reshape(-1, C).sum(axis=0)  # out = xhat * gain + shift, summed over every row
    dshift = dout.reshape(-1, C).sum(axis=0)
    dxhat = dout * gain
    # xhat depends on x directly and through the mean and the variance; the two means below are
    # those two paths: dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
    dx = dxhat - dxhat.mean(axis=-1, keepdims=True)
    dx -= xhat * (dxhat * xhat).mean(axis=-1, keepdims=True)
    dx *= rstd
    return dx, dgain, dshift


# RMS normalization, today's layer norm: y = x / sqrt(mean(x^2) + eps) * gain. No mean is taken away and
# there is no shift: the row is only scaled, by the inverse of its root mean square.

def rmsnorm_forward(x, gain, eps):  # (..., C), (C,) -> (..., C)
    rstd = 1.0 / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)  # (..., 1): 1 / the root mean square
    xhat = x * rstd
    return xhat * gain, (xhat, rstd, gain)


def rmsnorm_backward(dout, cache):  # (..., C) -> dx (..., C), dgain (C,)
    xhat, rstd, gain = cache
    C = xhat.shape[-1]
    dgain = (dout * xhat).reshape(-1, C).sum(axis=0)  # out = xhat * gain, summed over every row
    dxhat = dout * gain
    # xhat depends on x directly and through the mean square: dx = rstd * (dxhat - xhat * mean(dxhat * xhat)),
    # layernorm_backward's without its mean(dxhat), as no mean was taken away
    dx = dxhat - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True)
    dx *= rstd
    return dx, dgain


def norm_forward(x, p, which, cfg):  # (..., C), params -> (..., C): the norm cfg picks, "1", "2" or "f" of p
    if cfg.norm == "rmsnorm":
        return rmsnorm_forward(x, p[f"rms{which}_gain"], cfg.ln_eps)
    return layernorm_forward(x, p[f"ln{which}_gain"], p[f"ln{which}_shift"], cfg.ln_eps)


def norm_backward(dout, cache, which, cfg):  # (..., C) -> dx (..., C), {name: gradient}
    if cfg.norm == "rmsnorm":
        dx, dgain = rmsnorm_backward(dout, cache)
        return dx, {f"rms{which}_gain": dgain}
    dx, dgain, dshift = layernorm_backward(dout, cache)
    return dx, {f"ln{which}_gain": dgain, f"ln{which}_shift": dshift}


# ---------------------------------------------------------------------------------------------
# Causal multi-head self-attention.

def causal_mask(T, S, dtype):  # -> (T, S): the T queries are the last T of S positions
    """0 where query t may see key s (s <= t, counting both in positions), -inf where s is later."""
    return np.triu(np.full((T, S), -np.inf, dtype=dtype), k=1 + S - T)


class AttentionCache(NamedTuple):
    """What attention_backward needs of attention_forward, by name: q, k and v are (B, nh, T, hs), attn
    (B, nh, T, S); k and v are also the keys and values that generation keeps (forward_cached)."""
    projections: tuple  # the caches of the three linear layers that made q, k and v
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    attn: np.ndarray
    out_proj: tuple  # the cache of the output projection Wo


def attention_forward(x, p, num_heads, past=None):  # (B, T, C), block params -> (B, T, C)
    """past: the keys and values of earlier positions, each (B, nh, S - T, hs), when generating
    with a key/value cache; the T rows of x are then the positions that follow them."""
    B, T, C = x.shape
    hs = C // num_heads
    q_rows, q_cache = linear_forward(x, p["Wq"], p["bq"])  # Q = x Wq + bq, (B, T, C)
    k_rows, k_cache = linear_forward(x, p["Wk"], p["bk"])  # K = x Wk + bk
    v_rows, v_cache = linear_forward(x, p["Wv"], p["bv"])  # V = x Wv + bv
    # each row's C columns are nh heads of hs, side by side
    q, k, v = (rows.reshape(B, T, num_heads, hs).transpose(0, 2, 1, 3) for rows in (q_rows, k_rows, v_rows))
    if past is not None:
        k, v = (np.concatenate([earlier, now], axis=2) for earlier, now in zip(past, (k, v)))  # (B, nh, S, hs)
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(hs)  # (B, nh, T, S); S = T without a past
    scores += causal_mask(T, k.shape[2], x.dtype)  # each position sees itself and earlier ones only
    attn = softmax(scores)  # (B, nh, T, S), each row sums to 1
    heads = attn @ v  # (B, nh, T, hs): each position's weighted average of the values it sees
    merged = heads.transpose(0, 2, 1, 3).reshape(B, T, C)  # (B, nh, T, hs) -> (B, T, C): the heads side by side
    out, out_cache = linear_forward(merged, p["Wo"], p["bo"])
    return out, AttentionCache((q_cache, k_cache, v_cache), q, k, v, attn, out_cache)


def attention_backward(dout, cache):  # (B, T, C) -> dx (B, T, C), {"Wq": dWq, "bq": dbq, ...}
    (q_cache, k_cache, v_cache), q, k, v, attn, out_cache = cache
    B, nh, T, hs = q.shape
    assert k.shape[2] == T, "no backward through a forward with a key/value cache (past)"
    dmerged, dWo, dbo = linear_backward(dout, out_cache)
    dheads = dmerged.reshape(B, T, nh, hs).transpose(0, 2, 1, 3)  # (B, T, C) -> (B, nh, T, hs)
    # heads = attn @ v gives dattn = dheads @ v^T, and attn = softmax(scores) gives dscores
    # masked entries have attn = 0, so softmax_backward gives them dscores = 0
    dscores = softmax_backward(dheads @ v.swapaxes(-1, -2), attn)  # (B, nh, T, T)
    dscores /= math.sqrt(hs)  # scores = q k^T / sqrt(hs): q k^T gets dscores / sqrt(hs)
    dv = attn.swapaxes(-1, -2) @ dheads  # heads = attn @ v
    dq = dscores @ k  # scores = q k^T (over sqrt(hs), already in dscores)
    dk = dscores.swapaxes(-1, -2) @ q
    # each head's columns go back to their place in the rows: (B, nh, T, hs) -> (B, T, C)
    dq_rows, dk_rows, dv_rows = (d.transpose(0, 2, 1, 3).reshape(B, T, nh * hs) for d in (dq, dk, dv))
    dx_q, dWq, dbq = linear_backward(dq_rows, q_cache)
    dx_k, dWk, dbk = linear_backward(dk_rows, k_cache)
    dx_v, dWv, dbv = linear_backward(dv_rows, v_cache)
    dx = dx_q + dx_k + dx_v  # x fed all three projections
    return dx, {"Wq": dWq, "bq": dbq, "Wk": dWk, "bk": dbk, "Wv": dWv, "bv": dbv, "Wo": dWo, "bo": dbo}


# Softmax, here and in the loss, does not change when every entry of a row moves by the same
# amount. Moving each row down by its own largest entry makes every exp at most 1, so none overflows.

def softmax(x):  # (..., n) -> (..., n), over the last axis
    exps = np.exp(x - x.max(axis=-1, keepdims=True))
    return exps / exps.sum(axis=-1, keepdims=True)


def softmax_backward(dout, probs):  # (..., n), (..., n) -> (..., n)
    # Jacobian-vector product of p = softmax(a): da_i = p_i * (dp_i - sum_j dp_j p_j)
    return probs * (dout - (dout * probs).sum(axis=-1, keepdims=True))


# ---------------------------------------------------------------------------------------------
# Today's attention: rotary positions, grouped keys and values, QK-norm, heads of any width.

# Rotary positions (RoPE): each head's q and k at position t are turned, pair by pair, before the scores.
# Pair i is (x_i, x_{i+hs/2}) (Hugging Face's rotate_half layout) and turns by the angle t * theta^(-2i/hs),
# so q_t . k_s depends on the positions only through t - s.

def rope_angles(start, T, hs, theta):  # -> (T, hs/2): the angle of pair i at position start + t
    """Example: rope_angles(2, 1, 4, 100.0) -> [[2.0, 0.2]]: pair 0 turns 1 radian a position, pair 1 1/10"""
    positions = np.arange(start, start + T)[:, None]  # (T, 1)
    return positions * theta ** (-np.arange(0, hs, 2) / hs)  # (T, 1) * (hs/2,) -> (T, hs/2)


def rope_forward(x, cos, sin):  # (..., T, hs), (T, hs/2), (T, hs/2) -> (..., T, hs)
    """Pair i of row t turned by the angle a whose cosine and sine are cos[t, i], sin[t, i]."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]  # pair i is (x1[..., i], x2[..., i])
    # a turn by angle a: (x1, x2) -> (x1 cos a - x2 sin a, x1 sin a + x2 cos a)
    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1), (cos, sin)


def rope_backward(dout, cache):  # (..., T, hs) -> dx (..., T, hs)
    cos, sin = cache
    # a turn is orthogonal: its transpose, which carries the gradient back, is the turn by -a (cos a, -sin a)
    return rope_forward(dout, cos, -sin)[0]


# Grouped keys and values (GQA): kvh heads of keys and values for nh heads of queries; key/value head j serves
# the g = nh / kvh query heads j g .. j g + g - 1 (Hugging Face's repeat_kv).

def repeat_kv_forward(kv, groups):  # (B, kvh, S, hs) -> (B, kvh * groups, S, hs): each head `groups` times in a row
    return np.repeat(kv, groups, axis=1)


def repeat_kv_backward(dout, groups):  # (B, nh, S, hs) -> (B, nh / groups, S, hs)
    B, nh, S, hs = dout.shape
    # a head used by `groups` query heads collects the sum of their gradients
    return dout.reshape(B, nh // groups, groups, S, hs).sum(axis=2)


class GroupedAttentionCache(NamedTuple):
    """What gqa_attention_backward needs of gqa_attention_forward, by name: q (B, nh, T, hs), and k and v
    (B, kvh, S, hs), as the scores read them (normed and turned where cfg says so); k and v, kvh heads each, are
    also what generation keeps (forward_cached); attn (B, nh, T, S)."""
    projections: tuple  # the caches of the three linear layers that made q, k and v
    q_norm: tuple  # with qk_norm, the caches of the RMSNorms of q and of k; else None
    k_norm: tuple
    turn: tuple  # with rope, the cosines and sines of the angles of the T positions (rope_forward); else None
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    attn: np.ndarray
    out_proj: tuple  # the cache of the output projection Wo


def gqa_attention_forward(x, p, cfg, past=None):  # (B, T, C), block params -> (B, T, C)
    """attention_forward with today's options (cfg): kv_heads heads of keys and values, heads of head_dim, QK-norm
    and RoPE. past: the keys and values of the earlier positions, each (B, kvh, S - T, hs), in generation."""
    B, T, _ = x.shape
    q_rows, q_cache = linear_forward(x, p["Wq"], p["bq"])  # (B, T, nh hs)
    k_rows, k_cache = linear_forward(x, p["Wk"], p["bk"])  # (B, T, kvh hs)
    v_rows, v_cache = linear_forward(x, p["Wv"], p["bv"])  # (B, T, kvh hs)
    q, k, v = (rows.reshape(B, T, -1, cfg.head_dim).transpose(0, 2, 1, 3) for rows in (q_rows, k_rows, v_rows))
    q_norm = k_norm = turn = None  # (B, nh, T, hs) and (B, kvh, T, hs) above
    if cfg.qk_norm:  # each head's q and k over its hs numbers, one gain each for every head
        q, q_norm = rmsnorm_forward(q, p["rmsq_gain"], cfg.ln_eps)
        k, k_norm = rmsnorm_forward(k, p["rmsk_gain"], cfg.ln_eps)
    if cfg.positions == "rope":  # past holds the positions before these T
        angles = rope_angles(0 if past is None else past[0].shape[2], T, cfg.head_dim, cfg.rope_theta)
        cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)  # (T, hs/2) each
        (q, turn), (k, _) = rope_forward(q, cos, sin), rope_forward(k, cos, sin)
    if past is not None:
        k, v = (np.concatenate([earlier, now], axis=2) for earlier, now in zip(past, (k, v)))  # (B, kvh, S, hs)
    groups = cfg.num_heads // cfg.kv_heads
    scores = q @ repeat_kv_forward(k, groups).swapaxes(-1, -2) / math.sqrt(cfg.head_dim)  # (B, nh, T, S)
    scores += causal_mask(T, k.shape[2], x.dtype)  # each position sees itself and earlier ones only
    attn = softmax(scores)  # (B, nh, T, S)
    heads = attn @ repeat_kv_forward(v, groups)  # (B, nh, T, hs)
    merged = heads.transpose(0, 2, 1, 3).reshape(B, T, -1)  # (B, nh, T, hs) -> (B, T, nh hs)
    out, out_cache = linear_forward(merged, p["Wo"], p["bo"])
    return out, GroupedAttentionCache((q_cache, k_cache, v_cache), q_norm, k_norm, turn, q, k, v, attn, out_cache)


def gqa_attention_backward(dout, cache):  # (B, T, C) -> dx (B, T, C), {"Wq": dWq, "bq": dbq, ...}
    (q_cache, k_cache, v_cache), q_norm, k_norm, turn, q, k, v, attn, out_cache = cache
    B, nh, T, hs = q.shape
    groups = nh // k.shape[1]
    assert k.shape[2] == T, "no backward through a forward with a key/value cache (past)"
    dmerged, dWo, dbo = linear_backward(dout, out_cache)
    dheads = dmerged.reshape(B, T, nh, hs).transpose(0, 2, 1, 3)  # (B, T, nh hs) -> (B, nh, T, hs)
    # as in attention_backward, with each query head reading its group's key and value head
    dscores = softmax_backward(dheads @ repeat_kv_forward(v, groups).swapaxes(-1, -2), attn) / math.sqrt(hs)
    dq = dscores @ repeat_kv_forward(k, groups)
    dk = repeat_kv_backward(dscores.swapaxes(-1, -2) @ q, groups)  # (B, kvh, T, hs)
    dv = repeat_kv_backward(attn.swapaxes(-1, -2) @ dheads, groups)
    grads = {"Wo": dWo, "bo": dbo}
    if turn is not None:  # the turns came last in the forward: first back
        dq, dk = rope_backward(dq, turn), rope_backward(dk, turn)
    if q_norm is not None:
        dq, grads["rmsq_gain"] = rmsnorm_backward(dq, q_norm)
        dk, grads["rmsk_gain"] = rmsnorm_backward(dk, k_norm)
    dq_rows, dk_rows, dv_rows = (d.transpose(0, 2, 1, 3).reshape(B, T, -1) for d in (dq, dk, dv))
    dx_q, grads["Wq"], grads["bq"] = linear_backward(dq_rows, q_cache)
    dx_k, grads["Wk"], grads["bk"] = linear_backward(dk_rows, k_cache)
    dx_v, grads["Wv"], grads["bv"] = linear_backward(dv_rows, v_cache)
    return dx_q + dx_k + dx_v, grads  # x fed all three projections


# ---------------------------------------------------------------------------------------------
# GELU, tanh approximation: y = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).

GELU_SCALE = math.sqrt(2.0 / math.pi)
GELU_CUBIC = 0.044715


def gelu_forward(x):  # (...) -> (...)
    tanh_u = np.tanh(GELU_SCALE * (x + GELU_CUBIC * x * x * x))
    return 0.5 * x * (1.0 + tanh_u), (x, tanh_u)


def gelu_backward(dout, cache):  # (...) -> (...)
    x, tanh_u = cache
    # dy/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx,  du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
    du_dx = GELU_SCALE * (1.0 + 3.0 * GELU_CUBIC * x * x)
    return dout * (0.5 * (1.0 + tanh_u) + 0.5 * x * (1.0 - tanh_u * tanh_u) * du_dx)


# ---------------------------------------------------------------------------------------------
# The MLP: GELU(x W1 + b1) W2 + b2.

def mlp_forward(x, p):  # (B, T, C), block params -> (B, T, C)
    hidden, fc_cache = linear_forward(x, p["W1"], p["b1"])  # (B, T, F)
    activated, gelu_cache = gelu_forward(hidden)
    out, proj_cache = linear_forward(activated, p["W2"], p["b2"])  # (B, T, C)
    return out, (fc_cache, gelu_cache, proj_cache)


def mlp_backward(dout, cache):  # (B, T, C) -> dx (B, T, C), {"W1": dW1, "b1": db1, "W2": dW2, "b2": db2}
    fc_cache, gelu_cache, proj_cache = cache
    dactivated, dW2, db2 = linear_backward(dout, proj_cache)
    dhidden = gelu_backward(dactivated, gelu_cache)
    dx, dW1, db1 = linear_backward(dhidden, fc_cache)
    return dx, {"W1": dW1, "b1": db1, "W2": dW2, "b2": db2}


# Today's MLP, SwiGLU: (silu(x W_gate + b_gate) * (x W_up + b_up)) W_down + b_down, silu(z) = z sigma(z).
# The gate decides, number by number, how much of the up projection passes.

def swiglu_forward(x, p):  # (B, T, C), block params -> (B, T, C)
    gate, gate_cache = linear_forward(x, p["W_gate"], p["b_gate"])  # (B, T, F)
    up, up_cache = linear_forward(x, p["W_up"], p["b_up"])  # (B, T, F)
    sigmoid = 0.5 * (1.0 + np.tanh(0.5 * gate))  # sigma(z) = 1 / (1 + exp(-z)), in a form whose exp cannot overflow
    hidden = gate * sigmoid * up  # silu(gate) * up
    out, down_cache = linear_forward(hidden, p["W_down"], p["b_down"])  # (B, T, C)
    return out, (gate_cache, up_cache, down_cache, gate, sigmoid, up)


def swiglu_backward(dout, cache):  # (B, T, C) -> dx (B, T, C), {"W_gate": dW_gate, "b_gate": db_gate, ...}
    gate_cache, up_cache, down_cache, gate, sigmoid, up = cache
    dhidden, dW_down, db_down = linear_backward(dout, down_cache)
    dup = dhidden * gate * sigmoid  # hidden = silu(gate) * up
    dgate = dhidden * up * sigmoid * (1.0 + gate * (1.0 - sigmoid))  # silu'(z) = sigma(z) (1 + z (1 - sigma(z)))
    dx_gate, dW_gate, db_gate = linear_backward(dgate, gate_cache)
    dx_up, dW_up, db_up = linear_backward(dup, up_cache)
    return dx_gate + dx_up, {"W_gate": dW_gate, "b_gate": db_gate, "W_up": dW_up, "b_up": db_up,
                             "W_down": dW_down, "b_down": db_down}  # x fed both the gate and the up projection


# ---------------------------------------------------------------------------------------------
# One pre-LN block: X = X + attention(LN1(X)); X = X + MLP(LN2(X)).

class BlockCache(NamedTuple):
    """The caches of a block's four layers, by name."""
    ln1: tuple
    attention: AttentionCache
    ln2: tuple
    mlp: tuple


def block_forward(x, p, cfg, past=None):  # (B, T, C), block params -> (B, T, C)
    h1, ln1_cache = layernorm_forward(x, p["ln1_gain"], p["ln1_shift"], cfg.ln_eps)
    attended, attn_cache = attention_forward(h1, p, cfg.num_heads, past)
    x = x + attended
    h2, ln2_cache = layernorm_forward(x, p["ln2_gain"], p["ln2_shift"], cfg.ln_eps)
    fed, mlp_cache = mlp_forward(h2, p)
    return x + fed, BlockCache(ln1_cache, attn_cache, ln2_cache, mlp_cache)


def block_backward(dout, cache):  # (B, T, C) -> dx (B, T, C), {short name: gradient}
    ln1_cache, attn_cache, ln2_cache, mlp_cache = cache
    # out = x_mid + MLP(LN2(x_mid)): the residual hands dout to x_mid unchanged, the branch adds to it
    dh2, grads = mlp_backward(dout, mlp_cache)
    dx_mid, grads["ln2_gain"], grads["ln2_shift"] = layernorm_backward(dh2, ln2_cache)
    dx_mid += dout
    # x_mid = x + attention(LN1(x)): the same again
    dh1, attn_grads = attention_backward(dx_mid, attn_cache)
    grads.update(attn_grads)
    dx, grads["ln1_gain"], grads["ln1_shift"] = layernorm_backward(dh1, ln1_cache)
    dx += dx_mid
    return dx, grads


# A block of today's family picks its pieces as cfg says: the norm (LayerNorm or RMSNorm), today's attention
# (gqa_attention_forward, with RoPE and QK-norm where on) and the MLP (GELU or SwiGLU); each bias that is
# off is 0 (modern_block_params).

class ModernBlockCache(NamedTuple):
    """The caches of a modern block's four layers, by name, and the settings that picked the layers."""
    norm1: tuple
    attention: GroupedAttentionCache
    norm2: tuple
    mlp: tuple
    cfg: ModelConfig


def modern_block_forward(x, p, cfg, past=None):  # (B, T, C), block params -> (B, T, C)
    h1, norm1_cache = norm_forward(x, p, "1", cfg)
    attended, attn_cache = gqa_attention_forward(h1, p, cfg, past)
    x = x + attended
    h2, norm2_cache = norm_forward(x, p, "2", cfg)
    fed, mlp_cache = mlp_forward(h2, p) if cfg.mlp == "gelu" else swiglu_forward(h2, p)
    return x + fed, ModernBlockCache(norm1_cache, attn_cache, norm2_cache, mlp_cache, cfg)


def modern_block_backward(dout, cache):  # (B, T, C) -> dx (B, T, C), {short name: gradient}
    norm1_cache, attn_cache, norm2_cache, mlp_cache, cfg = cache
    dh2, grads = mlp_backward(dout, mlp_cache) if cfg.mlp == "gelu" else swiglu_backward(dout, mlp_cache)
    dx_mid, norm2_grads = norm_backward(dh2, norm2_cache, "2", cfg)
    dx_mid += dout  # the residual, as in block_backward
    dh1, attn_grads = gqa_attention_backward(dx_mid, attn_cache)
    dx, norm1_grads = norm_backward(dh1, norm1_cache, "1", cfg)
    dx += dx_mid
    return dx, kept({**grads, **norm2_grads, **attn_grads, **norm1_grads}, cfg)


def kept(grads, cfg):  # {name: gradient} of the model's own tensors: without biases, those of the zeros let go
    return {name: grad for name, grad in grads.items() if cfg.bias or name not in NO_BIAS}


# ---------------------------------------------------------------------------------------------
# Softmax and cross-entropy, fused: the gradient on the logits is (probs - onehot) / N.

def cross_entropy_forward(logits, targets):  # (N, V), (N,) -> mean loss (scalar)
    shifted = logits - logits.max(axis=-1, keepdims=True)  # each row's largest becomes 0: no exp overflows
    exps = np.exp(shifted)
    sum_exp = exps.sum(axis=-1, keepdims=True)  # (N, 1)
    # -log softmax(logits)[target] = log(sum_j exp(shifted_j)) - shifted[target]
    rows = np.arange(len(targets))
    loss = np.mean(np.log(sum_exp[:, 0]) - shifted[rows, targets])
    return float(loss), (exps / sum_exp, targets)


def cross_entropy_backward(cache):  # -> dlogits (N, V)
    probs, targets = cache
    N = len(targets)
    # dlogits = (probs - onehot) / N: the loss is a mean over N positions
    dlogits = probs / N
    dlogits[np.arange(N), targets] -= 1.0 / N
    return dlogits


# ---------------------------------------------------------------------------------------------
# The whole model.

def check_ids(ids, cfg, what="ids", start=0):
    """Raise ValueError, saying what to change, unless ids is a (T,) or (B, T) array of valid ids
    that fits the position table from position `start` on."""
    if ids.ndim not in (1, 2):
        raise ValueError(f"{what} must have shape (T,) or (B, T), got {ids.shape}")
    if ids.shape[-1] == 0 or ids.size == 0:
        raise ValueError(f"{what} is empty: give at least one token")
    if not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"{what} must be integers, got dtype {ids.dtype}")
    if start + ids.shape[-1] > cfg.context_len:
        raise ValueError(f"cannot forward a sequence of length {start + ids.shape[-1]}: context_len is only "
                         f"{cfg.context_len}; use the last {cfg.context_len} tokens or a larger context_len")
    low, high = ids.min(), ids.max()
    if low < 0 or high >= cfg.vocab_size:
        bad = low if low < 0 else high
        raise ValueError(f"{what} holds {bad}, outside the vocabulary [0, {cfg.vocab_size})")


def head_forward(Xf, params, cfg):  # (..., C) -> logits (..., V): Xf W_out + b_out, or (tied_head) Xf tok_emb^T
    if cfg.tied_head:  # the token table is the head too: the logit of token v is Xf . tok_emb[v]
        return linear_forward(Xf, params["tok_emb"].T, 0.0)
    return linear_forward(Xf, params["W_out"], params["b_out"])


def head_backward(dlogits, cache, cfg):  # (..., V) -> dXf (..., C), {name: gradient}
    dXf, dW, db = linear_backward(dlogits, cache)
    if cfg.tied_head:  # written first in the backward: the embedding's backward adds its rows into it after
        return dXf, {"tok_emb": dW.T}
    return dXf, {"W_out": dW, "b_out": db}


def forward(params, ids, cfg):  # (T,) or (B, T) ints -> logits (T, V) or (B, T, V), cache
    ids = np.asarray(ids)
    check_ids(ids, cfg)
    batch = ids.reshape(-1, ids.shape[-1])  # (T,) -> (1, T): one code path for both
    if cfg.family == "modern":  # one of today's options: the same steps, with the pieces cfg picks
        logits, cache = modern_forward(params, batch, cfg)
        return logits.reshape(*ids.shape, cfg.vocab_size), cache
    X = embed_forward(params, batch)  # (B, T, C)
    block_caches = []
    for layer in range(cfg.num_layers):
        X, block_cache = block_forward(X, block_params(params, layer), cfg)
        block_caches.append(block_cache)
    Xf, lnf_cache = layernorm_forward(X, params["lnf_gain"], params["lnf_shift"], cfg.ln_eps)
    logits, head_cache = linear_forward(Xf, params["W_out"], params["b_out"])  # (B, T, V)
    cache = (batch, block_caches, lnf_cache, head_cache)
    return logits.reshape(*ids.shape, cfg.vocab_size), cache


def modern_forward(params, batch, cfg):  # (B, T) ints -> logits (B, T, V), cache: forward with today's pieces
    params = {**NO_BIAS, **params}  # a bias that is off is 0
    X = embed_forward(params, batch) if cfg.positions == "learned" else token_embed_forward(params, batch)
    block_caches = []
    for layer in range(cfg.num_layers):
        X, block_cache = modern_block_forward(X, modern_block_params(params, layer), cfg)
        block_caches.append(block_cache)
    Xf, norm_cache = norm_forward(X, params, "f", cfg)  # (B, T, C)
    logits, head_cache = head_forward(Xf, params, cfg)  # (B, T, V)
    return logits, (batch, block_caches, norm_cache, head_cache)


def forward_cached(params, ids, cfg, past=None):  # (T,) ints -> logits of the last position (V,), present
    """The forward of generation, with a key/value cache. past: each block's keys and values, a pair of
    (1, nh, S, hs) arrays, for the S positions before ids (None: ids start the text); present: the same
    pairs with the positions of ids added, to hand to the next call as its past.

    Only the keys and values are kept: each block's backward cache is let go as soon as they are taken
    from it, so a long prompt costs one block's cache at a time, and only the last position gets logits.
    """
    ids = np.asarray(ids)
    start = 0 if past is None else past[0][0].shape[2]  # positions already in the key/value cache
    check_ids(ids[None], cfg, start=start)
    if cfg.family == "modern":  # one of today's options: the same steps, with the pieces cfg picks
        return modern_forward_cached(params, ids, cfg, past, start)
    X = embed_forward(params, ids[None], start)  # (1, T, C)
    present = []
    for layer in range(cfg.num_layers):
        X, block_cache = block_forward(X, block_params(params, layer), cfg, None if past is None else past[layer])
        present.append((block_cache.attention.k, block_cache.attention.v))  # (1, nh, S + T, hs) each
    Xf, _ = layernorm_forward(X[0, -1], params["lnf_gain"], params["lnf_shift"], cfg.ln_eps)  # (C,)
    logits, _ = linear_forward(Xf, params["W_out"], params["b_out"])  # (V,)
    return logits, present


def modern_forward_cached(params, ids, cfg, past, start):  # (T,) ints -> logits of the last position (V,), present
    """forward_cached with today's pieces: past and present hold kv_heads heads of keys and values, turned by RoPE
    at their own positions (start: the positions already in past)."""
    params = {**NO_BIAS, **params}
    batch = ids[None]  # (1, T)
    X = embed_forward(params, batch, start) if cfg.positions == "learned" else token_embed_forward(params, batch)
    present = []
    for layer in range(cfg.num_layers):
        X, block_cache = modern_block_forward(X, modern_block_params(params, layer), cfg,
                                              None if past is None else past[layer])
        present.append((block_cache.attention.k, block_cache.attention.v))  # (1, kvh, S + T, hs) each
    Xf, _ = norm_forward(X[0, -1], params, "f", cfg)  # (C,)
    logits, _ = head_forward(Xf, params, cfg)  # (V,)
    return logits, present


def modern_backward(dlogits, cache, grads, cfg):  # (B, T, V), modern_forward's cache -> each gradient into grads
    """The backward of loss_and_grads with today's pieces: modern_forward's steps in reverse."""
    batch, block_caches, norm_cache, head_cache = cache
    dXf, head_grads = head_backward(dlogits, head_cache, cfg)
    dX, norm_grads = norm_backward(dXf, norm_cache, "f", cfg)
    write_grads(grads, kept({**head_grads, **norm_grads}, cfg))
    for layer in reversed(range(cfg.num_layers)):
        dX, block_grads = modern_block_backward(dX, block_caches.pop())  # pop: let go once done, as loss_and_grads
        write_grads(grads, block_grads, prefix=f"block{layer}.")
    (embed_backward if cfg.positions == "learned" else token_embed_backward)(dX, batch, grads)


def loss_and_grads(params, ids, targets, cfg):  # (T,) or (B, T) ids and targets -> loss, grads
    """The mean cross-entropy over every position, and its gradient for every parameter.

    grads has the keys, order, shapes and dtype of params, packed in one buffer (zeros_like).
    """
    ids, targets = np.asarray(ids), np.asarray(targets)
    if targets.shape != ids.shape:
        raise ValueError(f"targets must have the shape of ids, got {targets.shape} and {ids.shape}")
    check_ids(targets, cfg, what="targets")
    logits, (batch, block_caches, lnf_cache, head_cache) = forward(params, ids, cfg)
    loss, loss_cache = cross_entropy_forward(logits.reshape(-1, cfg.vocab_size), targets.reshape(-1))
    del logits  # (B, T, V): its memory serves the backward (this function's memory: docs/engineering/performance.md)

    grads = zeros_like(params)  # one buffer of zeros, laid out as params: each gradient is written in as it comes
    dlogits = cross_entropy_backward(loss_cache).reshape(*batch.shape, cfg.vocab_size)  # (B, T, V)
    del loss_cache  # the probabilities, (N, V): dlogits is all the backward needs of them
    if cfg.family == "modern":  # one of today's options: the same steps, with the pieces cfg picks
        modern_backward(dlogits, (batch, block_caches, lnf_cache, head_cache), grads, cfg)
        return loss, grads
    dXf, dW_out, db_out = linear_backward(dlogits, head_cache)
    dX, dgain, dshift = layernorm_backward(dXf, lnf_cache)
    write_grads(grads, {"W_out": dW_out, "b_out": db_out, "lnf_gain": dgain, "lnf_shift": dshift})
    for layer in reversed(range(cfg.num_layers)):
        # pop: each block's cache is let go once its backward is done, and its memory serves the next
        dX, block_grads = block_backward(dX, block_caches.pop())
        write_grads(grads, block_grads, prefix=f"block{layer}.")
    embed_backward(dX, batch, grads)
    return loss, grads


# ---------------------------------------------------------------------------------------------
# What turns gradients into better parameters: the learning rate's schedule, clipping, AdamW. The
# parameters and gradients are packed dicts (pack, above): every tensor is a view into one flat
# buffer, so each update below is a handful of operations on one long vector.

def lr_schedule(step, total_steps, lr_max, lr_min, warmup_steps):
    """The learning rate of step `step` (1 .. total_steps): linear warmup, then cosine decay.

    Warmup: lr = lr_max * step / warmup_steps, a line from 0 that reaches lr_max at warmup_steps.
    Then lr = lr_min + (lr_max - lr_min) * (1 + cos(pi * progress)) / 2, where progress runs from
    0 after warmup to 1 at the last step, which therefore gets exactly lr_min.
    Example: lr_schedule(25, 1000, 1e-3, 1e-4, 50) -> 5e-4
    """
    warmup_steps = min(warmup_steps, total_steps - 1)  # a run shorter than warmup still ends at lr_min
    if step <= warmup_steps:
        return lr_max * step / warmup_steps
    progress = (step - warmup_steps) / (total_steps - warmup_steps)
    return lr_min + (lr_max - lr_min) * 0.5 * (1.0 + math.cos(math.pi * progress))


def clip_grad_norm(grads, max_norm):
    """Scale all gradients in place so their global L2 norm is at most max_norm; return the norm before.

    Example: grads with entries [3, 4] (norm 5), max_norm 1 -> entries [0.6, 0.8], returns 5.0
    """
    flat = flat_buffer(grads)
    norm = math.sqrt(float(np.dot(flat, flat)))
    if norm > max_norm:
        flat *= max_norm / norm
    return norm


def decay_group(params):
    """The tensors weight decay applies to: every matrix, both embedding tables included; no gain, no bias."""
    return [tensor for tensor in params.values() if tensor.ndim == 2]


# the update runs over CHUNK numbers at a time, so each line's temporaries stay in the CPU's cache: 0.42 s an
# update against 1.35 s at GPT-2 124M, and 3.1 GB less at the peak (docs/engineering/performance.md)
CHUNK = 2 ** 15


class Adam:
    """Adam with decoupled weight decay (AdamW), over one flat vector of parameters.

    m = beta1 m + (1 - beta1) g             running mean of the gradient
    v = beta2 v + (1 - beta2) g^2           running mean of its square
    p = p - lr * weight_decay * p           on matrices only (both embedding tables included),
                                            whatever the gradient: this is what "decoupled" means
    p = p - lr * m_hat / (sqrt(v_hat) + eps), with m_hat = m / (1 - beta1^t), v_hat = v / (1 - beta2^t)
    """

    def __init__(self, params, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01):
        self.beta1, self.beta2, self.eps, self.weight_decay = beta1, beta2, eps, weight_decay
        flat = flat_buffer(params)
        self.m = np.zeros_like(flat)
        self.v = np.zeros_like(flat)
        self.t = 0  # steps taken; the bias corrections need it

    def step(self, params, grads, lr):
        """One update of params, in place, from grads at learning rate lr."""
        self.t += 1
        for matrix in decay_group(params):  # views of the parameters' buffer
            matrix -= lr * self.weight_decay * matrix  # decoupled: on matrices only, whatever the gradient
        bias1, bias2 = 1.0 - self.beta1 ** self.t, 1.0 - self.beta2 ** self.t  # m and v start at 0
        all_p, all_g = flat_buffer(params), flat_buffer(grads)
        for start in range(0, all_p.size, CHUNK):
            # views: each line below changes the parameters, m and v in place
            p, g, m, v = (flat[start: start + CHUNK] for flat in (all_p, all_g, self.m, self.v))
            m *= self.beta1
            m += (1.0 - self.beta1) * g
            v *= self.beta2
            v += (1.0 - self.beta2) * g * g
            m_hat, v_hat = m / bias1, v / bias2
            p -= lr * m_hat / (np.sqrt(v_hat) + self.eps)

    def state(self):
        """What a resumed run needs: the two moments and the step count."""
        return {"m": self.m, "v": self.v, "t": self.t}

    def load_state(self, state):
        """Take up the moments and step count saved by state(); shapes and dtype must match."""
        for name in ("m", "v"):
            if state[name].shape != self.m.shape:
                raise ValueError(f"the optimizer state's {name} holds {state[name].size} numbers, the model has "
                                 f"{self.m.size}: it was saved for another model")
        self.m[...] = state["m"]
        self.v[...] = state["v"]
        self.t = int(state["t"])


# ---------------------------------------------------------------------------------------------
# Drawing the next token: each one is drawn from the last position's logits, filtered in this order:
#     1. temperature: divide the logits by it (0 means greedy: take the most likely token)
#     2. top_k: keep the k most likely tokens (0 means off)
#     3. top_p: of what is left, keep the smallest set of most likely tokens whose probability
#        reaches top_p (nucleus sampling)
#     4. renormalise what is kept and draw one token with a seeded np.random.Generator
# Ties in the ordering go to the smaller token id, so a filter never depends on sort luck.

ROUNDING = 1e-9  # top-p counts a set as reaching top_p when it falls short by less than this


@dataclass(frozen=True)
class Sampling:
    """How the next token is drawn; a value that cannot work is refused (ValueError), which the scripts say in
    one line."""

    temperature: float  # 0 means greedy
    top_k: int  # 0 means off
    top_p: float  # 1 means off

    def __post_init__(self):
        if not 0 <= self.temperature < math.inf:
            raise ValueError(f"temperature must be a finite number, 0 (greedy) or more, got {self.temperature}")
        if isinstance(self.top_k, bool) or not (isinstance(self.top_k, (int, np.integer)) and self.top_k >= 0):
            raise ValueError(f"top_k must be a whole number, 0 (off) or more, got {self.top_k}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")


def filtered_probs(logits, sampling):  # (V,) -> (V,) probabilities, zero outside what is kept
    """The distribution a token is drawn from: softmax(logits / temperature), then top-k, then top-p.

    Example: logits [2, 1, 0, -1], temperature 1, top_k 2 -> [0.731, 0.269, 0, 0]
    """
    logits = np.asarray(logits, dtype=np.float64)
    shifted = logits - logits.max()  # <= 0, so dividing by a tiny temperature gives -inf at worst, never nan
    if sampling.temperature == 0:
        probs = (np.arange(len(logits)) == np.argmax(logits)).astype(np.float64)  # the first of equal maxima
    else:
        with np.errstate(over="ignore"):  # -inf, for a token far below the maximum, is the right answer
            probs = np.exp(shifted / sampling.temperature)
        probs /= probs.sum()
    order = np.argsort(-probs, kind="stable")  # most likely first; ties to the smaller id
    keep = len(probs)
    if sampling.top_k:
        keep = min(keep, sampling.top_k)
    if sampling.top_p < 1:
        kept = probs[order[:keep]]
        reach = np.cumsum(kept) / kept.sum()  # probabilities renormalised after top-k
        # the first prefix reaching top_p; a sum of rounded probabilities such as 0.7 + 0.1 can come
        # out a hair under 0.8, which would otherwise keep one token too many
        keep = int(np.searchsorted(reach, sampling.top_p - ROUNDING)) + 1
    filtered = np.zeros_like(probs)
    filtered[order[:keep]] = probs[order[:keep]]
    return filtered / filtered.sum()


def sample_next(logits, sampling, rng):  # (V,) -> int
    """One token id drawn from a row of logits, as this section's opening says."""
    if sampling.temperature == 0:  # greedy: the id filtered_probs would keep, without sorting V (performance.md)
        return int(np.argmax(logits))
    cumulative = np.cumsum(filtered_probs(logits, sampling))
    # the token whose slice of [0, total) holds a uniform draw; tokens with probability 0 have no slice
    return int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))


def generate(params, cfg, prompt_ids, max_new_tokens, window, sampling, rng, stop_id=None, use_cache=True,
             first_allowed=None):
    """Yield up to max_new_tokens new ids, each as soon as it is drawn; stop after stop_id.

    The model reads only the last `window` ids, so a prompt of any length works. With use_cache,
    while the window still grows each new id costs the work of one position: the keys and values
    of the earlier ones are kept (a key/value cache). Once the window is full it slides, every
    id moves to a new position, and the model reads the whole window again. first_allowed, a (V,)
    array of booleans, limits the first draw to the ids where it is True (heal_prompt).
    """
    if len(prompt_ids) == 0:
        raise ValueError("the prompt is empty: give at least one character")
    assert 0 < window <= cfg.context_len, f"the window must be in 1..{cfg.context_len} (context_len), got {window}"
    context = list(prompt_ids)[-window:]
    logits, past = forward_cached(params, context, cfg)
    for step in range(max_new_tokens):
        scores = logits
        if step == 0 and first_allowed is not None:
            scores = np.where(first_allowed, scores, -np.inf)  # probability 0 for every other id
        next_id = sample_next(scores, sampling, rng)
        yield next_id
        if next_id == stop_id or step == max_new_tokens - 1:
            return
        context.append(next_id)
        if use_cache and len(context) <= window:
            logits, past = forward_cached(params, [next_id], cfg, past)
        else:
            context = context[-window:]
            logits, past = forward_cached(params, context, cfg)
