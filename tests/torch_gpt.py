"""The same GPT written with PyTorch's own layers, for checking and for timing against.

Not a test module and not part of the library: tests/test_torch_parity.py compares its autograd
gradients with ours, and benchmarks/bench_train.py times it. It reads the same named parameters
(as torch tensors) and uses PyTorch's fused layers where they exist. Today's options (ModelConfig's
norm, positions, mlp, kv_heads, qk_norm, bias, tied_head, head_dim) are PyTorch's own ops too:
F.rms_norm, F.silu, scaled_dot_product_attention's enable_gqa; the rotation as Hugging Face's
rotate_half writes it.
"""

import torch
import torch.nn.functional as F


def to_torch(params, requires_grad=True):
    """Our parameter dict as torch leaf tensors, same names, same order, same dtype, copied."""
    return {name: torch.tensor(value, requires_grad=requires_grad) for name, value in params.items()}


def forward(tparams, ids, cfg):  # (B, T) long tensor -> logits (B, T, V)
    if cfg.family == "modern":  # one of today's options
        return modern_forward(tparams, ids, cfg)
    B, T = ids.shape
    C, nh = cfg.emb_dim, cfg.num_heads
    x = tparams["tok_emb"][ids] + tparams["pos_emb"][:T]
    for layer in range(cfg.num_layers):
        p = {key.split(".", 1)[1]: t for key, t in tparams.items() if key.startswith(f"block{layer}.")}
        h = F.layer_norm(x, (C,), p["ln1_gain"], p["ln1_shift"], cfg.ln_eps)
        W_qkv = torch.cat([p["Wq"], p["Wk"], p["Wv"]], dim=1)
        b_qkv = torch.cat([p["bq"], p["bk"], p["bv"]])
        q, k, v = (h @ W_qkv + b_qkv).view(B, T, 3, nh, C // nh).permute(2, 0, 3, 1, 4)
        heads = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
        x = x + heads.transpose(1, 2).reshape(B, T, C) @ p["Wo"] + p["bo"]
        h = F.layer_norm(x, (C,), p["ln2_gain"], p["ln2_shift"], cfg.ln_eps)
        x = x + F.gelu(h @ p["W1"] + p["b1"], approximate="tanh") @ p["W2"] + p["b2"]
    x = F.layer_norm(x, (C,), tparams["lnf_gain"], tparams["lnf_shift"], cfg.ln_eps)
    return x @ tparams["W_out"] + tparams["b_out"]


def modern_forward(tparams, ids, cfg):  # (B, T) long tensor -> logits (B, T, V): forward with today's options
    B, T = ids.shape
    nh, kvh, hs = cfg.num_heads, cfg.kv_heads, cfg.head_dim
    x = tparams["tok_emb"][ids]
    if cfg.positions == "learned":
        x = x + tparams["pos_emb"][:T]
    for layer in range(cfg.num_layers):
        p = {key.split(".", 1)[1]: t for key, t in tparams.items() if key.startswith(f"block{layer}.")}
        h = norm(x, p, "1", cfg)
        W_qkv = torch.cat([p["Wq"], p["Wk"], p["Wv"]], dim=1)
        qkv = h @ W_qkv + torch.cat([p["bq"], p["bk"], p["bv"]]) if cfg.bias else h @ W_qkv
        q, k, v = qkv.split([nh * hs, kvh * hs, kvh * hs], dim=-1)
        q, k, v = (t.view(B, T, -1, hs).transpose(1, 2) for t in (q, k, v))  # (B, heads, T, hs)
        if cfg.qk_norm:
            q = F.rms_norm(q, (hs,), p["rmsq_gain"], cfg.ln_eps)
            k = F.rms_norm(k, (hs,), p["rmsk_gain"], cfg.ln_eps)
        if cfg.positions == "rope":
            q, k = rotated(q, cfg.rope_theta), rotated(k, cfg.rope_theta)
        heads = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=kvh < nh)  # (B, nh, T, hs)
        x = x + linear(heads.transpose(1, 2).reshape(B, T, nh * hs), p["Wo"], p.get("bo"))
        h = norm(x, p, "2", cfg)
        if cfg.mlp == "swiglu":
            x = x + linear(F.silu(linear(h, p["W_gate"], p.get("b_gate"))) * linear(h, p["W_up"], p.get("b_up")),
                           p["W_down"], p.get("b_down"))
        else:
            x = x + linear(F.gelu(linear(h, p["W1"], p.get("b1")), approximate="tanh"), p["W2"], p.get("b2"))
    x = norm(x, tparams, "f", cfg)
    if cfg.tied_head:
        return x @ tparams["tok_emb"].T
    return linear(x, tparams["W_out"], tparams.get("b_out"))


def linear(x, W, b):  # b None: a model without biases
    return x @ W if b is None else x @ W + b


def norm(x, p, which, cfg):  # the norm cfg picks, "1", "2" or "f" of p
    C = x.shape[-1]
    if cfg.norm == "rmsnorm":
        return F.rms_norm(x, (C,), p[f"rms{which}_gain"], cfg.ln_eps)
    return F.layer_norm(x, (C,), p[f"ln{which}_gain"], p.get(f"ln{which}_shift"), cfg.ln_eps)


def rotated(x, theta):  # (B, heads, T, hs) -> the same, turned by RoPE as Hugging Face's Llama does it
    T, hs = x.shape[-2:]
    inv_freq = theta ** (-torch.arange(0, hs, 2, dtype=x.dtype) / hs)
    angles = torch.arange(T, dtype=x.dtype)[:, None] * inv_freq  # (T, hs/2)
    cos, sin = torch.cat([angles.cos()] * 2, dim=-1), torch.cat([angles.sin()] * 2, dim=-1)  # (T, hs)
    rotate_half = torch.cat([-x[..., hs // 2:], x[..., : hs // 2]], dim=-1)
    return x * cos + rotate_half * sin


def loss_and_grads(tparams, ids, targets, cfg):
    """Mean cross-entropy and autograd's gradient of every parameter, as numpy arrays."""
    for t in tparams.values():
        t.grad = None
    logits = forward(tparams, ids, cfg)
    loss = F.cross_entropy(logits.reshape(-1, cfg.vocab_size), targets.reshape(-1))
    loss.backward()
    return loss.item(), {name: t.grad.numpy() for name, t in tparams.items()}


def adamw(tparams, lr, betas, eps, weight_decay):
    """torch.optim.AdamW with our groups: decay on every matrix (both tables too), none elsewhere."""
    matrices = [t for t in tparams.values() if t.ndim == 2]
    vectors = [t for t in tparams.values() if t.ndim != 2]
    groups = [{"params": matrices, "weight_decay": weight_decay}, {"params": vectors, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps)
