"""Train the model: corpus -> tokenizer -> windows -> AdamW steps -> checkpoints.

    python train.py                                   # config.py's settings, on data/sample.csv
    python train.py --epochs 2 --corpus_path my.csv   # any setting can be overridden
    python train.py --resume                          # continue a run that was interrupted

Each row of the corpus ends with a newline, and the rows of a split are joined into one token
stream, cut into windows of seq_len + 1 tokens every `stride` tokens: the first seq_len are the
input, the last seq_len the targets. The model with the best validation loss is kept.
"""

import argparse
import math
import signal
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

import checkpoint
import config
from generate import Sampling, generate
from optim import Adam, clip_grad_norm, lr_schedule
from parallel import DataParallel, processes_for
from tokenizer import BPETokenizer
from transformer import ModelConfig, cross_entropy_forward, forward, init_params

SAMPLE_CORPUS = Path(__file__).resolve().parent / "data" / "sample.csv"
SAMPLE_PROMPT = "The "
EVAL_BATCH = 64  # validation windows per forward pass


# --- the corpus -------------------------------------------------------------------------------

def corpus_file(s):
    """The corpus to read: corpus_path, or the bundled sample when the default path is absent."""
    path = Path(s.corpus_path)
    if s.corpus_path == config.defaults()["corpus_path"] and not path.exists():
        print(f"{path} not found: training on the bundled sample corpus, {SAMPLE_CORPUS.name}")
        return SAMPLE_CORPUS
    if not path.is_file():
        raise ValueError(f"no corpus at {path.resolve()}; give a CSV or .txt file with --corpus_path")
    return path


def read_rows(path, column, max_rows):
    """The first max_rows rows of text, empty ones dropped: a CSV column, or the lines of a .txt."""
    try:
        if path.suffix.lower() == ".txt":
            rows = path.read_text(encoding="utf-8").splitlines()
        else:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
            if column not in frame.columns:
                raise ValueError(f"{path} has no column {column!r}; its columns are {list(frame.columns)}; "
                                 f"choose one with --corpus_column")
            rows = frame[column].tolist()
    except UnicodeDecodeError:
        raise ValueError(f"cannot read {path}: it is not UTF-8 text") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise ValueError(f"cannot read {path} as CSV: {str(err).strip()}") from None
    rows = [row for row in rows[:max_rows] if row.strip()]
    if not rows:
        raise ValueError(f"{path} holds no text (column {column!r} is empty); give a corpus with text in it")
    return rows


def split_rows(rows, val_fraction, seed):
    """(training rows, validation rows): a shuffle seeded with seed decides, each keeps corpus order."""
    order = np.random.default_rng(seed).permutation(len(rows))
    n_val = max(1, round(val_fraction * len(rows)))
    if n_val >= len(rows):
        raise ValueError(f"{len(rows)} row(s) cannot be split into training and validation; "
                         f"give a corpus with more rows")
    return [rows[i] for i in np.sort(order[n_val:])], [rows[i] for i in np.sort(order[:n_val])]


def token_stream(tokenizer, rows):
    """All rows as one array of ids, each row ending with its newline."""
    return np.array([i for row in rows for i in tokenizer.encode(row + "\n")], dtype=np.int64)


def make_windows(stream, seq_len, stride, what):
    """(inputs, targets), each (num_windows, seq_len): windows of seq_len + 1 tokens every stride.

    Example: stream [0..5], seq_len 2, stride 2 -> inputs [[0, 1], [2, 3]], targets [[1, 2], [3, 4]]
    """
    if len(stream) < seq_len + 1:
        raise ValueError(f"the {what} split has {len(stream)} tokens, fewer than one window of seq_len + 1 = "
                         f"{seq_len + 1}; use a longer corpus or a smaller seq_len")
    windows = np.lib.stride_tricks.sliding_window_view(stream, seq_len + 1)[::stride]
    return windows[:, :-1], windows[:, 1:]


def corpus_windows(tokenizer, rows, s):
    """(inputs, targets, val_inputs, val_targets): the rows split, tokenized and cut into windows;
    every training window starts `stride` tokens after the last, every validation one seq_len."""
    train_rows, val_rows = split_rows(rows, s.val_fraction, s.seed)
    inputs, targets = make_windows(token_stream(tokenizer, train_rows), s.seq_len, s.stride, "training")
    val_inputs, val_targets = make_windows(token_stream(tokenizer, val_rows), s.seq_len, s.seq_len, "validation")
    return inputs, targets, val_inputs, val_targets


def token_lengths(tokenizer):  # -> (V,): the characters each token spells, for bits per character
    return np.array([len(tokenizer.decode([i])) for i in range(tokenizer.vocab_size)])


# --- measuring --------------------------------------------------------------------------------

def evaluate(params, cfg, inputs, targets, token_chars):
    """(mean loss in nats per token, bits per character) over every given window."""
    total_nats = 0.0
    for start in range(0, len(inputs), EVAL_BATCH):
        batch_targets = targets[start: start + EVAL_BATCH]
        logits, _ = forward(params, inputs[start: start + EVAL_BATCH], cfg)
        mean_nats, _ = cross_entropy_forward(logits.reshape(-1, cfg.vocab_size), batch_targets.reshape(-1))
        total_nats += mean_nats * batch_targets.size
    # bits per character = total nats / ln 2 / the characters the predicted tokens spell
    return total_nats / targets.size, total_nats / math.log(2) / token_chars[targets].sum()


def sample_text(params, cfg, tokenizer, s, rng):
    """A short continuation of SAMPLE_PROMPT (or of the corpus's first character), up to a newline."""
    prompt, _ = tokenizer.encode_known(SAMPLE_PROMPT)
    prompt = prompt or [0]
    sampling = Sampling(s.temperature, s.top_k, s.top_p)
    new = list(generate(params, cfg, prompt, s.max_new_tokens, s.seq_len, sampling, rng))
    return tokenizer.decode(prompt + new).split("\n")[0]


# --- saving -----------------------------------------------------------------------------------

def check_writable(folder):
    """Fail before training, not after, when the checkpoint folder cannot be written."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        checkpoint.write_atomically(folder / ".write-test", b"")
        (folder / ".write-test").unlink()
    except OSError as err:
        raise ValueError(f"cannot write checkpoints to {folder}/ ({err.strerror}); choose a folder with "
                         f"--checkpoint") from None


def set_aside_previous(folder):
    """A new run must not overwrite a model a person trained before: move it to folder/previous/."""
    old = [folder / name for name in ("model.npz", "model.json", "model.tok.json") if (folder / name).exists()]
    if old:
        (folder / "previous").mkdir(exist_ok=True)
        for path in old:
            path.replace(folder / "previous" / path.name)
        print(f"the model already in {folder}/ was moved to {folder}/previous/")


def write_losses(folder, step_losses, history, s, steps_per_epoch, total_steps):
    """losses.csv: one row per step (lr, training loss), with the validation figures on epoch ends."""
    steps = np.arange(1, len(step_losses) + 1)
    table = pd.DataFrame({"step": steps, "epoch": (steps - 1) // steps_per_epoch + 1,
                          "lr": [lr_schedule(i, total_steps, s.lr_max, s.lr_min, s.warmup_steps) for i in steps],
                          "train_loss": step_losses})
    epochs = pd.DataFrame(history)[["epoch", "val_loss", "val_bpc"]] if history else None
    if epochs is not None:
        table = table.merge(epochs.assign(step=epochs["epoch"] * steps_per_epoch)[["step", "val_loss", "val_bpc"]],
                            on="step", how="left")
    checkpoint.write_atomically(folder / "losses.csv", table.to_csv(index=False).encode("utf-8"))
    plot_losses(folder, table)


def plot_losses(folder, table):
    """losses.png, where matplotlib is installed (pip install -e ".[plot]")."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    figure, axes = plt.subplots(figsize=(7, 4))
    axes.plot(table["step"], table["train_loss"].rolling(50, min_periods=1).mean(), label="training (mean of 50 steps)")
    if "val_loss" in table:
        epochs = table.dropna(subset=["val_loss"])
        axes.plot(epochs["step"], epochs["val_loss"], "o-", label="validation")
    axes.set_xlabel("step")
    axes.set_ylabel("cross-entropy (nats per token)")
    axes.legend()
    figure.tight_layout()
    figure.savefig(folder / "losses.png.tmp.png")
    plt.close(figure)
    (folder / "losses.png.tmp.png").replace(folder / "losses.png")


# --- training ---------------------------------------------------------------------------------

class StopRequest:
    """Set by Ctrl-C; the loop finishes its step, saves what a resume needs, and exits 130."""

    def __init__(self):
        self.requested = False

    def __call__(self, signum, frame):
        if self.requested:  # a second Ctrl-C: stop now
            raise KeyboardInterrupt
        self.requested = True

    def check(self, step):
        return self.requested


def train(s, resume=False, stop=None):
    """The whole job; returns the path of the folder with the checkpoint."""
    stop = stop or StopRequest()
    folder = Path(s.checkpoint)
    path = corpus_file(s)
    rows = read_rows(path, s.corpus_column, s.max_rows)
    corpus_sha256 = checkpoint.sha256_of(path)
    print(f"corpus: {len(rows)} rows, {sum(map(len, rows)):,} characters from {path}")
    check_writable(folder)

    tokenizer = BPETokenizer.train([row + "\n" for row in rows], s.num_merges)
    note = "" if len(tokenizer.merges) == s.num_merges else " (no pair occurs twice any more: stopped early)"
    print(f"tokenizer: {len(tokenizer.alphabet)} characters + {len(tokenizer.merges)} merges = "
          f"{tokenizer.vocab_size} tokens{note}")
    inputs, targets, val_inputs, val_targets = corpus_windows(tokenizer, rows, s)
    token_chars = token_lengths(tokenizer)

    cfg = ModelConfig(tokenizer.vocab_size, s.context_len, s.emb_dim, s.num_heads, s.num_layers, s.ff_dim, s.ln_eps)
    params = init_params(cfg, np.random.default_rng(s.seed), dtype=np.dtype(s.dtype))
    opt = Adam(params, s.beta1, s.beta2, s.adam_eps, s.weight_decay)
    steps_per_epoch = math.ceil(len(inputs) / s.batch_size)
    total_steps = s.epochs * steps_per_epoch
    step, step_losses, history = 0, [], []
    if resume:
        saved_params, opt_state, progress = checkpoint.load_resume_state(folder, cfg)
        if progress["corpus_sha256"] != corpus_sha256:
            raise ValueError(f"the corpus {path} changed since the run being resumed; start a new run without --resume")
        for name in params:
            params[name][...] = saved_params[name]
        opt.load_state(opt_state)
        step, step_losses, history = progress["step"], progress["step_losses"], progress["history"]
        print(f"resuming at step {step} of {total_steps}")
    else:
        set_aside_previous(folder)
    n_params = sum(p.size for p in params.values())
    processes = s.processes or processes_for(cfg, s.batch_size, s.seq_len)
    print(f"model: {n_params:,} parameters ({s.dtype}); {len(inputs):,} training windows, "
          f"{len(val_inputs):,} validation windows; {s.epochs} epochs of {steps_per_epoch:,} steps "
          f"on {processes} process{'es' * (processes > 1)}")

    def save_resume():
        progress = {"step": step, "settings": vars(s), "corpus_sha256": corpus_sha256,
                    "step_losses": step_losses, "history": history}
        checkpoint.save_resume_state(folder, params, opt.state(), progress)

    def end_epoch(epoch):
        val_loss, val_bpc = evaluate(params, cfg, val_inputs, val_targets, token_chars)
        train_loss = float(np.mean(step_losses[-steps_per_epoch:]))
        sample = sample_text(params, cfg, tokenizer, s, np.random.default_rng([s.seed, epoch, 1]))
        history.append({"epoch": epoch, "train_loss": train_loss, "val_loss": val_loss, "val_bpc": val_bpc})
        best = min(history, key=lambda h: h["val_loss"])
        if best["epoch"] == epoch:
            meta = {"settings": vars(s), "seed": s.seed, "steps": step, "best_epoch": epoch, "history": history,
                    "processes": processes,  # the slices of each batch: they decide the gradients' last bits
                    "corpus": {"path": str(path), "sha256": corpus_sha256, "rows": len(rows),
                               "characters": sum(map(len, rows))},
                    "versions": {"python": sys.version.split()[0], "numpy": np.__version__, "pandas": pd.__version__},
                    "trained_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            checkpoint.save_model(folder, params, cfg, tokenizer, meta)
        save_resume()
        write_losses(folder, step_losses, history, s, steps_per_epoch, total_steps)
        tqdm.write(f"epoch {epoch:>3}: train {train_loss:.4f}  val {val_loss:.4f}  ({val_bpc:.3f} bits/char)"
                   f"{'  best, saved' if best['epoch'] == epoch else ''}\n           sample: {sample!r}")

    previous_handler = signal.signal(signal.SIGINT, stop)
    started, tokens_per_step = time.perf_counter(), s.batch_size * s.seq_len
    order = None  # this epoch's order of the training windows
    bar = tqdm(total=total_steps, initial=step, unit="step", dynamic_ncols=True, file=sys.stderr)
    parallel = DataParallel(processes)
    try:
        while step < total_steps:
            epoch, index = divmod(step, steps_per_epoch)
            if order is None or index == 0:
                order = np.random.default_rng([s.seed, epoch]).permutation(len(inputs))
            batch = order[index * s.batch_size: (index + 1) * s.batch_size]
            loss, grads = parallel.loss_and_grads(params, inputs[batch], targets[batch], cfg)
            norm = clip_grad_norm(grads, s.grad_clip)
            if not (math.isfinite(loss) and math.isfinite(norm)):
                raise ValueError(f"the loss became {loss} (gradient norm {norm}) at step {step + 1}; training stopped "
                                 f"and the last good checkpoint is kept. Try a smaller --lr_max or --grad_clip")
            step += 1
            opt.step(params, grads, lr_schedule(step, total_steps, s.lr_max, s.lr_min, s.warmup_steps))
            step_losses.append(loss)
            bar.update()
            if step % 20 == 0:
                rate = (step - bar.initial) * tokens_per_step / (time.perf_counter() - started)
                bar.set_postfix_str(f"loss {np.mean(step_losses[-20:]):.3f}  "
                                    f"lr {lr_schedule(step, total_steps, s.lr_max, s.lr_min, s.warmup_steps):.2e}  "
                                    f"{rate:,.0f} tok/s", refresh=False)
            if step % steps_per_epoch == 0:
                end_epoch(step // steps_per_epoch)
            if stop.check(step) and step < total_steps:
                save_resume()
                bar.close()
                where = "" if s.checkpoint == config.defaults()["checkpoint"] else f" --checkpoint {s.checkpoint}"
                print(f"\ninterrupted after step {step} of {total_steps}; the state is saved. "
                      f"Resume with: python train.py --resume{where}")
                raise SystemExit(130)
    finally:
        bar.close()
        parallel.close()
        signal.signal(signal.SIGINT, previous_handler)
    best = min(history, key=lambda h: h["val_loss"])
    print(f"done in {time.perf_counter() - started:.0f} s: best validation loss {best['val_loss']:.4f} "
          f"({best['val_bpc']:.3f} bits/char) at epoch {best['epoch']}, saved in {folder}/")
    return folder


def resume_settings(s, argv):
    """The settings of the run being resumed; a setting given on the command line must agree."""
    progress = checkpoint.read_json(Path(s.checkpoint) / "resume.json") \
        if (Path(s.checkpoint) / "resume.json").is_file() else None
    if not isinstance(progress, dict) or not isinstance(progress.get("settings"), dict):
        raise ValueError(f"nothing to resume in {s.checkpoint}/; start a new run without --resume")
    saved = progress["settings"]
    for name, value in vars(s).items():
        if f"--{name}" in argv and saved.get(name) != value:
            raise ValueError(f"--resume continues with the settings of the interrupted run ({name} = "
                             f"{saved.get(name)!r}); drop --{name}")
    resumed = config.settings(argparse.Namespace(**{**vars(s), **saved}))
    resumed.checkpoint = s.checkpoint
    return resumed


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = config.parser("Train the model on a corpus and save checkpoints (settings from config.py).")
    p.add_argument("--resume", action="store_true", help="continue the interrupted run saved in --checkpoint")
    args = p.parse_args(argv)
    s = config.settings(args)
    if args.resume:
        s = resume_settings(s, argv)
    train(s, resume=args.resume)


if __name__ == "__main__":
    config.run(main)
