"""Train the model: corpus -> tokenizer -> windows -> AdamW steps -> checkpoints.

    python train.py                                     # config.py's settings, on data/sample.csv
    python train.py --recipe book --corpus_path my.txt  # a book or play of your own, with its recipe
    python train.py --recipe book --corpus_path my.txt --name mybook  # the same, the run named mybook
    python train.py --resume                            # continue the latest run, if it was interrupted

The corpus is a CSV, whose rows are documents, each ending with a newline, or a .txt, one exact
text. Its training part becomes one token stream, cut into windows of seq_len + 1 tokens every
`stride` tokens: the first seq_len are the input, the last seq_len the targets. The held-out part
is scored whole at each validation, and the model with the best validation loss is kept.

Each run writes into a folder of its own, checkpoints/runs/<its name>/ (--name, or its UTC start time
and its corpus's name); once it has validated a model, its best model is also copied to
checkpoints/, where talk.py reads it. Earlier runs stay; `python talk.py --list` lists them.
"""

import argparse
import collections
import math
import os
import re
import signal
import sys
import time
import types
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

import checkpoint
import config
from errors import InputError
from files import write_atomically
from generate import Sampling, generate, reply_end
from optim import Adam, clip_grad_norm, lr_schedule
from parallel import DataParallel, processes_for
from tokenizer import BPETokenizer
from transformer import ModelConfig, cross_entropy_forward, forward, init_params

SAMPLE_CORPUS = Path(__file__).resolve().parent / "data" / "sample.csv"
SAMPLE_PROMPT = "The "
EVAL_BATCH = 64  # validation windows per forward pass
LOG_SECONDS = 10  # between progress lines, where stderr is not a terminal
RATE_SECONDS = 30  # the speed and the time to go are those of about the last RATE_SECONDS of steps


# --- the corpus -------------------------------------------------------------------------------

@dataclass
class Corpus:
    path: Path
    train_text: str  # what the model learns from
    val_text: str  # held out: the model never trains on it
    kind: str  # "rows" of a CSV, or one running "text": where a reply of the model ends (generate.reply_end)
    described: str  # one line: what was read, and what was left out


def corpus_file(s):
    """The corpus to read: corpus_path, or the bundled sample when the default path is absent."""
    path = Path(s.corpus_path)
    if s.corpus_path == config.defaults()["corpus_path"] and not path.exists():
        print(f"{path} not found: training on the bundled sample corpus, {SAMPLE_CORPUS.name}")
        return SAMPLE_CORPUS
    if not path.is_file():
        raise InputError(f"no corpus at {path.resolve()}; give a CSV or .txt file with --corpus_path")
    return path


def read_corpus(path, s):
    """The corpus at path, split into training and validation text: a .txt as exact text, its last
    val_fraction held out; a CSV as rows, whole rows held out."""
    if path.suffix.lower() == ".txt":
        text = read_text(path)
        train_text, val_text = split_text(text, s.val_fraction)
        return Corpus(path, train_text, val_text, "text", f"{checkpoint.characters_said(len(text), 'text')} of text")
    rows, total = read_rows(path, s.corpus_column, s.max_rows)
    train_rows, val_rows = split_rows(rows, s.val_fraction, s.seed)
    described = f"{len(rows):,} rows, {checkpoint.characters_said(sum(len(row) + 1 for row in rows), 'rows')}"
    if total > len(rows):
        described += (f" (the first {s.max_rows:,} of {total:,} rows, empty ones dropped: max_rows = {s.max_rows:,};"
                      f" --max_rows 0 uses them all)")
    return Corpus(path, "".join(row + "\n" for row in train_rows), "".join(row + "\n" for row in val_rows), "rows",
                  described)


def read_text(path):
    """Every character of a .txt file, as written; Windows line ends (\\r\\n) become \\n."""
    data = path.read_bytes()
    if b"\0" in data:
        raise InputError(f"{path} holds NUL bytes, so it is binary, not text; give a UTF-8 text file")
    try:
        text = data.decode("utf-8-sig")  # -sig: a byte order mark some editors write first is not text
    except UnicodeDecodeError as err:
        raise InputError(f"cannot read {path}: it is not UTF-8 text (byte {err.start} is not valid); "
                         f"save it as UTF-8") from None
    if not text.strip():
        raise InputError(f"{path} holds no text{' (only whitespace)' if text else ''}; give a corpus with text in it")
    return text.replace("\r\n", "\n")


def read_rows(path, column, max_rows):
    """(the first max_rows rows of a CSV column, empty ones dropped; how many rows it has in all).
    max_rows = 0 keeps them all."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except UnicodeDecodeError:
        raise InputError(f"cannot read {path}: it is not UTF-8 text") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise InputError(f"cannot read {path} as CSV: {str(err).strip()}") from None
    if column not in frame.columns:
        raise InputError(f"{path} has no column {column!r}; its columns are {list(frame.columns)}; "
                         f"choose one with --corpus_column")
    rows = frame[column].tolist()
    kept = [row for row in rows[:max_rows or None] if row.strip()]
    if not kept:
        raise InputError(f"{path} holds no text (column {column!r} is empty); give a corpus with text in it")
    return kept, len(rows)


def split_rows(rows, val_fraction, seed):
    """(training rows, validation rows): a shuffle seeded with seed decides, each keeps corpus order."""
    order = np.random.default_rng(seed).permutation(len(rows))
    n_val = max(1, round(val_fraction * len(rows)))
    if n_val >= len(rows):
        raise InputError(f"{len(rows)} row(s) cannot be split into training and validation; "
                         f"give a corpus with more rows")
    return [rows[i] for i in np.sort(order[n_val:])], [rows[i] for i in np.sort(order[:n_val])]


def split_text(text, val_fraction):
    """(training text, validation text): the validation text is the end of text, from the first line
    that starts at or after the cut at 1 - val_fraction, so no line is shared; nothing is dropped.

    Example: split_text("ab\\ncd\\nef\\ngh\\n", 0.4) -> ("ab\\ncd\\nef\\n", "gh\\n")
    """
    cut = math.floor((1 - val_fraction) * len(text))
    line_start = re.compile(r"\n(?=[^\n])").search(text, max(cut - 1, 0))
    if line_start is not None:
        cut = line_start.end()
    if not 0 < cut < len(text):
        raise InputError(f"{len(text):,} characters cannot be split into training and validation text; "
                         f"give a longer text")
    return text[:cut], text[cut:]


def token_stream(tokenizer, text):
    """The ids of text, as one array."""
    return np.array(tokenizer.encode(text), dtype=np.int64)


def make_windows(stream, seq_len, stride, what):
    """(inputs, targets), each (num_windows, seq_len): windows of seq_len + 1 tokens every stride.

    Example: stream [0..5], seq_len 2, stride 2 -> inputs [[0, 1], [2, 3]], targets [[1, 2], [3, 4]]
    """
    if len(stream) < seq_len + 1:
        raise InputError(f"the {what} text has {len(stream)} tokens, fewer than one window of seq_len + 1 = "
                         f"{seq_len + 1}; use a longer corpus or a smaller seq_len")
    windows = np.lib.stride_tricks.sliding_window_view(stream, seq_len + 1)[::stride]
    return windows[:, :-1], windows[:, 1:]


def token_lengths(tokenizer):  # -> (V,): the characters each token spells, for bits per character
    return np.array([len(tokenizer.decode([i])) for i in range(tokenizer.vocab_size)])


@dataclass
class Data:
    tokenizer: BPETokenizer
    inputs: np.ndarray  # (num_windows, seq_len): the training windows
    targets: np.ndarray  # (num_windows, seq_len): each input shifted by one token
    val_stream: np.ndarray  # the held-out text's ids, scored whole at each validation
    token_chars: np.ndarray  # (V,): characters per token


def prepare_data(corpus, s):
    """The tokenizer, learned from the whole corpus, and the windows and held-out ids it makes."""
    tokenizer = BPETokenizer.train([corpus.train_text, corpus.val_text], s.num_merges)
    note = "" if len(tokenizer.merges) == s.num_merges else " (no pair occurs twice any more: stopped early)"
    print(f"tokenizer: {len(tokenizer.alphabet)} characters + {len(tokenizer.merges)} merges = "
          f"{tokenizer.vocab_size} tokens{note}")
    inputs, targets = make_windows(token_stream(tokenizer, corpus.train_text), s.seq_len, s.stride, "training")
    val_stream = token_stream(tokenizer, corpus.val_text)
    if len(val_stream) < 2:
        raise InputError("the validation text is a single token; give a longer corpus or a larger val_fraction")
    return Data(tokenizer, inputs, targets, val_stream, token_lengths(tokenizer))


# --- measuring --------------------------------------------------------------------------------

def evaluate(params, cfg, stream, window, token_chars, max_tokens=0, seed=0):
    """(mean loss in nats per token, bits per character) on a token stream: every token after the
    first is predicted once, from those before it in its window of `window` tokens.

    The stream is cut into windows back to back; the last, shorter one takes what is left. With
    max_tokens, only a choice of max_tokens // window whole windows is scored, the same for a seed.
    """
    inputs, targets = stream[:-1], stream[1:]
    full = len(targets) // window * window
    rows_in, rows_out = inputs[:full].reshape(-1, window), targets[:full].reshape(-1, window)  # (full / window, window)
    rows, tail = np.arange(len(rows_in)), full < len(targets)
    if 0 < max_tokens < len(targets):
        rows, tail = np.sort(np.random.default_rng(seed).permutation(len(rows))[:max(1, max_tokens // window)]), False
    batches = [(rows_in[rows[at: at + EVAL_BATCH]], rows_out[rows[at: at + EVAL_BATCH]])
               for at in range(0, len(rows), EVAL_BATCH)]
    if tail:
        batches.append((inputs[None, full:], targets[None, full:]))  # (1, what is left)
    total_nats, tokens, characters = 0.0, 0, 0
    for batch_inputs, batch_targets in batches:
        logits, _ = forward(params, batch_inputs, cfg)
        mean_nats, _ = cross_entropy_forward(logits.reshape(-1, cfg.vocab_size), batch_targets.reshape(-1))
        total_nats += mean_nats * batch_targets.size
        tokens += batch_targets.size
        characters += token_chars[batch_targets].sum()
    # bits per character = total nats / ln 2 / the characters the predicted tokens spell
    return total_nats / tokens, total_nats / math.log(2) / characters


def sample_text(params, cfg, tokenizer, kind, s, rng):
    """A short continuation of SAMPLE_PROMPT (or of the corpus's first character), up to where a reply
    of a model of this kind of corpus ends (generate.reply_end), as talk.py would print it."""
    prompt, _ = tokenizer.encode_known(SAMPLE_PROMPT)
    prompt = prompt or [0]
    sampling = Sampling(s.temperature, s.top_k, s.top_p)
    written = tokenizer.decode(list(generate(params, cfg, prompt, s.max_new_tokens, s.seq_len, sampling, rng)))
    return tokenizer.decode(prompt) + written[:reply_end(written, kind)]


def print_out(text):
    """Print text on stdout; where stdout is a pipe whose reader has gone (`python train.py | tee log`,
    whose tee the same Ctrl-C stops), go on without it, so that the run still saves what it must."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # what is left to print goes nowhere


def duration(seconds):
    """Seconds as minutes and seconds, rounded to the second first, so 59.7 s is a minute, never "60 s".

    Example: duration(239.6) -> "4 min 00 s"
    """
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"


class Progress:
    """One line about training on stderr: redrawn in place on a terminal, else a new line every
    LOG_SECONDS, so that a log file holds a line a person can read, not thousands of redraws.

    Its speed, and so the time to go, is that of the last RATE_SECONDS: a machine that gets busier
    or quieter halfway changes the estimate within half a minute, where the whole run's mean would
    lag behind for the rest of the run."""

    def __init__(self, total_steps, first_step, tokens_per_step):
        self.total, self.tokens_per_step = total_steps, tokens_per_step
        self.terminal = sys.stderr.isatty()
        self.shown = time.perf_counter()
        self.recent = collections.deque([(self.shown, first_step)])  # (time, step) of the last RATE_SECONDS
        self.drawn = False

    def rate(self, now, step):
        """Record that step was done at time now; the steps per second since the oldest recent step."""
        self.recent.append((now, step))
        while len(self.recent) > 2 and now - self.recent[1][0] >= RATE_SECONDS:
            self.recent.popleft()  # the next oldest still starts a span of RATE_SECONDS or more
        then, step_then = self.recent[0]
        return (step - step_then) / (now - then)

    def update(self, step, loss, lr):
        now = time.perf_counter()
        rate = self.rate(now, step)
        if now - self.shown < (0.2 if self.terminal else LOG_SECONDS):
            return
        self.shown = now
        line = (f"step {step:,}/{self.total:,}  loss {loss:.3f}  lr {lr:.2e}  {rate * self.tokens_per_step:,.0f} tok/s"
                f"  {duration((self.total - step) / rate)} to go")
        if self.terminal:
            print(f"\r{line}\033[K", end="", file=sys.stderr, flush=True)
            self.drawn = True
        else:
            print(line, file=sys.stderr, flush=True)

    def write(self, text):
        """Print lines that stay, below the progress line."""
        self.close()
        print_out(text)

    def close(self):
        if self.drawn:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
            self.drawn = False


# --- one run ----------------------------------------------------------------------------------

@dataclass
class Run:
    """Everything a run changes as it goes, and where it writes."""
    folder: Path  # runs/<start time>/: resume state, best model, losses
    home: Path  # where the latest good model is copied for talk.py; None for a run folder moved elsewhere
    params: dict
    opt: Adam
    total_steps: int
    steps_per_epoch: int
    step: int = 0
    step_losses: list = None
    history: list = None  # one entry per validation: step, train_loss, val_loss, val_bpc, seconds
    order: tuple = (None, None)  # (epoch, that epoch's order of the training windows)

    def best(self):
        return min(self.history, key=lambda entry: entry["val_loss"]) if self.history else None


def validation_due(run, s):
    """Validations come every eval_interval steps of a run in steps, at each epoch's end of a run in
    epochs, and at its last step."""
    if run.step == run.total_steps:
        return True
    return run.step % (s.eval_interval if s.max_steps else run.steps_per_epoch) == 0


def train_step(run, parallel, data, cfg, s):
    """One optimizer step on the next batch of windows; returns its loss and learning rate."""
    epoch, index = divmod(run.step, run.steps_per_epoch)
    if run.order[0] != epoch:  # each epoch visits every window once, in an order of its own
        run.order = epoch, np.random.default_rng([s.seed, epoch]).permutation(len(data.inputs))
    batch = run.order[1][index * s.batch_size: (index + 1) * s.batch_size]
    with np.errstate(all="ignore"):  # a diverging run is caught here, in one line, not in numpy's warnings
        loss, grads = parallel.loss_and_grads(run.params, data.inputs[batch], data.targets[batch], cfg)
        norm = clip_grad_norm(grads, s.grad_clip)
        if not (math.isfinite(loss) and math.isfinite(norm)):
            raise Diverged(f"the loss became {loss} (gradient norm {norm}) at step {run.step + 1}")
        run.step += 1
        lr = lr_schedule(run.step, run.total_steps, s.lr_max, s.lr_min, s.warmup_steps)
        run.opt.step(run.params, grads, lr)
    run.step_losses.append(loss)
    return loss, lr


class Diverged(InputError):
    """The loss or the gradient stopped being a finite number."""


def validate(run, data, cfg, s):
    """Score the held-out text and record it in the history; returns the new entry."""
    started = time.perf_counter()
    val_loss, val_bpc = evaluate(run.params, cfg, data.val_stream, s.seq_len, data.token_chars, s.eval_tokens, s.seed)
    since = run.history[-1]["step"] if run.history else 0
    entry = {"step": run.step, "train_loss": float(np.mean(run.step_losses[since:])), "val_loss": val_loss,
             "val_bpc": val_bpc, "seconds": round(time.perf_counter() - started, 2)}
    run.history.append(entry)
    return entry


def model_meta(run, s, corpus_info, processes):
    best = run.best()
    return {"settings": vars(s), "seed": s.seed, "steps": run.step, "best_step": best["step"], "run": run.folder.name,
            "history": run.history,
            "processes": processes,  # the slices of each batch: they decide the gradients' last bits
            "corpus": corpus_info,
            "versions": {"python": sys.version.split()[0], "numpy": np.__version__, "pandas": pd.__version__},
            "trained_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def save_best(run, cfg, tokenizer, meta):
    """The run's best model into its folder, then onto the home folder's top for talk.py.

    The run's copy is whole before the top's is touched, so a kill at any moment leaves one of them
    whole: checkpoint.load falls back to the newest whole run where the top is caught mid-write.
    """
    checkpoint.save_model(run.folder, run.params, cfg, tokenizer, meta)
    if run.home is not None:
        checkpoint.keep_earlier_model(run.home, run.folder.name)
        checkpoint.save_model(run.home, run.params, cfg, tokenizer, meta)


def save_progress(run, corpus_sha256, s):
    progress = {"step": run.step, "total_steps": run.total_steps, "settings": vars(s),
                "corpus_sha256": corpus_sha256, "step_losses": run.step_losses, "history": run.history}
    checkpoint.save_resume_state(run.folder, run.params, run.opt.state(), progress)
    write_losses(run)


def write_losses(run):
    """losses.csv: one row per step (training loss), with the validation figures where they were taken."""
    table = pd.DataFrame({"step": np.arange(1, len(run.step_losses) + 1), "train_loss": run.step_losses})
    if run.history:
        table = table.merge(pd.DataFrame(run.history)[["step", "val_loss", "val_bpc"]], on="step", how="left")
    write_atomically(run.folder / "losses.csv", table.to_csv(index=False).encode("utf-8"))
    plot_losses(run.folder, table)


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
        validated = table.dropna(subset=["val_loss"])
        axes.plot(validated["step"], validated["val_loss"], "o-", label="validation")
    axes.set_xlabel("step")
    axes.set_ylabel("cross-entropy (nats per token)")
    axes.legend()
    figure.tight_layout()
    figure.savefig(folder / "losses.png.tmp.png")
    plt.close(figure)
    (folder / "losses.png.tmp.png").replace(folder / "losses.png")


# --- the whole job ----------------------------------------------------------------------------

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


def where_the_model_is(run, home_before):
    """One line: which model talk.py will read now."""
    best = run.best()
    if best is not None:
        return f"the best model of this run (step {best['step']:,}) is in {run.home or run.folder}/"
    if home_before:
        return f"{run.home}/ still holds the model it held before this run"
    return "this run had not validated a model yet, so there is none to talk to"


def train(s, resume_from=None, stop=None, name=None):
    """The whole job: a new run in s.checkpoint, named name (None: by its start time and corpus), or
    the run in the folder resume_from continued. Returns the run's folder."""
    stop = stop or StopRequest()
    home, started_at = Path(s.checkpoint), datetime.now(timezone.utc)
    if name is not None and resume_from is None:
        checkpoint.check_run_name(home, name)  # before the work of reading the corpus; checked again at mkdir
    if s.recipe:
        print(f"recipe {s.recipe}: " + ", ".join(f"{k} {v}" for k, v in config.RECIPES[s.recipe].items()))
    path = corpus_file(s)
    corpus = read_corpus(path, s)
    corpus_sha256 = checkpoint.sha256_of(path)
    print(f"corpus: {corpus.described}, read from {path}")
    data = prepare_data(corpus, s)
    cfg = ModelConfig(data.tokenizer.vocab_size, s.context_len, s.emb_dim, s.num_heads, s.num_layers, s.ff_dim,
                      s.ln_eps)
    corpus_info = {"path": str(path), "sha256": corpus_sha256, "kind": corpus.kind,
                   "characters": len(corpus.train_text) + len(corpus.val_text),
                   "validation_characters": len(corpus.val_text)}
    if resume_from is not None:
        home = checkpoint.home_of(resume_from)
    with checkpoint.locked(resume_from if home is None else home):
        run_name = checkpoint.default_run_name(path, started_at) if name is None else name
        run = start_run(s, cfg, data, home, resume_from, corpus_sha256, (run_name, name is not None))
        try:
            run_loop(run, s, cfg, data, corpus_info, corpus_sha256, stop)
        finally:
            if not any(run.folder.iterdir()):  # a run that stopped before it saved anything leaves no folder
                run.folder.rmdir()
    return run.folder


def start_run(s, cfg, data, home, resume_from, corpus_sha256, name):
    """A fresh run in a new folder home/runs/<name[0]>/ (name[1]: the person gave that name), or the one
    saved in resume_from, taken up."""
    params = init_params(cfg, np.random.default_rng(s.seed), dtype=np.dtype(s.dtype))
    opt = Adam(params, s.beta1, s.beta2, s.adam_eps, s.weight_decay)
    steps_per_epoch = math.ceil(len(data.inputs) / s.batch_size)
    total_steps = s.max_steps or s.epochs * steps_per_epoch
    if resume_from is None:  # (checkpoint.locked has found home writable)
        return Run(checkpoint.new_run_folder(home, *name), home, params, opt, total_steps, steps_per_epoch, 0, [], [])
    saved_params, opt_state, progress = checkpoint.load_resume_state(resume_from, cfg)
    if progress["corpus_sha256"] != corpus_sha256:
        raise InputError(f"the corpus {s.corpus_path} changed since the run in {resume_from}/ was interrupted; "
                         f"start a new run without --resume")
    for name in params:
        params[name][...] = saved_params[name]
    opt.load_state(opt_state)
    print(f"resuming the run in {resume_from}/ at step {progress['step']:,} of {total_steps:,}")
    return Run(Path(resume_from), home, params, opt, total_steps, steps_per_epoch, progress["step"],
               progress["step_losses"], progress["history"])


def run_loop(run, s, cfg, data, corpus_info, corpus_sha256, stop):
    """Steps until the run is done or stopped; validates and saves on the way."""
    processes = s.processes or processes_for(cfg, s.batch_size, s.seq_len)
    n_params = sum(p.size for p in run.params.values())
    length = f"{run.total_steps:,} steps" if s.max_steps else f"{s.epochs} epochs of {run.steps_per_epoch:,} steps"
    print(f"model: {n_params:,} parameters ({s.dtype}); {len(data.inputs):,} training windows, "
          f"{len(data.val_stream):,} validation tokens; {length} on {processes} process{'es' * (processes > 1)}; "
          f"writing to {run.folder}/")
    home_before = run.home is not None and (run.home / "model.json").is_file()
    previous_handler = signal.signal(signal.SIGINT, stop)
    progress = Progress(run.total_steps, run.step, s.batch_size * s.seq_len)
    started = time.perf_counter()
    try:
        with DataParallel(processes) as parallel:
            while run.step < run.total_steps:
                loss, lr = train_step(run, parallel, data, cfg, s)
                progress.update(run.step, loss, lr)
                if validation_due(run, s):
                    end_validation(run, s, cfg, data, corpus_info, processes, progress)
                    save_progress(run, corpus_sha256, s)
                if stop.check(run.step) and run.step < run.total_steps:
                    save_progress(run, corpus_sha256, s)
                    progress.close()
                    said = (f"interrupted after step {run.step:,} of {run.total_steps:,}; the state is saved in "
                            f"{run.folder}/. Resume with: python train.py --resume{resume_flag(run, s)}\n"
                            f"{where_the_model_is(run, home_before)}")
                    print(said, file=sys.stderr, flush=True)  # the Ctrl-C stops the tee of `| tee log` too
                    if not sys.stdout.isatty():  # and in a log, where stdout goes to one; on a terminal, once
                        print_out(f"\n{said}")
                    raise SystemExit(130)
    except Diverged as err:
        raise Diverged(f"{err}; training stopped. {where_the_model_is(run, home_before)}. "
                       f"Try a smaller --lr_max or --grad_clip") from None
    finally:
        progress.close()
        signal.signal(signal.SIGINT, previous_handler)
    best = run.best()
    print(f"done in {time.perf_counter() - started:.0f} s: best validation loss {best['val_loss']:.4f} "
          f"({best['val_bpc']:.3f} bits/char) at step {best['step']:,}; {where_the_model_is(run, home_before)}")


def end_validation(run, s, cfg, data, corpus_info, processes, progress):
    """Validate, keep the model if it is the best so far, and report with a sample."""
    entry = validate(run, data, cfg, s)
    is_best = run.best() is entry
    if is_best:
        save_best(run, cfg, data.tokenizer, model_meta(run, s, corpus_info, processes))
    sample = sample_text(run.params, cfg, data.tokenizer, corpus_info["kind"], s,
                         np.random.default_rng([s.seed, run.step, 1]))
    progress.write(f"step {run.step:>6,}: train {entry['train_loss']:.4f}  val {entry['val_loss']:.4f}  "
                   f"({entry['val_bpc']:.3f} bits/char, scored in {entry['seconds']:.1f} s)"
                   f"{'  best, saved' if is_best else ''}\n              sample: {sample!r}")


def resume_flag(run, s):
    """What to add to `python train.py --resume` to find this run again."""
    if run.home is not None and Path(s.checkpoint) == Path(config.defaults()["checkpoint"]):
        return ""
    return f" --checkpoint {run.folder}"


def resume_settings(s, argv):
    """(the settings of the run being resumed, its folder); a setting given on the command line must agree."""
    folder = checkpoint.run_to_resume(Path(s.checkpoint))
    saved = checkpoint.read_json(folder / "resume.json")["settings"]
    for name in config.given(argv) - {"checkpoint", "resume"}:
        if name in saved and saved[name] != getattr(s, name):
            raise InputError(f"--resume continues with the settings of the interrupted run ({name} = "
                             f"{saved[name]!r}); drop --{name}")
    resumed = config.settings(types.SimpleNamespace(**{**vars(s), **saved}))
    resumed.checkpoint = s.checkpoint
    return resumed, folder


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = config.parser("Train the model on a corpus and save checkpoints (settings from config.py).")
    new_or_resumed = p.add_mutually_exclusive_group()
    new_or_resumed.add_argument("--resume", action="store_true",
                                help="continue an interrupted run: the one in --checkpoint, or the latest in its runs/")
    new_or_resumed.add_argument("--name", default=argparse.SUPPRESS,  # absent where not given; --name "" is refused
                                help="the run's name, its folder in checkpoints/runs/, by which talk.py and "
                                     "generate.py find it (--checkpoint NAME); default: its UTC start time and the "
                                     "corpus's name, such as 20261201-0230-tinyshakespeare")
    args = config.parse(p, argv)
    s = config.settings(args)
    if args.resume:
        s, folder = resume_settings(s, argv)
        train(s, resume_from=folder)
    else:
        train(s, name=getattr(args, "name", None))


if __name__ == "__main__":
    config.run(main)
