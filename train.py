"""Train the model: corpus -> tokenizer -> windows -> AdamW steps -> the best model kept.

    python train.py                                     # config.py's settings, on data/sample.csv
    python train.py --recipe book --corpus_path my.txt --name mybook  # a book of your own, its recipe, a name
    python train.py --resume mybook                     # continue an interrupted run (no name: the latest one)

The corpus (corpus.py) is a CSV, whose rows are documents, or any other file as one exact text. Its
training part becomes one token stream, cut into windows of seq_len + 1 tokens every `stride` tokens:
the first seq_len are the input, the last seq_len the targets. The held-out part is scored whole at
each validation, and the model with the best validation loss is kept in the run's folder,
checkpoints/runs/<name>/ (runs.py), where talk.py finds it. The loop runs in this process, so a
breakpoint() in a backward stops here; --processes N shares each batch out to N processes (parallel.py).
"""

import argparse
import functools
import math
import sys
import time
import types
from pathlib import Path

import numpy as np

import checkpoint
import config
import gpt2
import prompting
import runs
from corpus import corpus_file, make_windows, plural, read_corpus, token_lengths
from errors import InputError
from generate import Sampling, generate
from optim import Adam, clip_grad_norm, lr_schedule
from parallel import DataParallel, processes_for
from tokenizer import BPETokenizer
from transformer import ModelConfig, cross_entropy_forward, forward, init_params, loss_and_grads, pack

EVAL_BATCH = 64  # validation windows per forward pass, fewer where their logits would pass EVAL_LOGITS
EVAL_LOGITS = 2 ** 24  # 64 MB of float32: two windows of 128 tokens of GPT-2
SAMPLE_PROMPT = "The "


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
    size = min(EVAL_BATCH, max(1, EVAL_LOGITS // (window * cfg.vocab_size)))
    batches = [(rows_in[rows[at: at + size]], rows_out[rows[at: at + size]]) for at in range(0, len(rows), size)]
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
    of a model of this kind of corpus ends (prompting.reply_end), as talk.py would print it."""
    prompt = tokenizer.encode_known(SAMPLE_PROMPT)[0] or [0]
    sampling = Sampling(s.temperature, s.top_k, s.top_p)
    written = tokenizer.decode(list(generate(params, cfg, prompt, s.max_new_tokens, s.seq_len, sampling, rng)))
    return tokenizer.decode(prompt) + written[:prompting.reply_end(written, kind)]


@functools.lru_cache(maxsize=1)
def epoch_order(seed, epoch, num_windows):  # -> (num_windows,): each epoch visits every window once
    return np.random.default_rng([seed, epoch]).permutation(num_windows)


def start_model(corpus, s):
    """(params, cfg, tokenizer): GPT-2's, read from the folder s.init_from (gpt2.py; the model's shape is its
    own), or a tokenizer learned from the whole corpus and fresh parameters of config.py's shape."""
    if s.init_from:
        params, cfg, tokenizer = gpt2.load(s.init_from)
        gpt2.check_settings(s, cfg, s.init_from)
        return pack(params, np.dtype(s.dtype)), cfg, tokenizer
    tokenizer = BPETokenizer.train([corpus.train_text, corpus.val_text], s.num_merges)
    print(f"tokenizer: {plural(len(tokenizer.alphabet), 'character')} + {plural(len(tokenizer.merges), 'merge')} = "
          f"{tokenizer.vocab_size} tokens{'' if len(tokenizer.merges) == s.num_merges else ' (no pair is left twice)'}")
    cfg = ModelConfig(tokenizer.vocab_size, s.context_len, s.emb_dim, s.num_heads, s.num_layers, s.ff_dim, s.ln_eps)
    return init_params(cfg, np.random.default_rng(s.seed), dtype=np.dtype(s.dtype)), cfg, tokenizer


def prepare_data(corpus, tokenizer, s):
    """(inputs, targets, val_stream): the training windows (num_windows, seq_len), each input's targets shifted
    by one token, and the held-out text's ids, scored whole at each validation."""
    inputs, targets = make_windows(np.array(tokenizer.encode(corpus.train_text)), s.seq_len, s.stride, "training")
    val_stream = np.array(tokenizer.encode(corpus.val_text))
    if len(val_stream) < 2:
        raise InputError("the validation text is a single token; give a longer corpus or a larger val_fraction")
    return inputs, targets, val_stream


class Diverged(InputError):
    """The loss or the gradient stopped being a finite number."""


def train(s, resume_from=None, name=None):
    """The whole job: a new run in s.checkpoint, named name (None: by its start time and corpus), or the
    run in the folder resume_from continued. Returns the run's folder."""
    Sampling(s.temperature, s.top_k, s.top_p)  # the settings of the samples, checked by their rules before the work
    if s.recipe:
        print(f"recipe {s.recipe}: " + ", ".join(f"{k} {v}" for k, v in config.RECIPES[s.recipe].items()))
    if name is not None:
        runs.check_run_name(s.checkpoint, name)  # before the work of reading the corpus
    path = corpus_file(s.corpus_path, config.defaults()["corpus_path"])
    corpus = read_corpus(path, s.corpus_column, s.max_rows, s.val_fraction, s.seed)
    print(f"corpus: {corpus.described}, read from {path}")
    params, cfg, tokenizer = start_model(corpus, s)
    inputs, targets, val_stream = data = prepare_data(corpus, tokenizer, s)
    opt = Adam(params, s.beta1, s.beta2, s.adam_eps, s.weight_decay)
    total_steps = s.max_steps or s.epochs * math.ceil(len(inputs) / s.batch_size)
    run = runs.start(s, corpus, cfg, total_steps, resume_from, name, params, opt)
    print(f"model: {sum(p.size for p in params.values()):,} parameters ({s.dtype}); {len(inputs):,} training windows, "
          f"{len(val_stream):,} validation tokens; {plural(total_steps, 'step')}; writing to {run.folder}/")
    with runs.finishing(run), runs.locked(run.folder):
        loop(run, params, opt, cfg, tokenizer, data, s)
    best = run.best()
    stopped = "" if run.step == total_steps else (f"; stopped at step {run.step:,}: {s.patience} validations in a row "
                                                  f"did not beat it (patience)")
    print(f"done in {time.perf_counter() - run.started:.0f} s: best validation loss {best['val_loss']:.4f} "
          f"({best['val_bpc']:.3f} bits/char) at step {best['step']:,}{stopped}. Its model is in {run.folder}/: "
          f"python talk.py --checkpoint {run.folder.name}")
    return run.folder


def loop(run, params, opt, cfg, tokenizer, data, s):
    """The steps: a batch of windows, its loss and gradients, clipping, the learning rate, AdamW; every
    eval_interval steps (or each epoch) a validation, which keeps the best model and the state to resume."""
    (inputs, targets, val_stream), token_chars = data, token_lengths(tokenizer)
    steps_per_epoch = math.ceil(len(inputs) / s.batch_size)
    progress = runs.Progress(run.total_steps, run.step, s.batch_size * s.seq_len)
    processes = s.processes or processes_for(cfg, s.batch_size, s.seq_len)
    with DataParallel(processes) as parallel, runs.StopRequest().installed() as stop, np.errstate(all="ignore"):
        grads_of = parallel.loss_and_grads if processes > 1 else loss_and_grads  # one: a traceback ends in yours
        while not run.done:
            epoch, index = divmod(run.step, steps_per_epoch)
            batch = epoch_order(s.seed, epoch, len(inputs))[index * s.batch_size: (index + 1) * s.batch_size]
            loss, grads = grads_of(params, inputs[batch], targets[batch], cfg)
            norm = clip_grad_norm(grads, s.grad_clip)
            if not (math.isfinite(loss) and math.isfinite(norm)):
                raise Diverged(f"the loss became {loss} (gradient norm {norm}) at step {run.step + 1}; training "
                               f"stopped. {run.where_the_model_is()}. Try a smaller --lr_max or --grad_clip")
            run.step += 1
            lr = lr_schedule(run.step, run.total_steps, s.lr_max, s.lr_min, s.warmup_steps)
            opt.step(params, grads, lr)
            run.step_losses.append(loss)
            progress.update(run.step, loss, lr)
            if run.step == run.total_steps or run.step % (s.eval_interval if s.max_steps else steps_per_epoch) == 0:
                val_loss, val_bpc = evaluate(params, cfg, val_stream, s.seq_len, token_chars, s.eval_tokens, s.seed)
                is_best = run.validated(val_loss, val_bpc)
                if is_best:
                    checkpoint.save_model(run.folder, params, cfg, tokenizer, run.model_meta(s, processes))
                sample = sample_text(params, cfg, tokenizer, run.corpus["kind"], s,
                                     np.random.default_rng([s.seed, run.step, 1]))
                progress.write(f"step {run.step:>6,}: train {run.history[-1]['train_loss']:.4f}  val {val_loss:.4f}  "
                               f"({val_bpc:.3f} bits/char){'  best, saved' if is_best else ''}\n"
                               f"              sample: {sample!r}")
                run.done = run.step == run.total_steps or 0 < s.patience <= run.validations_since_best()
                run.save_progress(params, opt, s)
            if stop.requested and not run.done:
                run.save_progress(params, opt, s)
                progress.close()
                runs.stopped_by_ctrl_c(run, s)
    progress.close()


def resume_settings(s, argv, name):
    """(the settings of the run being resumed, its folder); a setting given on the command line must agree."""
    folder = runs.run_to_resume(Path(s.checkpoint), name or None)
    saved = checkpoint.read_progress(folder)["settings"]
    for setting in config.given(argv) - {"checkpoint", "resume"}:
        if setting in saved and saved[setting] != getattr(s, setting):
            raise InputError(f"--resume continues with the settings of the interrupted run ({setting} = "
                             f"{saved[setting]!r}); drop --{setting}")
    resumed = config.settings(types.SimpleNamespace(**{**vars(s), **saved}))
    resumed.checkpoint = s.checkpoint
    return resumed, folder


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = config.parser("Train the model on a corpus and save checkpoints (settings from config.py).")
    new_or_resumed = p.add_mutually_exclusive_group()
    new_or_resumed.add_argument("--resume", nargs="?", const="", default=None, metavar="NAME",
                                help="continue the interrupted run NAME (or the start of its name); without NAME, "
                                     "the latest interrupted run in --checkpoint's runs/")
    new_or_resumed.add_argument("--name", default=argparse.SUPPRESS,  # absent where not given; --name "" is refused
                                help="the run's name, its folder in checkpoints/runs/, by which talk.py and "
                                     "generate.py find it (--checkpoint NAME); default: its UTC start time and the "
                                     "corpus's name, such as 20261201-0230-sample")
    args = config.parse(p, argv)
    s = config.settings(args)
    if args.resume is not None:
        s, folder = resume_settings(s, argv, args.resume)
        train(s, resume_from=folder)
    else:
        train(s, name=getattr(args, "name", None))


if __name__ == "__main__":
    config.run(main)
