"""Train the model: corpus -> tokenizer -> windows -> AdamW steps -> the best model kept.

    python train.py                                     # config.py's settings, on data/sample.csv
    python train.py --minutes 10 --corpus_path my.txt   # the best model this machine trains in 10 minutes
    python train.py --recipe book --corpus_path my.txt --name mybook  # a book of your own, its recipe, a name
    python train.py --resume mybook                     # continue an interrupted run (no name: the latest one)
    python train.py --exercises derive                  # the GPT you wrote in exercises/derive/ (docs/exercises.md)

The corpus is a CSV, whose rows are documents, or any other file as one exact text. Its training
part becomes one token stream, cut into windows of seq_len + 1 tokens every `stride` tokens: the
first seq_len are the input, the last seq_len the targets. Each step takes a batch of windows, its
loss and gradients (transformer.loss_and_grads), clips them and takes one AdamW step (clip_grad_norm
and Adam, in transformer.py beside the model they update). The held-out part is scored whole at each
validation, and the model with the best validation loss is kept in the run's folder,
checkpoints/runs/<name>/, where talk.py finds it. The loop runs in this process, so a breakpoint() in
a backward stops here, also where threads share each batch (a larger model's); --processes N shares it
out to N processes. Reading the corpus, the run folders and the threads and processes are engineering/'s.
"""

import argparse
import functools
import math
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

import config
from engineering.corpus import corpus_file, make_windows, read_corpus, token_lengths
from engineering.errors import InputError, run_script
from engineering.settings import SettingsParser, given, model_config
from engineering.wording import plural, talk_command
from tokenizer import BPETokenizer
from transformer import (Adam, Sampling, clip_grad_norm, cross_entropy_forward, forward, generate,
                         init_params, loss_and_grads, lr_schedule, pack)

EVAL_BATCH = 64  # validation windows per forward pass, fewer where their logits would pass EVAL_LOGITS
EVAL_LOGITS = 2 ** 24  # 64 MB of float32: two windows of 128 tokens of GPT-2
SAMPLE_PROMPT = "The "


def train(settings, resume_from=None, name=None, given=()):
    """The whole job: a new run in settings.checkpoint, named name (None: by its start time and corpus), or the
    run in the folder resume_from continued. given: the settings the person typed. Returns the run's folder."""
    # the run's engineering is imported where it is used, so that `import train` (the tests, which read the loop's
    # functions) loads the model and the loop's pieces, not the run folders
    from engineering import gpt2, learners, planner, prompting, run_log, runs

    budget = planner.Budget(settings.minutes if resume_from is None else 0)  # --minutes: the clock starts here
    prompting.sampling(settings.temperature, settings.top_k, settings.top_p)  # the samples' settings, checked first
    settings = learners.kept_in_this_process(settings)  # --exercises: your functions are in this process only
    if settings.init_from:  # the model's shape is the GPT-2's, whatever config.py or a recipe says
        settings = gpt2.adopt_shape(settings, gpt2.read_config(settings.init_from), settings.init_from, given)
    if settings.recipe:
        print(recipe_line(settings, given))
    if name is not None:
        runs.check_run_name(settings.checkpoint, name)  # before the work of reading the corpus
    path = corpus_file(settings.corpus_path, config.corpus_path)
    corpus = read_corpus(path, settings.corpus_column, settings.max_rows, settings.val_fraction, settings.seed,
                         settings.val_path)
    print(f"corpus: {corpus.described}, read from {path}")
    if resume_from is not None:
        run_log.check_texts(resume_from, corpus)  # the run's own texts, before the tokenizer learns from them
    recipe = config.RECIPES.get(settings.recipe, {})
    settings = budget.plan(settings, corpus, set(given), recipe, loss_and_grads)  # the shape best in the time, ...
    params, cfg, tokenizer = start_model(corpus, settings)
    data = prepare_data(corpus, tokenizer, settings)
    settings = budget.fit(settings, len(data.val_stream), set(given))  # ... and the steps that fit the time left
    opt = Adam(params, settings.beta1, settings.beta2, settings.adam_eps, settings.weight_decay)
    total_steps = settings.max_steps or settings.epochs * math.ceil(len(data.inputs) / settings.batch_size)
    run = run_log.start(settings, corpus, cfg, total_steps, resume_from, name, params, opt, budget)
    print(f"model: {sum(tensor.size for tensor in params.values()):,} parameters ({settings.dtype}); "
          f"{plural(len(data.inputs), 'training window')}, {len(data.val_stream):,} validation tokens; "
          f"{plural(total_steps, 'step')}; writing to {run.folder}/")
    loop(run, params, opt, cfg, tokenizer, data, settings)
    best = run.best()
    stopped = "" if run.step == run.total_steps else f"; stopped at step {run.step:,}: " + (
        "out of time" if budget.spent else f"{plural(settings.patience, 'validation')} in a row did not beat it "
                                           f"(patience)")
    expected = budget.outcome(best["val_bpc"], run.step)  # --minutes: the bits/char it expected, and reached
    print(f"done in {time.perf_counter() - run.started:.0f} s: best validation loss {best['val_loss']:.4f} "
          f"({best['val_bpc']:.3f} bits/char) at step {best['step']:,}{stopped}{expected}. Its model is in "
          f"{run.folder}/: {talk_command(run.folder)}")
    return run.folder


def loop(run, params, opt, cfg, tokenizer, data, settings):
    """The steps: a batch of windows, its loss and gradients, clipping, the learning rate, AdamW; every
    eval_interval steps (or each epoch) a validation, which keeps the best model, until the last step, or
    until `patience` validations in a row have not beaten the best, or (--minutes) until the time is spent.
    The run's files, the progress line, Ctrl-C, the processes and the clock are the log's
    (engineering/run_log.py), the one door out of this loop.
    data: the training windows, their targets, the held-out stream and the corpus's kind (Data)."""
    from engineering import run_log

    inputs, targets, token_chars = data.inputs, data.targets, token_lengths(tokenizer)
    batch_size, steps_per_epoch = settings.batch_size, math.ceil(len(inputs) / settings.batch_size)
    validate_every = settings.eval_interval if settings.max_steps else steps_per_epoch
    step, step_losses, history, total_steps = run.step, run.step_losses, run.history, run.total_steps  # 0, or resumed
    best_val_loss, since_best = best_so_far(history)
    # numpy's overflow warnings are let through silently: a loss or norm that is not finite stops the run below
    with run_log.opened(run, params, opt, cfg, tokenizer, settings, loss_and_grads) as log, np.errstate(all="ignore"):
        while not log.stop_asked():  # Ctrl-C ends the loop after a whole step; the log saves the state to resume
            epoch, index = divmod(step, steps_per_epoch)
            batch = epoch_order(settings.seed, epoch, len(inputs))[index * batch_size: (index + 1) * batch_size]
            loss, grads = log.loss_and_grads(params, inputs[batch], targets[batch], cfg)
            norm = clip_grad_norm(grads, settings.grad_clip)
            if not (math.isfinite(loss) and math.isfinite(norm)):
                raise Diverged(f"the loss became {loss} (gradient norm {norm}) at step {step + 1}; training "
                               f"stopped. {log.where_the_model_is()}. Try a smaller --lr_max or --grad_clip")
            step += 1
            lr = lr_schedule(step, total_steps, settings.lr_max, settings.lr_min, settings.warmup_steps)
            opt.step(params, grads, lr)
            del grads  # so that the next step's backward, not this spent buffer, has its memory
            step_losses.append(loss)
            log.stepped(step, loss, lr)
            out_of_time = log.out_of_time()  # --minutes: the time planned for the steps holds no other one
            if step == total_steps or step % validate_every == 0 or out_of_time:
                val_loss, val_bpc = evaluate(params, cfg, data.val_stream, settings.seq_len, token_chars,
                                             settings.eval_tokens, settings.seed)
                trained_since = history[-1]["step"] if history else 0  # the steps since the last validation
                history.append({"step": step, "train_loss": float(np.mean(step_losses[trained_since:])),
                                "val_loss": val_loss, "val_bpc": val_bpc})
                since_best = 0 if val_loss < best_val_loss else since_best + 1  # validations since the best one
                best_val_loss = min(best_val_loss, val_loss)
                done = step == total_steps or 0 < settings.patience <= since_best or out_of_time
                sample = sample_text(params, cfg, tokenizer, data.kind, settings, step)
                log.validated(step, since_best == 0, done, sample)  # the best model saved, and the state to resume
                if done:
                    return
                total_steps = log.steps_that_fit(step, total_steps)  # --minutes: the cosine ends where the time does


def best_so_far(history):
    """(the best validation loss of a run's history, the validations since it): inf and 0 for a new run.

    Example: val_loss 3.0, 2.5, 2.7, 2.6 -> (2.5, 2)
    """
    val_losses = [entry["val_loss"] for entry in history]
    if not val_losses:
        return math.inf, 0
    best = min(val_losses)
    return best, len(val_losses) - 1 - val_losses.index(best)


# ---------------------------------------------------------------------------------------------
# What the loop measures and draws, and what it starts from.

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


def sample_text(params, cfg, tokenizer, kind, settings, step):
    """A short continuation of SAMPLE_PROMPT (or of the corpus's first character), up to where a reply
    of a model of this kind of corpus ends (reply_end), as talk.py would print it; drawn from the seed and
    the step, so a resumed run draws the sample it would have drawn."""
    from engineering.prompting import reply_end

    rng = np.random.default_rng([settings.seed, step, 1])
    prompt = tokenizer.encode_known(SAMPLE_PROMPT)[0] or [0]
    sampling = Sampling(settings.temperature, settings.top_k, settings.top_p)
    new_ids = generate(params, cfg, prompt, settings.max_new_tokens, settings.seq_len, sampling, rng)
    written = tokenizer.decode(list(new_ids))
    return tokenizer.decode(prompt) + written[:reply_end(written, kind)]


@functools.lru_cache(maxsize=1)
def epoch_order(seed, epoch, num_windows):  # -> (num_windows,): each epoch visits every window once
    return np.random.default_rng([seed, epoch]).permutation(num_windows)


def start_model(corpus, settings):
    """(params, cfg, tokenizer): GPT-2's, read from the folder settings.init_from (the model's shape is its own),
    or a tokenizer learned from the whole corpus and fresh parameters of config.py's shape."""
    if settings.init_from:
        from engineering import gpt2

        params, cfg, tokenizer = gpt2.load(settings.init_from)  # of the shape train() gave settings (adopt_shape)
        return pack(params, np.dtype(settings.dtype)), cfg, tokenizer
    tokenizer = BPETokenizer.train([corpus.train_text, corpus.val_text], settings.num_merges)
    all_merged = len(tokenizer.merges) == settings.num_merges
    print(f"tokenizer: {plural(len(tokenizer.alphabet), 'character')} + {plural(len(tokenizer.merges), 'merge')} = "
          f"{tokenizer.vocab_size} tokens{'' if all_merged else ' (no pair is left twice)'}")
    cfg = model_config(settings, tokenizer.vocab_size)  # the shape and today's options config.py gives
    return init_params(cfg, np.random.default_rng(settings.seed), dtype=np.dtype(settings.dtype)), cfg, tokenizer


class Data(NamedTuple):
    """What the loop trains and validates on."""
    inputs: np.ndarray  # (num_windows, seq_len): the training windows
    targets: np.ndarray  # (num_windows, seq_len): each input's targets, shifted by one token
    val_stream: np.ndarray  # the held-out text's ids, scored whole at each validation
    kind: str  # the corpus's kind, which says where a sample ends (prompting.reply_end)


def prepare_data(corpus, tokenizer, settings):
    """The Data of a corpus: its training text cut into windows, its held-out text's ids."""
    train_stream = np.array(tokenizer.encode(corpus.train_text))
    inputs, targets = make_windows(train_stream, settings.seq_len, settings.stride, "training")
    val_stream = np.array(tokenizer.encode(corpus.val_text))
    if len(val_stream) < 2:
        raise InputError(f"the held-out text {corpus.val_path} is a single token; give a longer one" if corpus.val_path
                         else "the validation text is a single token; give a longer corpus or a larger val_fraction")
    return Data(inputs, targets, val_stream, corpus.kind)


def recipe_line(settings, given):
    """The recipe's settings as they are in force: a value the person typed over the recipe's is marked, and
    so is one the model imposed (a GPT-2's own shape, adopt_shape).

    Example: recipe book with --num_merges 200 -> "recipe book: num_layers 1, ..., num_merges 200 (typed), ..."
    """
    recipe = config.RECIPES[settings.recipe]
    notes = {name: " (typed)" if name in given else " (the model's)" if value != getattr(settings, name) else ""
             for name, value in recipe.items()}
    return f"recipe {settings.recipe}: " + ", ".join(f"{name} {getattr(settings, name)}{notes[name]}"
                                                     for name in recipe)


class Diverged(InputError):
    """The loss or the gradient stopped being a finite number."""


def main(argv=None):
    from engineering import learners, runs  # the command line's own: `import train` stays light

    argv = sys.argv[1:] if argv is None else argv
    parser = SettingsParser(config, "Train the model on a corpus and save checkpoints (settings from config.py).")
    job = parser.add_mutually_exclusive_group()
    job.add_argument("--resume", nargs="?", const="", default=None, metavar="NAME",
                     help="continue the interrupted run NAME (or the start of its name); without NAME, the latest "
                          "interrupted run in --checkpoint's runs/. With a --max_steps or --epochs other than the "
                          "run's, the run is extended (or shortened) to that many steps, a finished run too: its "
                          "learning-rate schedule is then the cosine of the new length, so the rate at the step it "
                          "resumes from is where that cosine stands there (higher, when extended)")
    job.add_argument("--name", default=argparse.SUPPRESS,  # absent where not given; --name "" is refused
                     help="the run's name, its folder in checkpoints/runs/, by which talk.py and generate.py find it "
                          "(--checkpoint NAME); default: its UTC start time and the corpus's name, such as "
                          "20261201-0230-sample")
    job.add_argument("--list", action="store_true", help="list the runs in --checkpoint's runs/, and leave")
    job.add_argument("--remove", metavar="NAME", help="remove the run NAME, its folder with every file in it, after "
                                                      "asking, and leave")
    parser.add_argument("--yes", action="store_true", help="with --remove: remove without asking")
    learners.add_options(parser)
    args = parser.parse(argv)
    if args.yes and args.remove is None:
        raise InputError("--yes goes with --remove NAME (remove without asking); to train, leave --yes out")
    settings, typed = parser.settings(args), given(argv)
    if args.list:
        print(runs.runs_table(Path(settings.checkpoint)))
    elif args.remove is not None:
        runs.remove(Path(settings.checkpoint), args.remove, args.yes)
    else:
        with learners.in_place(args):  # --exercises TRACK: the functions you wrote, judged, in place
            if args.resume is not None:
                settings, folder = runs.resume_settings(settings, argv, args.resume, parser)
                train(settings, resume_from=folder, given=typed)
            else:
                train(settings, name=getattr(args, "name", None), given=typed)


if __name__ == "__main__":
    run_script(main)
