"""The same GPT written with PyTorch's own layers, for checking and for timing against.

Not a test module and not part of the library: tests/test_torch_parity.py compares its autograd
gradients with ours, and benchmarks/bench_train.py times it. It reads the same named parameters
(as torch tensors) and uses PyTorch's fused layers where they exist.
"""

import torch
import torch.nn.functional as F


def to_torch(params, requires_grad=True):
    """Our parameter dict as torch leaf tensors, same names, same order, same dtype, copied."""
    return {name: torch.tensor(value, requires_grad=requires_grad) for name, value in params.items()}


def forward(tparams, ids, cfg):  # (B, T) long tensor -> logits (B, T, V)
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
