"""Load a numpy-gpt checkpoint into a PyTorch module of the same architecture: the way out to GPUs,
torch.compile and the rest of the ecosystem.

Standalone: it reads model.json and model.npz with json and NumPy and needs torch, not this project.
    python examples/to_pytorch.py [a run's folder]      (default: the run in checkpoints/runs/ that saved last)
"""

import json
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    """Pre-LN: x = x + attention(ln1(x)); x = x + mlp(ln2(x))."""

    def __init__(self, emb_dim, num_heads, ff_dim, ln_eps):
        super().__init__()
        self.num_heads = num_heads
        self.ln1 = nn.LayerNorm(emb_dim, eps=ln_eps)
        self.query = nn.Linear(emb_dim, emb_dim)
        self.key = nn.Linear(emb_dim, emb_dim)
        self.value = nn.Linear(emb_dim, emb_dim)
        self.out = nn.Linear(emb_dim, emb_dim)
        self.ln2 = nn.LayerNorm(emb_dim, eps=ln_eps)
        self.mlp = nn.Sequential(nn.Linear(emb_dim, ff_dim), nn.GELU(approximate="tanh"), nn.Linear(ff_dim, emb_dim))

    def attention(self, x):  # (B, T, C) -> (B, T, C)
        B, T, C = x.shape
        q, k, v = (linear(x).view(B, T, self.num_heads, C // self.num_heads).transpose(1, 2)
                   for linear in (self.query, self.key, self.value))  # 3 x (B, nh, T, hs)
        heads = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # softmax(q k^T / sqrt(hs) + mask) v
        return self.out(heads.transpose(1, 2).reshape(B, T, C))  # (B, nh, T, hs) -> (B, T, C)

    def forward(self, x):  # (B, T, C) -> (B, T, C)
        x = x + self.attention(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """Token and position tables, num_layers blocks, a final layer norm, an untied head with a bias."""

    def __init__(self, vocab_size, context_len, emb_dim, num_heads, num_layers, ff_dim, ln_eps):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, emb_dim)
        self.pos_emb = nn.Embedding(context_len, emb_dim)
        self.blocks = nn.ModuleList(Block(emb_dim, num_heads, ff_dim, ln_eps) for _ in range(num_layers))
        self.lnf = nn.LayerNorm(emb_dim, eps=ln_eps)
        self.head = nn.Linear(emb_dim, vocab_size)

    def forward(self, ids):  # (T,) or (B, T) ints -> logits (T, V) or (B, T, V), as transformer.forward
        T = ids.shape[-1]
        if T > self.pos_emb.num_embeddings:
            raise ValueError(f"cannot forward a sequence of length {T}: context_len is only "
                             f"{self.pos_emb.num_embeddings}; use the last {self.pos_emb.num_embeddings} tokens")
        x = self.tok_emb(ids) + self.pos_emb(torch.arange(T, device=ids.device))
        x = x.reshape(-1, T, x.shape[-1])  # (T, C) -> (1, T, C): one code path for both
        for block in self.blocks:
            x = block(x)
        return self.head(self.lnf(x)).reshape(*ids.shape, -1)


# Our parameter names -> the module's. Gains and shifts are LayerNorm's weight and bias, and the
# embedding tables are (rows, C) in both. Our linear weights are (n_in, n_out), used as x @ W + b;
# nn.Linear keeps (n_out, n_in) and computes x @ weight.T + bias, so every W is transposed.
TOP_NAMES = {"tok_emb": "tok_emb.weight", "pos_emb": "pos_emb.weight", "lnf_gain": "lnf.weight",
             "lnf_shift": "lnf.bias", "W_out": "head.weight", "b_out": "head.bias"}
BLOCK_NAMES = {"ln1_gain": "ln1.weight", "ln1_shift": "ln1.bias", "Wq": "query.weight", "bq": "query.bias",
               "Wk": "key.weight", "bk": "key.bias", "Wv": "value.weight", "bv": "value.bias",
               "Wo": "out.weight", "bo": "out.bias", "ln2_gain": "ln2.weight", "ln2_shift": "ln2.bias",
               "W1": "mlp.0.weight", "b1": "mlp.0.bias", "W2": "mlp.2.weight", "b2": "mlp.2.bias"}


def torch_name(name):
    """Example: "block3.Wq" -> "blocks.3.query.weight", "W_out" -> "head.weight"."""
    if name.startswith("block"):
        block, key = name.split(".")
        return f"blocks.{block.removeprefix('block')}.{BLOCK_NAMES[key]}"
    return TOP_NAMES[name]


def load_gpt(folder, dtype=torch.float32):
    """The model saved in folder (model.json and model.npz), as a GPT in eval mode."""
    folder = Path(folder)
    model = GPT(**json.loads((folder / "model.json").read_text(encoding="utf-8"))["model"]).to(dtype)
    state = {}
    with np.load(folder / "model.npz", allow_pickle=False) as arrays:
        for name in arrays.files:
            array = arrays[name]
            is_linear_weight = array.ndim == 2 and not name.endswith("_emb")
            state[torch_name(name)] = torch.from_numpy(array.T.copy() if is_linear_weight else array)
    model.load_state_dict(state)  # strict: each of the module's tensors from exactly one array, shapes checked
    return model.eval()


def last_saved_run(home):
    """The run folder of home whose model was saved last (standalone, so by the files' times alone)."""
    models = sorted(Path(home).glob("runs/*/model.npz"), key=lambda path: path.stat().st_mtime)
    return models[-1].parent if models else Path(home)


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else last_saved_run("checkpoints")
    if not (folder / "model.npz").is_file():
        sys.exit(f"no model.npz in {folder}/: train a model with `python train.py` first, or name a checkpoint folder")
    model = load_gpt(folder)
    ids = torch.arange(4)[None] % model.tok_emb.num_embeddings  # a (B, T) = (1, 4) batch of token ids
    with torch.no_grad():
        logits = model(ids)
    print(f"{folder}: logits of shape {tuple(logits.shape)}; most likely next token after ids {ids[0].tolist()}: "
          f"{int(logits[0, -1].argmax())}")
