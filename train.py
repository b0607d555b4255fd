"""Train the model: corpus -> tokenizer -> windows -> AdamW steps -> the best model kept.

    python train.py                                     # config.py's settings, on data/sample.csv
    python train.py --recipe book --corpus_path my.txt --name mybook  # a book of your own, its recipe, a name
    python train.py --resume mybook                     # continue an interrupted run (no name: the latest one)
    python train.py --exercises derive                  # the GPT you wrote in exercises/derive/ (docs/exercises.md)

The corpus is a CSV, whose rows are documents, or any other file as one exact text. Its training
part becomes one token stream, cut into windows of seq_len + 1 tokens every `stride` tokens: the
first seq_len are the input, the last seq_len the targets. Each step takes a batch of windows, its
loss and gradients (transformer.loss_and_grads), clips them and takes one AdamW step (both below the
loop). The held-out part is scored whole at each validation, and the model with the best validation
loss is kept in the run's folder, checkpoints/runs/<name>/, where talk.py finds it. The loop runs in
this process, so a breakpoint() in a backward stops here; --processes N shares each batch out to N
processes. Reading the corpus, the run folders and the processes are engineering/'s.
"""

import argparse
import functools
import math
import sys
import time
from pathlib import Path

import numpy as np

import config
import gradcheck
from engineering import checkpoint, gpt2, learners, runs, settings
from engineering.corpus import corpus_file, make_windows, plural, read_corpus, token_lengths
from engineering.errors import InputError, run_script
from engineering.parallel import DataParallel, processes_for
from engineering.prompting import reply_end
from engineering.settings import SettingsParser
from generate import Sampling, generate
from tokenizer import BPETokenizer
from transformer import ModelConfig, cross_entropy_forward, flat_buffer, forward, init_params, loss_and_grads, pack

EVAL_BATCH = 64  # validation windows per forward pass, fewer where their logits would pass EVAL_LOGITS
EVAL_LOGITS = 2 ** 24  # 64 MB of float32: two windows of 128 tokens of GPT-2
SAMPLE_PROMPT = "The "


def train(s, resume_from=None, name=None, given=()):
    """The whole job: a new run in s.checkpoint, named name (None: by its start time and corpus), or the
    run in the folder resume_from continued. given: the settings the person typed. Returns the run's folder."""
    Sampling(s.temperature, s.top_k, s.top_p)  # the settings of the samples, checked by their rules before the work
    learners.keep_in_this_process(s)  # --exercises: the learner's functions are in this process only
    if s.init_from:  # the model's shape is the GPT-2's, whatever config.py or a recipe says
        gpt2.adopt_shape(s, gpt2.read_config(s.init_from), s.init_from, given)
    if s.recipe:
        print(recipe_line(s, given))
    if name is not None:
        runs.check_run_name(s.checkpoint, name)  # before the work of reading the corpus
    path = corpus_file(s.corpus_path, config.corpus_path)
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
          f"{checkpoint.talk_command(run.folder)}")
    return run.folder


def loop(run, params, opt, cfg, tokenizer, data, s):
    """The steps: a batch of windows, its loss and gradients, clipping, the learning rate, AdamW; every
    eval_interval steps (or each epoch) a validation, which keeps the best model and the state to resume."""
    (inputs, targets, val_stream), token_chars = data, token_lengths(tokenizer)
    steps_per_epoch = math.ceil(len(inputs) / s.batch_size)
    processes = s.processes or processes_for(cfg, s.batch_size, s.seq_len)
    tokens_per_step, may_stop_early = s.batch_size * s.seq_len, s.patience > 0
    with DataParallel(processes) as parallel, runs.StopRequest().installed() as stop, np.errstate(all="ignore"), \
            runs.Progress(run.total_steps, run.step, tokens_per_step, may_stop_early) as progress:
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
            del grads  # so that the next step's backward, not this spent buffer, has its memory
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


# ---------------------------------------------------------------------------------------------
# What turns gradients into better parameters: the learning rate's schedule, clipping, AdamW. The
# parameters and gradients are packed dicts (transformer.pack): every tensor is a view into one flat
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


# Adam's update runs over the flat buffers CHUNK numbers at a time, so that each line's temporaries
# are the size of a chunk (128 KiB in float32) and stay in the CPU's cache. Over the whole buffer at
# once, each would be a new array of the model's size (650 MB at GPT-2 124M, several alive at once),
# written to memory and read back. Measured at GPT-2 124M, 2 cores: 0.42 s an update against 1.35 s,
# and 3.1 GB less memory at its peak. The default model is a few chunks. (2**14 to 2**15 were best;
# 2**16 and 2**18, over half of the 1 MiB of cache a core has, took 0.8 to 1.3 s.)
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
                raise InputError(f"the optimizer state's {name} holds {state[name].size} numbers, the model has "
                                 f"{self.m.size}: it was saved for another model")
        self.m[...] = state["m"]
        self.v[...] = state["v"]
        self.t = int(state["t"])


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


def sample_text(params, cfg, tokenizer, kind, s, rng):
    """A short continuation of SAMPLE_PROMPT (or of the corpus's first character), up to where a reply
    of a model of this kind of corpus ends (reply_end), as talk.py would print it."""
    prompt = tokenizer.encode_known(SAMPLE_PROMPT)[0] or [0]
    sampling = Sampling(s.temperature, s.top_k, s.top_p)
    written = tokenizer.decode(list(generate(params, cfg, prompt, s.max_new_tokens, s.seq_len, sampling, rng)))
    return tokenizer.decode(prompt) + written[:reply_end(written, kind)]


@functools.lru_cache(maxsize=1)
def epoch_order(seed, epoch, num_windows):  # -> (num_windows,): each epoch visits every window once
    return np.random.default_rng([seed, epoch]).permutation(num_windows)


def start_model(corpus, s):
    """(params, cfg, tokenizer): GPT-2's, read from the folder s.init_from (the model's shape is its own),
    or a tokenizer learned from the whole corpus and fresh parameters of config.py's shape."""
    if s.init_from:
        params, cfg, tokenizer = gpt2.load(s.init_from)  # of the shape train() gave s (adopt_shape)
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


def recipe_line(s, given):
    """The recipe's settings as they are in force: a value the person typed over the recipe's is marked, and
    so is one the model imposed (a GPT-2's own shape, adopt_shape).

    Example: recipe book with --num_merges 200 -> "recipe book: num_layers 1, ..., num_merges 200 (typed), ..."
    """
    recipe = config.RECIPES[s.recipe]
    notes = {name: " (typed)" if name in given else " (the model's)" if value != getattr(s, name) else ""
             for name, value in recipe.items()}
    return f"recipe {s.recipe}: " + ", ".join(f"{name} {getattr(s, name)}{notes[name]}" for name in recipe)


class Diverged(InputError):
    """The loss or the gradient stopped being a finite number."""


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = SettingsParser(config, "Train the model on a corpus and save checkpoints (settings from config.py).")
    job = p.add_mutually_exclusive_group()
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
    p.add_argument("--yes", action="store_true", help="with --remove: remove without asking")
    learners.add_options(p, gradcheck.TRACKS)
    args = p.parse(argv)
    s, given = p.settings(args), settings.given(argv)
    if args.list:
        print(runs.runs_table(Path(s.checkpoint)))
    elif args.remove is not None:
        runs.remove(Path(s.checkpoint), args.remove, args.yes)
    else:
        with learners.in_place(args, gradcheck):  # --exercises TRACK: the functions you wrote, judged, in place
            if args.resume is not None:
                s, folder = runs.resume_settings(s, argv, args.resume, p)
                train(s, resume_from=folder, given=given)
            else:
                train(s, name=getattr(args, "name", None), given=given)


if __name__ == "__main__":
    run_script(main)
