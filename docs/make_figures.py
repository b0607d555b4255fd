"""Write docs/figures.json: the "actual model output" numbers the docs pages quote, from a real checkpoint.

    python docs/make_figures.py [--checkpoint checkpoints]

Every figure is computed here from the checkpoint's files, never typed in; the pages quote them
as `figure:name` and tests/test_docs.py checks each quote against this file. Beside the figures
it records where they came from: the commit, the sha256 of each checkpoint file and of the
corpus, the settings the model was trained with, and the library versions. The figures of the run
rebuild its data exactly as train.py built it (train.read_corpus, then train.prepare_data, whose
tokenizer must be the checkpoint's). --checkpoint is a home folder (its top, or the newest whole
run where the top is not whole) or a run's own folder, runs/<start time>/.

It also draws the pictures of the pages into docs/figures/ (SVG, with matplotlib): each from the
same checkpoint, by the project's own functions. figures.json records, for each picture, the
sha256 of the numbers it was drawn from, and the SVG carries that sha256 and the model.npz sha256
in its description, so tests/test_figures.py can tell a stale picture. Nothing is written unless
everything was computed: the files are written to temporary names and renamed at the end.
A checkpoint missing, or trained on another corpus than the one it names, is one line and exit 2.
"""

import argparse
import hashlib
import io
import json
import math
import platform
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from engineering import checkpoint  # noqa: E402
import config  # noqa: E402
from engineering import runs  # noqa: E402
import train  # noqa: E402
from engineering.errors import InputError, run_script  # noqa: E402
from engineering.files import publish_staged, temporary_name, write_staged  # noqa: E402
from engineering.corpus import read_corpus, token_lengths  # noqa: E402
from engineering.prompting import reply_end  # noqa: E402
from transformer import (ModelConfig, Sampling, attention_backward, attention_forward, block_backward,  # noqa: E402
                         block_forward, block_params, causal_mask, cross_entropy_backward, cross_entropy_forward,
                         embed_forward, filtered_probs, forward, gelu_backward, gelu_forward, generate, init_params,
                         layernorm_backward, layernorm_forward, linear_backward, linear_forward, lr_schedule,
                         mlp_backward, mlp_forward, param_shapes, softmax_backward)

PROMPT = "Mira could not find her ring. She looked on the shelf and under the table."  # a row of the sample
NEXT_PROMPT = "Mira could not find her"  # the prompt whose next-token distribution is shown
FIGURES_DIR = REPO / "docs" / "figures"  # the pictures, one SVG each


def numbers(values, digits=4):
    return "[" + ", ".join(f"{v:.{digits}f}" for v in np.ravel(values)) + "]"


def named_corpus(model):
    """The corpus the checkpoint names, checked to be the very text it was trained on (its sha256)."""
    named = Path(model.meta["corpus"]["path"])
    path = named if named.is_absolute() or named.is_file() else REPO / named
    if not path.is_file():
        raise InputError(f"{model.folder}/model.json names the corpus {named}, which is not there; the figures "
                         f"rebuild the run's data from it: put it back, or train again")
    if checkpoint.sha256_of(path) != model.meta["corpus"]["sha256"]:
        raise InputError(f"{path} is not the corpus {model.folder}/ was trained on (its sha256 differs from the one "
                         f"in model.json), so the figures would describe another text: restore it, or train again")
    return path


def provenance(folder, meta, corpus):
    """Where the figures came from; folder: the one the model was read from (a run's, where the top was not
    whole); corpus: the path of the corpus, checked against meta by named_corpus."""
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                           capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    inside = corpus.resolve().is_relative_to(REPO)
    return {
        "commit": commit + (" (with uncommitted changes)" if dirty else ""),
        "model.npz sha256": checkpoint.sha256_of(folder / "model.npz"),
        "model.json sha256": checkpoint.sha256_of(folder / "model.json"),
        "model.tok.json sha256": checkpoint.sha256_of(folder / "model.tok.json"),
        "corpus": str(corpus.resolve().relative_to(REPO)) if inside else str(corpus),
        "corpus sha256": meta["corpus"]["sha256"],
        "run": meta["run"],
        "trained_at": meta["trained_at"],
        "settings": meta["settings"],
        "versions": {"python": platform.python_version(), "numpy": np.__version__, "pandas": pd.__version__},
        "versions at training": meta["versions"],
    }


def decay_only(model, T, schedule):
    """Rows T.. of pos_emb as weight decay alone would leave them: their initial values times
    prod over the steps of (1 - lr_t * weight_decay). They never get a gradient, so Adam's moments
    for them stay 0 and its update is 0 / (0 + eps) = 0. schedule: the lr of each step, 1 on."""
    s = model.meta["settings"]
    initial = init_params(model.cfg, np.random.default_rng(s["seed"]))["pos_emb"][T:]
    factor = np.prod([1 - lr * s["weight_decay"] for lr in schedule[: model.meta["steps"]]])
    return initial * factor, factor


def learning_rates(model, steps_per_epoch):
    """The learning rate of every step of the run's schedule, as train.train set its length."""
    s = model.meta["settings"]
    total = s["max_steps"] or s["epochs"] * steps_per_epoch
    return [lr_schedule(t, total, s["lr_max"], s["lr_min"], s["warmup_steps"]) for t in range(1, total + 1)]


def embedding_figures(model, ids, schedule):
    params, cfg = model.params, model.cfg
    X0 = embed_forward(params, ids)
    T = len(ids)
    row_norms = np.linalg.norm(params["pos_emb"], axis=1)
    predicted, factor = decay_only(model, T, schedule)
    return {
        "tok_emb.shape": str(params["tok_emb"].shape), "pos_emb.shape": str(params["pos_emb"].shape),
        "tensors": str(len(params)), "params.dtype": str(params["tok_emb"].dtype),
        "parameters": f"{sum(p.size for p in params.values()):,}",
        "window.tokens": str(T), "X0.shape": str(X0.shape), "X0.row0.first4": numbers(X0[0, :4]),
        "pos_emb.read_rows.mean_norm": f"{row_norms[:T].mean():.4f}",
        "pos_emb.unread_rows.mean_norm": f"{row_norms[T:].mean():.4f}",
        "pos_emb.unread_rows.decay_factor": f"{factor:.4f}",
        "pos_emb.unread_rows.predicted_mean_norm": f"{np.linalg.norm(predicted, axis=1).mean():.4f}",
        "pos_emb.unread_rows.largest_gap": f"{np.abs(params['pos_emb'][T:] - predicted).max():.1e}",
    }


def block_steps(X, p, cfg):  # (1, T, C), one block's params -> its arrays and caches, step by step
    """block_forward's steps one at a time, keeping what it does not hand back: each branch's output,
    the stream between the two branches, and every layer's cache."""
    h1, ln1_cache = layernorm_forward(X, p["ln1_gain"], p["ln1_shift"], cfg.ln_eps)
    attended, attn_cache = attention_forward(h1, p, cfg.num_heads)
    X_mid = X + attended
    h2, ln2_cache = layernorm_forward(X_mid, p["ln2_gain"], p["ln2_shift"], cfg.ln_eps)
    fed, mlp_cache = mlp_forward(h2, p)
    return types.SimpleNamespace(h1=h1, ln1_cache=ln1_cache, attended=attended, attn_cache=attn_cache, X_mid=X_mid,
                                 h2=h2, ln2_cache=ln2_cache, fed=fed, mlp_cache=mlp_cache, out=X_mid + fed)


def block_figures(model, ids):
    params, cfg = model.params, model.cfg
    X = embed_forward(params, ids[None])  # (1, T, C)
    figures = {"residual.X0.mean_norm": f"{np.linalg.norm(X, axis=-1).mean():.4f}"}
    h1, (xhat, _, _) = layernorm_forward(X, params["block0.ln1_gain"], params["block0.ln1_shift"], cfg.ln_eps)
    figures.update({"ln1.in.row0.mean": f"{X[0, 0].mean():.4f}", "ln1.in.row0.std": f"{X[0, 0].std():.4f}",
                    "ln1.xhat.row0.std": f"{xhat[0, 0].std():.4f}", "ln1.out.row0.mean": f"{h1[0, 0].mean():.4f}",
                    "ln1.out.row0.std": f"{h1[0, 0].std():.4f}",
                    "block0.ln1_gain.range": numbers([params["block0.ln1_gain"].min(),
                                                      params["block0.ln1_gain"].max()], 3)})
    for layer in range(cfg.num_layers):
        p = block_params(params, layer)
        step = block_steps(X, p, cfg)  # the two branches one at a time, to measure what each adds to the stream
        X = step.out
        attn = step.attn_cache[4]  # (1, nh, T, T)
        figures[f"residual.block{layer}.attn_out.mean_norm"] = f"{np.linalg.norm(step.attended, axis=-1).mean():.4f}"
        figures[f"residual.block{layer}.mlp_out.mean_norm"] = f"{np.linalg.norm(step.fed, axis=-1).mean():.4f}"
        figures[f"residual.block{layer}.mean_norm"] = f"{np.linalg.norm(X, axis=-1).mean():.4f}"
        for head in range(cfg.num_heads):
            last_row = attn[0, head, -1]
            figures[f"attention.block{layer}.head{head}.last_row"] = numbers(last_row, 2)
            figures[f"attention.block{layer}.head{head}.argmax"] = str(int(np.argmax(last_row)))
        hidden, _ = linear_forward(step.h2, p["W1"], p["b1"])
        figures[f"mlp.block{layer}.hidden.shape"] = str(hidden[0].shape)
        figures[f"mlp.block{layer}.hidden.negative_fraction"] = f"{(hidden < 0).mean():.3f}"
        figures[f"mlp.block{layer}.hidden.below_minus3_fraction"] = f"{(hidden < -3).mean():.3f}"
        figures[f"attention.block{layer}.bk.max_abs"] = f"{np.abs(p['bk']).max():.4f}"
    return figures


def output_figures(model, ids):
    params, cfg, tokenizer = model.params, model.cfg, model.tokenizer
    logits, _ = forward(params, ids[:-1], cfg)
    log_probs = logits - logits.max(axis=-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(axis=-1, keepdims=True))
    window_loss = -log_probs[np.arange(len(ids) - 1), ids[1:]].mean()
    next_logits, _ = forward(params, np.array(tokenizer.encode(NEXT_PROMPT)), cfg)
    probs = filtered_probs(next_logits[-1], Sampling(1.0, 0, 1.0))
    top = np.argsort(-probs, kind="stable")[:5]
    settings = model.meta["settings"]
    kept = filtered_probs(next_logits[-1], Sampling(settings["temperature"], settings["top_k"], settings["top_p"]))
    continuation = generate(params, cfg, tokenizer.encode(NEXT_PROMPT), settings["max_new_tokens"],
                            settings["seq_len"], Sampling(settings["temperature"], settings["top_k"],
                                                          settings["top_p"]),
                            np.random.default_rng(settings["seed"]))
    text = tokenizer.decode(tokenizer.encode(NEXT_PROMPT) + list(continuation))
    end = reply_end(text, checkpoint.corpus_kind(model.meta))  # where talk.py would stop the reply
    text = text if end is None else text[:end]
    return {
        "logits.shape": str(logits.shape), "window.loss": f"{window_loss:.4f}",
        "uniform.loss": f"{np.log(cfg.vocab_size):.4f}",
        "next.top5": ", ".join(f"{tokenizer.decode([i])!r} {probs[i]:.3f}" for i in top),
        "next.kept_by_sampling": str(int((kept > 0).sum())),
        "sample.seed": str(settings["seed"]), "sample.text": text,
    }


def run_file(model, name):
    """A file of the run the model comes from: in its folder, or in its home's runs/<run>/."""
    for folder in (model.folder, model.folder / "runs" / model.meta["run"]):
        if (folder / name).is_file():
            return folder / name
    raise InputError(f"no {name} for run {model.meta['run']} beside {model.folder}/: the pictures need the "
                     f"run's folder as train.py wrote it; give --checkpoint the home or the run folder")


def run_history(model):
    """The history of every validation of the run, from its resume.json (model.json's ends at the best)."""
    return checkpoint.read_record(run_file(model, "resume.json"))["history"]


def training_figures(model, corpus, data, schedule):
    """The run's figures; corpus and data: read and prepared exactly as train.py did (train.read_corpus,
    train.prepare_data)."""
    meta, s = model.meta, model.meta["settings"]
    best = min(meta["history"], key=lambda h: h["val_loss"])
    assert best["step"] == meta["best_step"], "model.json's history does not end at its best step"
    steps_per_epoch = math.ceil(len(data.inputs) / s["batch_size"])
    targets = data.val_stream[1:]  # what evaluate scores: every validation token after the first
    figures = {
        "train.validations": str(len(meta["history"])), "train.validations_run": str(len(run_history(model))),
        "train.steps": f"{meta['steps']:,}", "train.best_step": f"{best['step']:,}",
        "train.best.val_loss": f"{best['val_loss']:.4f}", "train.best.val_bpc": f"{best['val_bpc']:.3f}",
        "train.best.train_loss": f"{best['train_loss']:.4f}",
        "train.first.step": f"{meta['history'][0]['step']:,}",
        "train.first.val_loss": f"{meta['history'][0]['val_loss']:.4f}",
        "train.tokens": f"{len(data.tokenizer.encode(corpus.train_text)):,}",
        "train.windows": f"{len(data.inputs):,}", "val.tokens": f"{len(data.val_stream):,}",
        "val.full_windows": f"{len(targets) // s['seq_len']:,}", "val.last_window": str(len(targets) % s["seq_len"]),
        "train.steps_per_epoch": f"{steps_per_epoch:,}",
        "train.total_steps": f"{len(schedule):,}", "train.lr.at_saved_step": f"{schedule[meta['steps'] - 1]:.3e}",
        "val.chars_per_token": f"{token_lengths(data.tokenizer)[targets].sum() / targets.size:.3f}",
    }
    if not s["max_steps"]:  # a run in epochs validates at each epoch's end
        figures["train.best_epoch"] = str(best["step"] // steps_per_epoch)
    return figures


def tokenizer_figures(model):
    tokenizer = model.tokenizer
    pieces = [tokenizer.decode([i]) for i in tokenizer.encode(PROMPT)]
    return {
        "tokenizer.alphabet": str(len(tokenizer.alphabet)), "tokenizer.merges": str(len(tokenizer.merges)),
        "tokenizer.vocab_size": str(tokenizer.vocab_size),
        "tokenizer.first_merges": ", ".join(repr(tokenizer.decode([len(tokenizer.alphabet) + i])) for i in range(5)),
        "tokenizer.prompt.pieces": " · ".join(pieces), "tokenizer.prompt.tokens": str(len(pieces)),
        "tokenizer.prompt.characters": str(len(PROMPT)),
    }


# --- the pictures: the numbers each one is drawn from ------------------------------------------
# Each *_data function returns the picture's input numbers as a dict; data_sha256 fingerprints it.
# They need NumPy and the project only, so tests/test_figures.py can recompute those that need no
# checkpoint (GELU, the mask, the schedule, the block's shapes) without matplotlib.

SHOWN_AS = {" ": "\u2423", "\n": "\u21b5"}  # a space and a newline, made visible on an axis


def token_label(tokenizer, token_id):
    """A token's text with its spaces and newlines visible. Example: ' the' -> '\u2423the'."""
    return "".join(SHOWN_AS.get(c, c) for c in tokenizer.decode([int(token_id)]))


def data_sha256(data):
    """sha256 of a picture's input numbers: each entry's name, then its text, or its shape and its
    values to 6 significant digits: more than a picture shows, and few enough that the last bits of a
    float, in which two machines' math libraries may differ, almost never change it."""
    digest = hashlib.sha256()
    for name, value in data.items():
        if isinstance(value, (str, list, dict)):
            digest.update(f"{name}\n{json.dumps(value, ensure_ascii=False)}\n".encode("utf-8"))
        else:
            array = np.asarray(value, dtype=np.float64)
            values = " ".join(f"{v:.5e}" for v in array.ravel())
            digest.update(f"{name} {list(array.shape)}\n{values}\n".encode("utf-8"))
    return digest.hexdigest()


def attention_data(model, ids):
    """Every head's attention weights on the window, block by block: (L, nh, T, T)."""
    X = embed_forward(model.params, ids[None])  # (1, T, C)
    maps = []
    for layer in range(model.cfg.num_layers):
        X, (_, attn_cache, _, _) = block_forward(X, block_params(model.params, layer), model.cfg)
        maps.append(attn_cache[4][0])  # attn, (nh, T, T)
    return {"tokens": [token_label(model.tokenizer, i) for i in ids], "attention": np.stack(maps)}


def mask_data(T):
    """The causal mask of a window of T tokens: 0 where a query may look, -inf where not. It depends on
    the positions only, never on the tokens."""
    return {"mask": causal_mask(T, T, np.float64)}


def gelu_data():
    """GELU and its derivative on [-4, 4], from gelu_forward and gelu_backward (dout = 1 gives dy/dx)."""
    x = np.linspace(-4.0, 4.0, 321)
    y, cache = gelu_forward(x)
    return {"x": x, "gelu": y, "dgelu": gelu_backward(np.ones_like(x), cache)}


def schedule_data(settings, total_steps, best_step):
    """The learning rate of every step of the run (transformer.lr_schedule), and the step saved as best."""
    s = settings
    steps = np.arange(1, total_steps + 1)
    lrs = [lr_schedule(int(t), total_steps, s["lr_max"], s["lr_min"], s["warmup_steps"]) for t in steps]
    return {"step": steps, "lr": np.array(lrs), "warmup_steps": s["warmup_steps"], "best_step": best_step}


LOSS_POINTS = 400  # the training loss of every step, averaged over this many stretches of the run


def loss_data(model):
    """The run's losses.csv: the training loss averaged over LOSS_POINTS stretches of steps (one
    step's loss is one batch's, noisy), every validation, and the best one (the saved model)."""
    table = pd.read_csv(run_file(model, "losses.csv"))
    groups = table.groupby(np.arange(len(table)) * LOSS_POINTS // len(table))  # stretches of equal length, within 1
    validations = table.dropna(subset=["val_loss"])
    best = validations.loc[validations["val_loss"].idxmin()]
    assert int(best["step"]) == model.meta["best_step"], "losses.csv's best validation is not the saved model's"
    return {"train.step": groups["step"].mean().to_numpy(), "train.loss": groups["train_loss"].mean().to_numpy(),
            "val.step": validations["step"].to_numpy(), "val.loss": validations["val_loss"].to_numpy(),
            "best.step": best["step"], "best.val_loss": best["val_loss"], "steps": len(table),
            "uniform": math.log(model.cfg.vocab_size)}


def token_table_data(model, labelled=24):
    """Every row of tok_emb projected on its top-2 principal directions (the right singular vectors
    of the centred table), each direction's share of the variance, and which tokens to label: the
    `labelled` farthest from the centre, plus the space and the full stop."""
    table = model.params["tok_emb"].astype(np.float64)  # (V, C)
    centred = table - table.mean(axis=0)
    _, singular, directions = np.linalg.svd(centred, full_matrices=False)
    points = centred @ directions[:2].T  # (V, 2)
    points *= np.sign(points[np.abs(points).argmax(axis=0), [0, 1]])  # a direction's sign is arbitrary: fix it
    tokenizer = model.tokenizer
    far = np.argsort(-np.linalg.norm(points, axis=1), kind="stable")[:labelled]
    named = [tokenizer.encode(c)[0] for c in (" ", ".") if c in tokenizer.alphabet]
    label_ids = sorted(set(far.tolist()) | set(named))
    return {"points": points, "variance_share": singular[:2] ** 2 / (singular ** 2).sum(),
            "characters": len(tokenizer.alphabet), "label_ids": label_ids,
            "labels": [token_label(tokenizer, i) for i in label_ids]}


SHOWN_TOKENS = 10  # the most likely next tokens at temperature 1, the bars of every panel


def sampling_cuts(settings):
    """(title, Sampling) of each panel: temperatures alone, the two cuts, and the checkpoint's own."""
    own = Sampling(settings["temperature"], settings["top_k"], settings["top_p"])
    return [("temperature 0.5", Sampling(0.5, 0, 1.0)), ("temperature 1", Sampling(1.0, 0, 1.0)),
            ("temperature 2", Sampling(2.0, 0, 1.0)), ("temperature 1, top-k 3", Sampling(1.0, 3, 1.0)),
            ("temperature 1, top-p 0.9", Sampling(1.0, 0, 0.9)),
            (f"the checkpoint's settings:\ntemperature {own.temperature:g}, top-k {own.top_k}, "
             f"top-p {own.top_p:g}", own)]


def next_token_data(model):
    """The next-token distribution after NEXT_PROMPT under each of sampling_cuts (transformer.filtered_probs):
    the probabilities of the SHOWN_TOKENS most likely tokens, and how many tokens each keeps."""
    logits, _ = forward(model.params, np.array(model.tokenizer.encode(NEXT_PROMPT)), model.cfg)
    cuts = sampling_cuts(model.meta["settings"])
    panels = np.stack([filtered_probs(logits[-1], sampling) for _, sampling in cuts])  # (panels, V)
    shown = np.argsort(-panels[1], kind="stable")[:SHOWN_TOKENS]  # panel 1: temperature 1, nothing cut
    return {"prompt": NEXT_PROMPT, "titles": [title for title, _ in cuts],
            "tokens": [token_label(model.tokenizer, i) for i in shown], "probs": panels[:, shown],
            "kept": (panels > 0).sum(axis=1), "vocab_size": model.cfg.vocab_size}


def block_data(params, cfg, ids):
    """The shape of every array one block computes on a window of ids, forward (block_forward's
    steps, one at a time) and backward (what block_backward hands between the layers, dout = 1),
    and the shape of each parameter and its gradient. Only shapes: they do not depend on the values."""
    X = embed_forward(params, ids[None])  # (1, T, C)
    step = block_steps(X, block_params(params, 0), cfg)
    _, q, k, v, attn, (merged, _) = step.attn_cache
    (_, _), (hidden, _), (activated, _) = step.mlp_cache
    # block_backward's steps one at a time, keeping the gradients it hands between the layers
    dout = np.ones_like(step.out)
    dh2, grads = mlp_backward(dout, step.mlp_cache)
    dX_mid, grads["ln2_gain"], grads["ln2_shift"] = layernorm_backward(dh2, step.ln2_cache)
    dX_mid = dX_mid + dout
    dh1, attn_grads = attention_backward(dX_mid, step.attn_cache)
    grads.update(attn_grads)
    dX, grads["ln1_gain"], grads["ln1_shift"] = layernorm_backward(dh1, step.ln1_cache)
    dX = dX + dX_mid
    arrays = {"X": X, "h1": step.h1, "Q": q, "K": k, "V": v, "P": attn, "heads": merged, "X_mid": step.X_mid,
              "h2": step.h2, "hidden": hidden, "activated": activated, "out": step.out,
              "dout": dout, "dh2": dh2, "dX_mid": dX_mid, "dh1": dh1, "dX": dX}
    shapes = {name: list(a.shape) for name, a in arrays.items()}
    shapes.update({f"d{name}": list(g.shape) for name, g in grads.items()})
    shapes.update({name.split(".")[1]: list(shape) for name, shape in param_shapes(cfg).items()
                   if name.startswith("block0.")})
    return {"shapes": shapes, "config": checkpoint.shape_record(cfg)}  # as model.json records it


def attention_backward_data(params, cfg, ids):
    """The shape of every array attention computes on a window of ids, forward (attention_forward's steps)
    and backward (attention_backward's, one at a time, from dout = 1), and of each of its parameters."""
    p = block_params(params, 0)
    x = embed_forward(params, ids[None, :])  # (1, T, C): the arrays' shapes are all this picture needs
    out, cache = attention_forward(x, p, cfg.num_heads)
    _, q, k, v, attn, (merged, _) = cache
    B, nh, T, hs = q.shape
    dout = np.ones_like(out)
    dmerged = linear_backward(dout, cache[-1])[0]
    dheads = dmerged.reshape(B, T, nh, hs).transpose(0, 2, 1, 3)  # (B, T, C) -> (B, nh, T, hs)
    dattn = dheads @ v.swapaxes(-1, -2)
    dscores = softmax_backward(dattn, attn)
    dx, grads = attention_backward(dout, cache)
    arrays = {"x": x, "Q, K, V": q, "A": attn, "P": attn, "H": q, "merged": merged, "out": out,
              "dout": dout, "dmerged": dmerged, "dH": dheads, "dP": dattn, "dA": dscores, "G": dscores,
              "dQ, dK, dV": q, "dx": dx}
    shapes = {name: list(a.shape) for name, a in arrays.items()}
    shapes.update({f"d{name}": list(g.shape) for name, g in grads.items()})
    shapes.update({name: list(p[name].shape) for name in grads})
    return {"shapes": shapes, "config": checkpoint.shape_record(cfg)}  # as model.json records it


def model_data(params, cfg, ids):
    """The shape of every array the whole model computes on a batch of ids, forward (forward's steps)
    and backward (loss_and_grads' steps, from the loss's own gradient), and of each parameter. Only
    shapes: they do not depend on the values, so init_params of the reference shape gives them."""
    B, T = ids.shape
    X = embed_forward(params, ids)  # (B, T, C)
    arrays, caches = {"ids": ids, "X0": X}, []
    for layer in range(cfg.num_layers):
        X, cache = block_forward(X, block_params(params, layer), cfg)
        arrays[f"X{layer + 1}"] = X
        caches.append(cache)
    Xf, lnf_cache = layernorm_forward(X, params["lnf_gain"], params["lnf_shift"], cfg.ln_eps)
    logits, head_cache = linear_forward(Xf, params["W_out"], params["b_out"])  # (B, T, V)
    loss, loss_cache = cross_entropy_forward(logits.reshape(-1, cfg.vocab_size), ids.reshape(-1))
    arrays.update({"Xf": Xf, "logits": logits, "loss": np.asarray(loss)})
    dlogits = cross_entropy_backward(loss_cache).reshape(B, T, cfg.vocab_size)
    dXf = linear_backward(dlogits, head_cache)[0]
    dX = layernorm_backward(dXf, lnf_cache)[0]
    arrays.update({"dlogits": dlogits, "dXf": dXf, f"dX{cfg.num_layers}": dX})
    for layer in reversed(range(cfg.num_layers)):
        dX = block_backward(dX, caches[layer])[0]
        arrays[f"dX{layer}"] = dX
    shapes = {name: list(np.shape(a)) for name, a in arrays.items()}
    shapes.update({name: list(shape) for name, shape in param_shapes(cfg).items() if not name.startswith("block")})
    return {"shapes": shapes, "config": checkpoint.shape_record(cfg)}  # as model.json records it


def code_only_data(record):
    """The numbers of the pictures that need no checkpoint, from the project's code and the settings and
    figures that figures.json records (tests/test_figures.py checks each against its recorded sha256)."""
    settings, figures = record["provenance"]["settings"], record["figures"]
    cfg = ModelConfig(int(figures["tok_emb.shape"].strip("()").split(",")[0]), settings["context_len"],
                      settings["emb_dim"], settings["num_heads"], settings["num_layers"], settings["ff_dim"],
                      settings["ln_eps"])
    T = int(figures["window.tokens"])
    as_int = lambda text: int(text.replace(",", ""))  # noqa: E731
    params = init_params(cfg, np.random.default_rng(0))
    return {"gelu": gelu_data(), "causal_mask": mask_data(T),
            "lr_schedule": schedule_data(settings, as_int(figures["train.total_steps"]), as_int(figures["train.best_step"])),
            "block": block_data(params, cfg, np.zeros(T, dtype=int)),
            "attention_backward": attention_backward_data(params, cfg, np.zeros(T, dtype=int)),
            "model": model_data(params, cfg, np.zeros((settings["batch_size"], settings["seq_len"]), dtype=int))}


# --- the pictures: drawing them ---------------------------------------------------------------
# matplotlib is imported only here, so the rest of this file (and the tests) work without it.

SVG_SALT = "numpy-gpt docs"  # svg.hashsalt: the same element ids on every run, so a redrawn picture is byte-identical
INK, LIGHT, ACCENT = "#1f4e79", "#9db4cc", "#c0392b"


def pyplot():
    """matplotlib's pyplot, drawing off screen, with the settings that make an SVG reproducible."""
    try:
        import matplotlib
    except ImportError:
        raise InputError('the pictures need matplotlib: pip install -e ".[plot]"') from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"svg.hashsalt": SVG_SALT, "svg.fonttype": "none", "font.size": 9,
                         "axes.spines.top": False, "axes.spines.right": False})
    return plt


def svg_bytes(fig, title, model_sha256, data_sha256):
    """The figure as SVG, with no date in it, carrying its provenance key and its data's sha256."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", metadata={
        "Title": title, "Date": None, "Creator": "docs/make_figures.py",
        "Description": f"model.npz sha256 {model_sha256}; data sha256 {data_sha256}"})
    pyplot().close(fig)
    return buffer.getvalue()


def draw_attention(data):
    """Every head's map, two heads a row, the rows sharing the tokens on their axes: narrow enough for a
    page's column with its token labels at 8 pt."""
    plt = pyplot()
    maps, tokens = data["attention"], data["tokens"]
    L, nh, T, _ = maps.shape
    fig, axes = plt.subplots(L, nh, figsize=(7.4, 4.0 * L + 0.9), squeeze=False, sharex=True, sharey=True,
                             layout="constrained")
    hidden = np.isneginf(causal_mask(T, T, np.float64))  # where the mask leaves weight 0: drawn grey
    colours = plt.get_cmap("Blues").with_extremes(bad="#ececec")
    for layer in range(L):
        for head in range(nh):
            ax = axes[layer, head]
            image = ax.imshow(np.ma.masked_where(hidden, maps[layer, head]), cmap=colours, vmin=0, vmax=1,
                              interpolation="none")
            ax.set_title(f"block {layer}, head {head}", fontsize=9)
            ax.set_xticks(range(T), tokens, rotation=90, fontsize=8, family="monospace")
            ax.set_yticks(range(T), tokens, fontsize=8, family="monospace")
            ax.label_outer()  # the tokens once per row and column: the panels share them
    for ax in axes[-1]:
        ax.set_xlabel("key: the token looked at")
    for ax in axes[:, 0]:
        ax.set_ylabel("query: the token looking")
    fig.colorbar(image, ax=axes, orientation="horizontal", shrink=0.6, aspect=40,
                 label="attention weight (each row sums to 1)")
    return fig


def draw_mask(data):
    plt = pyplot()
    mask = data["mask"]
    T = len(mask)
    fig, ax = plt.subplots(figsize=(4.8, 4.6), layout="constrained")
    colours = plt.matplotlib.colors.ListedColormap(["#ffffff", INK])
    ax.imshow(np.isneginf(mask), cmap=colours, vmin=0, vmax=1, interpolation="none")
    ax.set_xticks(np.arange(T + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(T + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="#bbbbbb", linewidth=0.5)
    ax.tick_params(which="minor", length=0)
    ax.set_xticks(range(T))
    ax.set_yticks(range(T))
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.spines[:].set_visible(False)
    ax.set_xlabel("key position s")
    ax.set_ylabel("query position t")
    allowed = plt.matplotlib.patches.Patch(facecolor="#ffffff", edgecolor="#888888", label="0: s \u2264 t, may look")
    blocked = plt.matplotlib.patches.Patch(facecolor=INK, label="\u2212\u221e: s > t, the future")
    ax.legend(handles=[allowed, blocked], loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=2, frameon=False)
    return fig


def draw_gelu(data):
    plt = pyplot()
    x, y, dy = data["x"], data["gelu"], data["dgelu"]
    fig, ax = plt.subplots(figsize=(6.4, 3.8), layout="constrained")
    ax.axhline(0, color="#999999", linewidth=0.6)
    ax.axvline(0, color="#999999", linewidth=0.6)
    ax.plot(x, np.maximum(x, 0), color="#aaaaaa", linewidth=1, label="ReLU, max(x, 0), for comparison")
    ax.plot(x, y, color=INK, linewidth=2, label="GELU(x): gelu_forward")
    ax.plot(x, dy, color=ACCENT, linewidth=1.6, linestyle="--", label="dGELU/dx: gelu_backward with dout = 1")
    lowest = np.argmin(y)
    ax.plot(x[lowest], y[lowest], "o", color=INK)
    ax.annotate(f"minimum {y[lowest]:.3f} at x = {x[lowest]:.2f}", (x[lowest], y[lowest]), xytext=(-3.9, 0.9),
                arrowprops={"arrowstyle": "->", "color": "#555555"})
    ax.set_xlabel("x, an entry of the hidden layer h")
    ax.set_ylim(-0.6, 4.1)
    ax.legend(loc="upper left", frameon=False)
    return fig


def draw_loss(data):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 4.0), layout="constrained")
    ax.plot(data["train.step"], data["train.loss"], color=LIGHT, linewidth=1.2,
            label=f"training loss, each point the mean of about {data['steps'] / len(data['train.step']):.0f} steps")
    ax.plot(data["val.step"], data["val.loss"], "o-", color=INK, markersize=3.5, linewidth=1.4,
            label="validation loss (held-out rows)")
    ax.axhline(data["uniform"], color="#999999", linewidth=0.8, linestyle=":")
    ax.text(data["val.step"][-1], data["uniform"], f"ln V = {data['uniform']:.2f}: a model that knows nothing",
            ha="right", va="bottom", color="#666666")
    ax.plot(data["best.step"], data["best.val_loss"], "*", color=ACCENT, markersize=14, zorder=3)
    ax.annotate(f"best: step {int(data['best.step']):,}, validation loss {data['best.val_loss']:.4f}\n"
                f"(the model that is saved)", (data["best.step"], data["best.val_loss"]),
                xytext=(0.45, 0.55), textcoords="axes fraction", arrowprops={"arrowstyle": "->", "color": ACCENT})
    ax.xaxis.set_major_formatter("{x:,.0f}")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats per token)")
    ax.set_ylim(0, data["uniform"] * 1.1)
    ax.legend(loc="upper right", frameon=False, bbox_to_anchor=(1, 0.88))
    return fig


def draw_schedule(data):
    plt = pyplot()
    step, lr, warmup, best = data["step"], data["lr"], int(data["warmup_steps"]), int(data["best_step"])
    fig, ax = plt.subplots(figsize=(7.0, 3.6), layout="constrained")
    ax.plot(step, lr, color=INK, linewidth=1.8)
    ax.plot(best, lr[best - 1], "*", color=ACCENT, markersize=12)
    ax.annotate(f"the best step, {best:,}: lr {lr[best - 1]:.2e}", (best, lr[best - 1]), xytext=(0.62, 0.85),
                textcoords="axes fraction", color=ACCENT, arrowprops={"arrowstyle": "->", "color": ACCENT})
    ax.annotate(f"the last step, {step[-1]:,}: lr_min {lr[-1]:.0e}", (step[-1], lr[-1]), xytext=(0.62, 0.62),
                textcoords="axes fraction", arrowprops={"arrowstyle": "->", "color": "#555555"})
    ax.xaxis.set_major_formatter("{x:,.0f}")
    ax.set_xlabel("step")
    ax.set_ylabel("learning rate")
    ax.set_ylim(0, lr.max() * 1.08)
    first = step <= 3 * warmup
    inset = ax.inset_axes([0.1, 0.14, 0.3, 0.38])
    inset.plot(step[first], lr[first], color=INK, linewidth=1.5)
    inset.axvline(warmup, color="#999999", linewidth=0.8, linestyle=":")
    inset.set_title(f"the first {3 * warmup} steps: warmup ends at step {warmup}", fontsize=8)
    inset.tick_params(labelsize=7)
    return fig


LABEL_PLACES = [((3, 2), "left"), ((3, -9), "left"), ((-3, 2), "right"), ((-3, -9), "right")]  # points from the dot


def label_points(ax, at, labels):
    """Each label beside its point, on the first side of LABEL_PLACES where it overlaps no label placed before."""
    ax.figure.canvas.draw()  # the texts' sizes need a renderer
    placed = []
    for xy, label in zip(at, labels):
        for offset, align in LABEL_PLACES:
            text = ax.annotate(label, xy, xytext=offset, textcoords="offset points", ha=align, fontsize=7.5,
                               family="monospace", color=ACCENT)
            box = text.get_window_extent()
            if not any(box.overlaps(other) for other in placed) or (offset, align) == LABEL_PLACES[-1]:
                placed.append(box)
                break
            text.remove()


def draw_token_table(data):
    plt = pyplot()
    points, characters, share = data["points"], int(data["characters"]), data["variance_share"]
    fig, ax = plt.subplots(figsize=(7.0, 5.6), layout="constrained")
    ax.scatter(points[characters:, 0], points[characters:, 1], s=6, color=LIGHT, label="merged tokens")
    ax.scatter(points[:characters, 0], points[:characters, 1], s=10, color=INK, label="single characters")
    label_points(ax, points[data["label_ids"]], data["labels"])
    ax.set_xlabel(f"principal direction 1 ({share[0]:.0%} of the variance)")
    ax.set_ylabel(f"principal direction 2 ({share[1]:.0%} of the variance)")
    ax.legend(loc="best", frameon=False)
    return fig


def draw_next_token(data):
    plt = pyplot()
    titles, tokens, probs, kept = data["titles"], data["tokens"], data["probs"], data["kept"]
    columns = 3
    rows = math.ceil(len(titles) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(9.6, 3.0 * rows), sharey=True, squeeze=False,
                             layout="constrained")
    for ax, title, row, count in zip(axes.flat, titles, probs, kept):
        ax.bar(range(len(tokens)), row, color=np.where(row > 0, INK, LIGHT))
        ax.set_xticks(range(len(tokens)), tokens, family="monospace", fontsize=8)
        ax.set_title(title, fontsize=8.5)
        ax.text(0.97, 0.93, f"{int(count)} of {int(data['vocab_size'])} tokens kept\n"
                # max: a sum of rounded probabilities can pass 1 by a hair, which would print -0.000
                f"the {int(data['vocab_size']) - len(tokens)} not drawn: {max(1 - row.sum(), 0):.3f} together",
                transform=ax.transAxes, ha="right", va="top", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("probability")
    fig.suptitle(f"the next token after {data['prompt']!r}", fontsize=10)
    return fig


def shape_text(shapes, *names):
    """Names and their shape, those of one shape together. Example: Wq, Wk (32, 32); bq, bk (32,)."""
    groups = {}
    for name in names:
        groups.setdefault(tuple(shapes[name]), []).append(name)
    return "; ".join(f"{', '.join(group)} {shape}" for shape, group in groups.items())


# The block, forward: (array, what computes it from the row above), every shape read from block_data's;
# {names} are parameters, replaced by the names and their shapes.
BLOCK_FORWARD = [
    ("X", ""),
    ("h1", "layernorm_forward: {ln1_gain, ln1_shift}"),
    ("Q, K, V", "h1 W + b: {Wq, Wk, Wv, bq, bk, bv}; split into heads"),
    ("P", "softmax(Q K\u1d40 / \u221ahs + M), one map per head: the weights"),
    ("heads", "P V, the heads side by side"),
    ("X_mid", "X + heads Wo + bo: {Wo, bo}; the residual adds X"),
    ("h2", "layernorm_forward: {ln2_gain, ln2_shift}"),
    ("hidden", "h2 W1 + b1: {W1, b1}"),
    ("activated", "GELU(hidden)"),
    ("out", "X_mid + activated W2 + b2: {W2, b2}; the residual adds X_mid"),
]
# The block, backward, from the gradient on its output to the one on its input: (the gradient block_backward
# hands between layers, what computes it from the row above).
BLOCK_BACKWARD = [
    ("dout", ""),
    ("dh2", "mlp_backward: {dW1, db1, dW2, db2}"),
    ("dX_mid", "layernorm_backward: {dln2_gain, dln2_shift}; + dout, the residual"),
    ("dh1", "attention_backward: {dWq, dWk, dWv, dWo, dbq, dbk, dbv, dbo}"),
    ("dX", "layernorm_backward: {dln1_gain, dln1_shift}; + dX_mid, the residual"),
]


# Attention, forward, in the letters of the pages (docs/notation.md): (array, what computes it from the row above).
ATTENTION_FORWARD = [
    ("x", ""),
    ("Q, K, V", "x W + b: {Wq, Wk, Wv, bq, bk, bv}; split into nh heads"),
    ("A", "Q K\u1d40 / \u221ahs + M: the scores, one map per head"),
    ("P", "softmax of each row of A: the weights"),
    ("H", "P V: each head's weighted values"),
    ("merged", "the heads side by side"),
    ("out", "merged Wo + bo: {Wo, bo}"),
]
# Attention, backward, from dout: (the gradient attention_backward computes, from what), the steps of page 3b.
ATTENTION_BACKWARD = [
    ("dout", ""),
    ("dmerged", "1. dout Wo\u1d40; and {dWo, dbo}"),
    ("dH", "2. the heads taken apart again"),
    ("dP", "3. dH V\u1d40 (and dV = P\u1d40 dH: the grey line)"),
    ("dA", "4. P \u2299 (dP \u2212 \u03a3 dP \u2299 P), row by row; 0 where masked"),
    ("G", "5. dA / \u221ahs; the mask's addition passes it unchanged"),
    ("dQ, dK, dV", "6. dQ = G K, dK = G\u1d40 Q; dV from step 3"),
    ("dx", "7. heads back in rows; dQ Wq\u1d40 + dK Wk\u1d40 + dV Wv\u1d40; and {dWq, dWk, dWv, dbq, dbk, dbv}"),
]


def with_shapes(text, shapes):
    """A row's description with each {names} group replaced by the names and their shapes."""
    return re.sub(r"\{([^}]*)\}", lambda m: shape_text(shapes, *m[1].split(", ")), text)


def box_edge(name, shapes):
    """Where the box of `name (shape)`, centred at x = 1.75 in 9-point monospace, starts on the left."""
    return 1.75 - 0.052 * len(f"{name} {tuple(shapes[name])}") - 0.1


def skip(ax, edge, bar, y_from, y_to, edge_to, colour="#888888"):
    """A residual connection: from a box's side (edge) at y_from out to x = bar, along, and back in to the
    side of the box at y_to (edge_to)."""
    ax.plot([edge, bar, bar], [y_from, y_from, y_to], color=colour, linewidth=1)
    ax.annotate("", (edge_to, y_to), (bar, y_to), arrowprops={"arrowstyle": "-|>", "color": colour,
                                                             "shrinkA": 0, "shrinkB": 0})


def chain(ax, rows, shapes, colour, fill, skips):
    """One column of boxes, top to bottom, each `name (shape)`, an arrow between each two with what
    computes the lower from the upper beside it; skips: (from, to) pairs joined by a residual line."""
    y = {name: len(rows) - 1 - i for i, (name, _) in enumerate(rows)}
    box = {"boxstyle": "round,pad=0.3", "facecolor": fill, "edgecolor": colour}
    arrow = {"arrowstyle": "-|>", "color": colour, "shrinkA": 9, "shrinkB": 9}
    for i, (name, how) in enumerate(rows):
        ax.text(1.75, y[name], f"{name} {tuple(shapes[name])}", ha="center", va="center", bbox=box,
                family="monospace", fontsize=9)
        if i:
            ax.annotate("", (1.75, y[name]), (1.75, y[rows[i - 1][0]]), arrowprops=arrow)
            ax.text(1.9, y[name] + 0.5, with_shapes(how, shapes), va="center", fontsize=8, color=colour)
    for bar, (start, end) in zip((0.12, 0.34), skips):  # the residual: the input skips the branch, the gradient too
        skip(ax, box_edge(start, shapes), bar, y[start], y[end], box_edge(end, shapes))
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.5, len(rows) - 0.5)
    ax.axis("off")


def draw_block(data):
    """One block as two columns of arrays, forward above backward, narrow enough for a page's column."""
    plt = pyplot()
    shapes, cfg = data["shapes"], data["config"]
    shapes = {**shapes, "Q, K, V": shapes["Q"]}
    fig, (forward_ax, backward_ax) = plt.subplots(2, 1, figsize=(7.4, 8.4), layout="constrained",
                                                  height_ratios=[len(BLOCK_FORWARD), len(BLOCK_BACKWARD)])
    chain(forward_ax, BLOCK_FORWARD, shapes, INK, "#eef3f8", [("X", "X_mid"), ("X_mid", "out")])
    chain(backward_ax, BLOCK_BACKWARD, shapes, ACCENT, "#fbeeee", [("dout", "dX_mid"), ("dX_mid", "dX")])
    B, T = shapes["X"][:2]
    forward_ax.set_title(f"forward, down: B = {B} window of T = {T} tokens, C = {cfg['emb_dim']}, "
                         f"nh = {cfg['num_heads']} heads of hs = {shapes['Q'][-1]}, F = {cfg['ff_dim']}", fontsize=9)
    backward_ax.set_title("backward, down from dout: each gradient has the shape of its array", fontsize=9)
    return fig


def draw_attention_backward(data):
    """Attention as two columns of arrays, forward above backward, as the block's picture draws a block."""
    plt = pyplot()
    shapes, cfg = data["shapes"], data["config"]
    fig, (forward_ax, backward_ax) = plt.subplots(2, 1, figsize=(7.4, 8.4), layout="constrained",
                                                  height_ratios=[len(ATTENTION_FORWARD), len(ATTENTION_BACKWARD)])
    chain(forward_ax, ATTENTION_FORWARD, shapes, INK, "#eef3f8", [])
    chain(backward_ax, ATTENTION_BACKWARD, shapes, ACCENT, "#fbeeee", [("dH", "dQ, dK, dV")])
    B, T, C = shapes["x"]
    forward_ax.set_title(f"forward, down: B = {B} window of T = {T} tokens, C = {C}, "
                         f"nh = {cfg['num_heads']} heads of hs = {shapes['Q, K, V'][-1]}", fontsize=9)
    backward_ax.set_title("backward, down from dout: each gradient has the shape of its array", fontsize=9)
    return fig


def model_rows(L):
    """The whole model, row by row: (forward array, what computes it from the row above, its gradient,
    what computes that gradient from the one below it)."""
    rows = [("ids", "", "dtok_emb, dpos_emb", "embed_backward:\nadds dX0's rows into both")]
    rows += [(f"X{layer}", "embed_forward: tok_emb[ids] + pos_emb[:T]" if layer == 0 else
              f"block_forward, block {layer - 1} (block.svg)", f"dX{layer}", f"block_backward,\nblock {layer}")
             for layer in range(L)]
    return rows + [(f"X{L}", f"block_forward, block {L - 1} (block.svg)", f"dX{L}", "layernorm_backward:\ndlnf_gain, dlnf_shift"),
                   ("Xf", "layernorm_forward: lnf_gain, lnf_shift", "dXf", "linear_backward:\ndW_out, db_out"),
                   ("logits", "linear_forward: W_out, b_out", "dlogits", "cross_entropy_backward:\n(probs \u2212 onehot) / N"),
                   ("loss", "cross_entropy_forward, with the targets", "", "")]


def draw_model(data):
    plt = pyplot()
    s, cfg = data["shapes"], data["config"]
    s = {**s, "dtok_emb, dpos_emb": s["tok_emb"]}
    rows = model_rows(cfg["num_layers"])
    fig, ax = plt.subplots(figsize=(9.0, 7.6), layout="constrained")
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.8, len(rows) - 0.1)
    ax.axis("off")
    box = {"boxstyle": "round,pad=0.35", "facecolor": "#eef3f8", "edgecolor": INK}
    back_box = {**box, "facecolor": "#fbeeee", "edgecolor": ACCENT}
    arrow = {"arrowstyle": "-|>", "color": INK, "shrinkA": 12, "shrinkB": 12}
    back_arrow = {**arrow, "color": ACCENT}
    for i, (name, how, grad, grad_how) in enumerate(rows):
        y = len(rows) - 1 - i
        ax.text(1.6, y, f"{name} {tuple(s[name])}", ha="center", va="center", bbox=box, family="monospace", fontsize=11)
        if i:
            ax.annotate("", (1.6, y), (1.6, y + 1), arrowprops=arrow)
            ax.text(1.75, y + 0.5, how, va="center", fontsize=10, color=INK)
        if name == "ids":
            grad_text = f"dtok_emb {tuple(s['tok_emb'])}, dpos_emb {tuple(s['pos_emb'])}"
            ax.text(8.3, y, grad_text, ha="center", va="center", bbox=back_box, family="monospace", fontsize=10)
        elif grad:
            ax.text(8.6, y, f"{grad} {tuple(s[grad])}", ha="center", va="center", bbox=back_box, family="monospace",
                    fontsize=11)
        if grad:  # the arrow into this gradient comes from the row below (the loss for dlogits)
            ax.annotate("", (8.6, y), (8.6, y - 1), arrowprops=back_arrow)
            ax.text(8.45, y - 0.5, grad_how, va="center", ha="right", fontsize=10, color=ACCENT, linespacing=1.1)
    B, T = s["ids"]
    ax.text(5.0, len(rows) - 0.4, f"the whole model: forward (blue, down), backward (red, up); B = {B}, T = {T}, "
            f"C = {cfg['emb_dim']}, V = {cfg['vocab_size']}, L = {cfg['num_layers']}", ha="center", fontsize=10)
    ax.text(5.0, -0.65, "every gradient has the shape of its array; the loss is one number, shape ()",
            ha="center", fontsize=10, color="#555555")
    return fig


PICTURES = {  # name: (title, draw); docs/figures/<name>.svg
    "token_table": ("The token table, tok_emb, on its top-2 principal directions", draw_token_table),
    "attention": ("Every head's attention weights on one window", draw_attention),
    "causal_mask": ("The causal mask", draw_mask),
    "gelu": ("GELU and its derivative", draw_gelu),
    "block": ("One block: its arrays and their shapes, forward and backward", draw_block),
    "attention_backward": ("Attention: its arrays and their shapes, forward and backward", draw_attention_backward),
    "model": ("The whole model: its arrays and their shapes, forward and backward", draw_model),
    "loss": ("The training and validation loss of the run", draw_loss),
    "lr_schedule": ("The learning-rate schedule of the run", draw_schedule),
    "next_token": ("The next-token distribution under temperatures and cuts", draw_next_token),
}


def picture_data(model, ids, total_steps):
    """The numbers of every picture in PICTURES, from the checkpoint and the window of ids."""
    return {"token_table": token_table_data(model), "attention": attention_data(model, ids),
            "causal_mask": mask_data(len(ids)), "gelu": gelu_data(), "block": block_data(model.params, model.cfg, ids),
            "attention_backward": attention_backward_data(model.params, model.cfg, ids),
            "model": code_only_data({"provenance": {"settings": model.meta["settings"]},
                                     "figures": {"tok_emb.shape": str(model.params["tok_emb"].shape),
                                                 "window.tokens": str(len(ids)), "train.total_steps": str(total_steps),
                                                 "train.best_step": str(model.meta["best_step"])}})["model"],
            "loss": loss_data(model),
            "lr_schedule": schedule_data(model.meta["settings"], total_steps, model.meta["best_step"]),
            "next_token": next_token_data(model)}


def write_all(files):
    """Write every file (path: bytes) to its temporary name, then rename them all; where a write fails,
    the temporary files go and nothing is renamed."""
    try:
        for path, data in files.items():
            path.parent.mkdir(exist_ok=True)
            write_staged(path, data)
    except OSError:
        for path in files:
            temporary_name(path).unlink(missing_ok=True)
        raise
    publish_staged(list(files))


def redraw_code_only(names):
    """Redraw the pictures that need no checkpoint (CODE_ONLY) from figures.json's record: the same
    settings and figures, so the same provenance; figures.json gains or updates their entries only."""
    record = json.loads((REPO / "docs" / "figures.json").read_text(encoding="utf-8"))
    data, files = code_only_data(record), {}
    for name in names:
        title, draw = PICTURES[name]
        digest = data_sha256(data[name])
        record["pictures"][name] = {"file": f"figures/{name}.svg", "title": title, "data sha256": digest}
        files[FIGURES_DIR / f"{name}.svg"] = svg_bytes(draw(data[name]), title, record["provenance"]["model.npz sha256"],
                                                       digest)
    record["pictures"] = {name: record["pictures"][name] for name in PICTURES}
    files[REPO / "docs" / "figures.json"] = (json.dumps(record, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    write_all(files)
    print(f"redrew {', '.join(names)} in docs/figures/ from the settings docs/figures.json records")


CODE_ONLY = ("gelu", "causal_mask", "lr_schedule", "block", "attention_backward", "model")  # pictures drawn from code and settings alone


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", default=str(REPO / "checkpoints"))
    p.add_argument("--code-only", nargs="+", choices=CODE_ONLY, metavar="PICTURE",
                   help=f"redraw only these pictures, which need no checkpoint ({', '.join(CODE_ONLY)}), keeping the rest")
    args = p.parse_args()
    if args.code_only:
        return redraw_code_only(args.code_only)
    folder = Path(args.checkpoint)
    model = checkpoint.load(folder if (folder / "model.json").exists() else runs.default_run(folder))
    corpus_path = named_corpus(model)
    ids = np.array(model.tokenizer.encode(PROMPT))[: model.meta["settings"]["seq_len"]]
    s = types.SimpleNamespace(**model.meta["settings"])
    corpus = read_corpus(corpus_path, s.corpus_column, s.max_rows, s.val_fraction, s.seed)
    _, _, tokenizer = train.start_model(corpus, s)  # learns the tokenizer again, as train.py did: it must be the saved one
    prepared = train.prepare_data(corpus, tokenizer, s)
    data = types.SimpleNamespace(tokenizer=tokenizer, inputs=prepared.inputs, val_stream=prepared.val_stream)
    assert data.tokenizer == model.tokenizer, "the corpus no longer gives the checkpoint's tokenizer"
    schedule = learning_rates(model, math.ceil(len(data.inputs) / s.batch_size))
    figures = {**embedding_figures(model, ids, schedule), **block_figures(model, ids), **output_figures(model, ids),
               **training_figures(model, corpus, data, schedule), **tokenizer_figures(model),
               "window.text": model.tokenizer.decode(list(ids)),
               "window.pieces": " · ".join(model.tokenizer.decode([i]) for i in ids)}
    origin = provenance(model.folder, model.meta, corpus_path)
    files, pictures = {}, {}
    for name, numbers_of in picture_data(model, ids, len(schedule)).items():
        title, draw = PICTURES[name]
        digest = data_sha256(numbers_of)
        pictures[name] = {"file": f"figures/{name}.svg", "title": title, "data sha256": digest}
        files[FIGURES_DIR / f"{name}.svg"] = svg_bytes(draw(numbers_of), title, origin["model.npz sha256"], digest)
    out = {"provenance": origin, "figures": figures, "pictures": pictures}
    files[REPO / "docs" / "figures.json"] = (json.dumps(out, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    write_all(files)
    print(f"wrote docs/figures.json: {len(figures)} figures, and {len(pictures)} pictures in docs/figures/, "
          f"from {model.folder}/")


if __name__ == "__main__":
    run_script(main)
