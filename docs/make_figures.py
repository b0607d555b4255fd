"""Write docs/figures.json: the "actual model output" numbers the docs pages quote, from a real checkpoint.

    python docs/make_figures.py [--checkpoint checkpoints]

Every figure is computed here from the checkpoint's files, never typed in; the pages quote them
as `figure:name` and tests/test_docs.py checks each quote against this file. Beside the figures
it records where they came from: the commit, the sha256 of each checkpoint file and of the
corpus, the settings the model was trained with, and the library versions. The figures of the run
rebuild its data exactly as train.py built it (train.read_corpus, then train.prepare_data, whose
tokenizer must be the checkpoint's). --checkpoint is a home folder (its top, or the newest whole
run where the top is not whole) or a run's own folder, runs/<start time>/.
"""

import argparse
import json
import math
import platform
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
import checkpoint  # noqa: E402
import train  # noqa: E402
from generate import Sampling, filtered_probs, generate  # noqa: E402
from optim import lr_schedule  # noqa: E402
from transformer import (attention_forward, block_params, embed_forward, forward, init_params,  # noqa: E402
                         layernorm_forward, linear_forward, mlp_forward)

PROMPT = "Mira could not find her ring. She looked on the shelf and under the table."  # a row of the sample
NEXT_PROMPT = "Mira could not find her"  # the prompt whose next-token distribution is shown


def numbers(values, digits=4):
    return "[" + ", ".join(f"{v:.{digits}f}" for v in np.ravel(values)) + "]"


def provenance(folder, meta):
    """Where the figures came from; folder: the one the model was read from (a run's, where the top was not whole)."""
    corpus = Path(meta["corpus"]["path"])
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                           capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    return {
        "commit": commit + (" (with uncommitted changes)" if dirty else ""),
        "model.npz sha256": checkpoint.sha256_of(folder / "model.npz"),
        "model.json sha256": checkpoint.sha256_of(folder / "model.json"),
        "model.tok.json sha256": checkpoint.sha256_of(folder / "model.tok.json"),
        "corpus": str(corpus.name),
        "corpus sha256": meta["corpus"]["sha256"],
        "corpus sha256 checked": corpus.is_file() and checkpoint.sha256_of(corpus) == meta["corpus"]["sha256"],
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
    """The learning rate of every step of the run's schedule, as train.start_run set its length."""
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
        "tensors": str(len(params)), "params.dtype": str(params["tok_emb"].dtype), "parameters": f"{sum(p.size for p in params.values()):,}",
        "window.tokens": str(T), "X0.shape": str(X0.shape), "X0.row0.first4": numbers(X0[0, :4]),
        "pos_emb.read_rows.mean_norm": f"{row_norms[:T].mean():.4f}",
        "pos_emb.unread_rows.mean_norm": f"{row_norms[T:].mean():.4f}",
        "pos_emb.unread_rows.decay_factor": f"{factor:.4f}",
        "pos_emb.unread_rows.predicted_mean_norm": f"{np.linalg.norm(predicted, axis=1).mean():.4f}",
        "pos_emb.unread_rows.largest_gap": f"{np.abs(params['pos_emb'][T:] - predicted).max():.1e}",
    }


def block_figures(model, ids):
    params, cfg = model.params, model.cfg
    X = embed_forward(params, ids[None])  # (1, T, C)
    figures = {"residual.X0.mean_norm": f"{np.linalg.norm(X, axis=-1).mean():.4f}"}
    h1, (xhat, _, _) = layernorm_forward(X, params["block0.ln1_gain"], params["block0.ln1_shift"], cfg.ln_eps)
    figures.update({"ln1.in.row0.mean": f"{X[0, 0].mean():.4f}", "ln1.in.row0.std": f"{X[0, 0].std():.4f}",
                    "ln1.xhat.row0.std": f"{xhat[0, 0].std():.4f}", "ln1.out.row0.mean": f"{h1[0, 0].mean():.4f}", "ln1.out.row0.std": f"{h1[0, 0].std():.4f}",
                    "block0.ln1_gain.range": numbers([params["block0.ln1_gain"].min(),
                                                      params["block0.ln1_gain"].max()], 3)})
    for layer in range(cfg.num_layers):
        p = block_params(params, layer)
        # block_forward's two branches, one at a time, to measure what each adds to the stream
        h1, _ = layernorm_forward(X, p["ln1_gain"], p["ln1_shift"], cfg.ln_eps)
        attended, attn_cache = attention_forward(h1, p, cfg.num_heads)
        X_mid = X + attended
        h2, _ = layernorm_forward(X_mid, p["ln2_gain"], p["ln2_shift"], cfg.ln_eps)
        fed, _ = mlp_forward(h2, p)
        X = X_mid + fed
        attn = attn_cache[4]  # (1, nh, T, T)
        figures[f"residual.block{layer}.attn_out.mean_norm"] = f"{np.linalg.norm(attended, axis=-1).mean():.4f}"
        figures[f"residual.block{layer}.mlp_out.mean_norm"] = f"{np.linalg.norm(fed, axis=-1).mean():.4f}"
        figures[f"residual.block{layer}.mean_norm"] = f"{np.linalg.norm(X, axis=-1).mean():.4f}"
        for head in range(cfg.num_heads):
            last_row = attn[0, head, -1]
            figures[f"attention.block{layer}.head{head}.last_row"] = numbers(last_row, 2)
            figures[f"attention.block{layer}.head{head}.argmax"] = str(int(np.argmax(last_row)))
        hidden, _ = linear_forward(h2, p["W1"], p["b1"])
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
    text = tokenizer.decode(tokenizer.encode(NEXT_PROMPT) + list(continuation)).split("\n")[0]
    return {
        "logits.shape": str(logits.shape), "window.loss": f"{window_loss:.4f}",
        "uniform.loss": f"{np.log(cfg.vocab_size):.4f}",
        "next.top5": ", ".join(f"{tokenizer.decode([i])!r} {probs[i]:.3f}" for i in top),
        "next.kept_by_sampling": str(int((kept > 0).sum())),
        "sample.seed": str(settings["seed"]), "sample.text": text,
    }


def run_history(model):
    """The history of every validation of the run, from its resume.json (model.json's ends at the best)."""
    for folder in (model.folder, model.folder / "runs" / model.meta["run"]):
        if (folder / "resume.json").is_file():
            return checkpoint.read_json(folder / "resume.json")["history"]
    return model.meta["history"]


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
        "train.tokens": f"{len(train.token_stream(data.tokenizer, corpus.train_text)):,}",
        "train.windows": f"{len(data.inputs):,}", "val.tokens": f"{len(data.val_stream):,}",
        "val.full_windows": f"{len(targets) // s['seq_len']:,}", "val.last_window": str(len(targets) % s["seq_len"]),
        "train.steps_per_epoch": f"{steps_per_epoch:,}",
        "train.total_steps": f"{len(schedule):,}", "train.lr.at_saved_step": f"{schedule[meta['steps'] - 1]:.3e}",
        "val.chars_per_token": f"{data.token_chars[targets].sum() / targets.size:.3f}",
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


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", default=str(REPO / "checkpoints"))
    folder = Path(p.parse_args().checkpoint)
    model = checkpoint.load(folder)
    ids = np.array(model.tokenizer.encode(PROMPT))[: model.meta["settings"]["seq_len"]]
    s = types.SimpleNamespace(**model.meta["settings"])
    corpus = train.read_corpus(Path(model.meta["corpus"]["path"]), s)
    data = train.prepare_data(corpus, s)  # learns the tokenizer again, as train.py did: it must be the saved one
    assert data.tokenizer == model.tokenizer, "the corpus no longer gives the checkpoint's tokenizer"
    schedule = learning_rates(model, math.ceil(len(data.inputs) / s.batch_size))
    figures = {**embedding_figures(model, ids, schedule), **block_figures(model, ids), **output_figures(model, ids),
               **training_figures(model, corpus, data, schedule), **tokenizer_figures(model),
               "window.text": model.tokenizer.decode(list(ids)),
               "window.pieces": " · ".join(model.tokenizer.decode([i]) for i in ids)}
    out = {"provenance": provenance(model.folder, model.meta), "figures": figures}
    (REPO / "docs" / "figures.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote docs/figures.json: {len(figures)} figures from {model.folder}/")


if __name__ == "__main__":
    main()
