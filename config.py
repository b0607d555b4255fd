"""Every setting of the project, one plain assignment each, with a comment that says what it does.

train.py, generate.py and talk.py read these values. Any of them can be overridden on the command
line as `--name value` or `--name=value` (`python train.py --epochs 2`); each script's --help lists
the ones it reads. A recipe (RECIPES, below) is a named set of overrides measured for one job:
`python train.py --recipe book --corpus_path my.txt`; settings given after it still win.
On import this file checks that its values agree with each other and says which one is wrong.
"""

import argparse
import difflib
import re
import sys
import types
from pathlib import Path

from errors import InputError
from transformer import ModelConfig

# --- the model (vocab_size is not here: it comes from the tokenizer) ---
context_len = 32  # rows of the position table: the longest sequence the model can read
emb_dim = 32  # width of every token vector (C in the equations)
num_heads = 2  # attention heads per block
num_layers = 2  # transformer blocks
ff_dim = 128  # hidden width of each block's MLP
ln_eps = 1e-5  # added to the variance in every layer norm, so no division by zero
dtype = "float32"  # compute dtype of training: float32 (fast) or float64 (what the gradient checks use)

# --- the data ---
corpus_path = "data/corpus.csv"  # a CSV (rows are documents) or a .txt (one exact text); falls back to data/sample.csv when absent
corpus_column = "text"  # the CSV column that holds the text
max_rows = 2000  # keep only the first max_rows rows of a CSV; 0 = all of them
num_merges = 500  # BPE merges learned on top of the corpus's characters
val_fraction = 0.1  # share held out for validation: whole rows of a CSV, the end of a .txt
seq_len = 16  # tokens in one training window, and the generation window
stride = 1  # tokens between the starts of two consecutive windows

# --- training ---
batch_size = 16  # windows per optimizer step
epochs = 20  # passes over the training windows (when max_steps is 0)
max_steps = 0  # optimizer steps in the run, and the length of its schedule; 0 = epochs decide
eval_interval = 250  # with max_steps: steps between validations (a run in epochs validates at each epoch's end)
patience = 3  # stop once this many validations in a row have not beaten the best one; 0 = never stop early
eval_tokens = 0  # held-out tokens scored at each validation, a fixed seeded choice of windows; 0 = all of them
seed = 42  # seeds the initial weights, the split, the order of the windows and the samples
lr_max = 1e-3  # learning rate at the end of warmup
lr_min = 1e-4  # learning rate at the last step, where the cosine ends
warmup_steps = 50  # steps of linear warmup from 0 to lr_max
beta1 = 0.9  # Adam's decay of the running mean of gradients
beta2 = 0.999  # Adam's decay of the running mean of squared gradients
adam_eps = 1e-8  # added to Adam's denominator
weight_decay = 0.01  # decoupled weight decay (AdamW), applied to every matrix and to nothing else
grad_clip = 1.0  # gradients are scaled down to this global L2 norm when larger
checkpoint = "checkpoints"  # where models live: each run in its own folder in runs/; talk.py reads the latest finished
init_from = ""  # a Hugging Face GPT-2 folder to fine-tune (config.json, model.safetensors, vocab.json, merges.txt)
processes = 1  # processes sharing each batch: 1 = this one (a breakpoint() in a backward stops here); 0 = one per core where it pays

# --- generation ---
max_new_tokens = 50  # tokens generated for each prompt
temperature = 0.8  # divides the logits before sampling; 0 means always take the most likely token
top_k = 0  # keep only the k most likely tokens; 0 turns this filter off
top_p = 0.9  # keep the smallest set of most likely tokens whose probability reaches top_p

# --- recipes ---
recipe = ""  # a named set of overrides from RECIPES, applied before the settings given with it; "" = none

# Each value chosen by measurement on a 2-core machine, for the best bits per character on held-out
# text per second of training; benchmarks/bench_text.py measures the recipe, the README has its figures.
RECIPES = {
    "book": {
        # bits/char on held-out Shakespeare, at about the same wall time: one block 2.15-2.21, two 2.41,
        # four 2.53 (width 96) or 2.69 (width 128); a second seed moved a result by 0.06
        "num_layers": 1, "emb_dim": 128, "num_heads": 4, "ff_dim": 512, "context_len": 64, "seq_len": 64,
        "num_merges": 500,  # 2.15 against 2.21 at 250 merges and 2.28 at 1000 (slower to learn, too)
        "batch_size": 12, "lr_max": 3e-3, "lr_min": 3e-4,  # lr 2e-3: 2.23, 5e-3: worse
        "max_steps": 2200,  # 2.19 in 74 s of wall time (two runs); 2,500 steps gave 2.15 but took 81-87 s
        "warmup_steps": 100, "beta2": 0.99, "weight_decay": 0.1,  # nanoGPT's; 50, 0.999, 0.01 did no better
        "eval_interval": 500, "eval_tokens": 8192,  # five quick validations on a fixed choice of windows
        "processes": 0,  # one per core: each of 2 slices holds 20 times the work that pays a process (processes_for)
    },
    "gpt2": {
        # fine-tuning GPT-2 124M (--init_from) on a text of your own, on a laptop's CPU
        "context_len": 1024,  # GPT-2's: the model's shape is its own (gpt2.check_settings)
        "seq_len": 128, "batch_size": 4,  # 8.0 s a step on 2 cores, 6.5 GiB at its peak (benchmarks/bench_gpt2.py)
        "max_steps": 30, "eval_interval": 10, "eval_tokens": 2048, "warmup_steps": 5,  # about 5 minutes in all
        "lr_max": 1e-4, "lr_min": 1e-5,  # a tenth of the book recipe's: the weights are trained already
        "beta2": 0.99, "weight_decay": 0.0,  # no decay pulling the pretrained weights towards 0
    },
}
RECIPE_USES = {  # what each recipe is for, a line each in --help
    "book": "one plain-text book or play of about 1 MB: python train.py --recipe book --corpus_path my.txt",
    "gpt2": "fine-tune a GPT-2 folder on a text: python train.py --recipe gpt2 --init_from gpt2 --corpus_path my.txt",
}


class SettingError(InputError):
    """A setting has a value that cannot work; the message names it and says what is accepted."""


def defaults():
    """Every setting of this file with its value, in the order written above."""
    return {name: value for name, value in globals().items()
            if not name.startswith("_") and type(value) in (int, float, str)}


def comments():
    """The comment written beside each setting in this file, for --help."""
    assignment = re.compile(r"^(\w+) = .*?  # (.*)$")
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return {m[1]: m[2] for m in map(assignment.match, lines) if m}


def check(s):
    """Raise SettingError naming the first setting that cannot work. s: a namespace of settings. The model's
    shape is ModelConfig's to check, and the sampling settings are generate.Sampling's: each rule in one place."""
    try:
        ModelConfig(1, s.context_len, s.emb_dim, s.num_heads, s.num_layers, s.ff_dim, s.ln_eps)
    except ValueError as err:
        raise SettingError(str(err).replace("ModelConfig.", "")) from None
    for name in ["seq_len", "stride", "batch_size", "epochs", "eval_interval", "lr_max", "adam_eps", "grad_clip",
                 "max_new_tokens"]:
        if not getattr(s, name) > 0:
            raise SettingError(f"{name} must be positive, got {getattr(s, name)}")
    for name in ["max_rows", "num_merges", "max_steps", "eval_tokens", "warmup_steps", "weight_decay", "patience"]:
        if not getattr(s, name) >= 0:
            raise SettingError(f"{name} must be 0 or more, got {getattr(s, name)}")
    rules = [
        (s.init_from or s.seq_len <= s.context_len,  # a GPT-2 to start from has its own context_len (gpt2.py)
         f"seq_len ({s.seq_len}) must not exceed context_len ({s.context_len}), the rows of the position table"),
        (0 < s.val_fraction < 1, f"val_fraction must be between 0 and 1, got {s.val_fraction}"),
        (0 <= s.lr_min <= s.lr_max, f"lr_min must be between 0 and lr_max ({s.lr_max}), got {s.lr_min}"),
        (s.processes >= 0, f"processes must be 1 (this process), 0 (chosen from the model's size) or more, "
                           f"got {s.processes}"),
        (0 <= s.beta1 < 1, f"beta1 must be in [0, 1), got {s.beta1}"),
        (0 <= s.beta2 < 1, f"beta2 must be in [0, 1), got {s.beta2}"),
        (s.dtype in ("float32", "float64"), f"dtype must be float32 or float64, got {s.dtype!r}"),
        (s.recipe in ("", *RECIPES), f"there is no recipe {s.recipe!r}; the recipes are: {', '.join(RECIPES)}"),
    ]
    for holds, message in rules:
        if not holds:
            raise SettingError(message)


class _OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and exit status 2, without the usage block; a
    mistyped option is told the nearest one it may have meant."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message}{self.nearest_options(message)} (see --help)\n")

    def nearest_options(self, message):
        """For argparse's message about unknown options, the options they are nearest to, else "".

        Example: "unrecognized arguments: --max_step 20" -> " (did you mean --max_steps?)"
        """
        if not message.startswith("unrecognized arguments:"):
            return ""
        options = [option for option in self._option_string_actions if option.startswith("--")]
        typed = [word.split("=", 1)[0] for word in message.split()[2:] if word.startswith("--")]
        # a setting of this file that the script does not read was meant as typed; 0.75 keeps --seq_len from --seed
        meant = {word: difflib.get_close_matches(word, options, n=1, cutoff=0.75) for word in typed
                 if word[2:] not in defaults()}
        guesses = [f"{near[0]}{f' for {word}' if len(typed) > 1 else ''}" for word, near in meant.items() if near]
        return f" (did you mean {', '.join(guesses)}?)" if guesses else ""


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's help with each default, keeping the line breaks a help text has (the recipes, a line each)."""

    def _split_lines(self, text, width):
        split = super()._split_lines  # argparse's, which joins lines: applied to each line alone
        return [line for part in text.splitlines() for line in split(part, width)]


def parser(description, names=None, helps=None):
    """A command-line parser with one `--name value` option per setting (those in names, or all),
    typed by its default; its help is the setting's comment here, or helps[name] where given."""
    p = _OneLineParser(description=description, allow_abbrev=False, formatter_class=_HelpFormatter)
    group = p.add_argument_group("settings (defaults from config.py)")
    recipes = "\n".join(f"  {name}: {use}" for name, use in RECIPE_USES.items())
    notes = {**comments(), **(helps or {})}
    notes["recipe"] = f"{notes['recipe']}. The recipes:\n{recipes}\n"
    for name, value in defaults().items():
        if names is None or name in names:
            group.add_argument(f"--{name}", type=type(value), default=value,
                               metavar=type(value).__name__.upper(), help=notes.get(name, ""))
    return p


def given(argv):
    """The names of the settings given on a command line, in either spelling (--name value, --name=value).

    Example: given(["--epochs=5", "--seed", "3", "my.txt"]) -> {"epochs", "seed"}
    """
    return {arg[2:].split("=", 1)[0] for arg in argv if arg.startswith("--")}


def parse(p, argv):
    """Parse argv with a parser from parser(); a known --recipe among them sets its values first, and
    the settings given on the command line override those (check refuses an unknown recipe)."""
    args = p.parse_args(argv)
    chosen = getattr(args, "recipe", "")
    if chosen in RECIPES:
        p.set_defaults(**RECIPES[chosen])
        args = p.parse_args(argv)
    return args


def settings(args):
    """The checked settings from parsed arguments: a namespace with every setting of this file."""
    s = types.SimpleNamespace(**{**defaults(), **{name: value for name, value in vars(args).items()
                                                  if name in defaults()}})
    check(s)
    return s


def run(main):
    """Run a script's main(); bad input from a person becomes one line on stderr and exit status 2, and
    Ctrl-C where the script does not handle it one line and exit status 130.

    Bad input is the project's InputError (settings, corpus, tokenizer, checkpoint, prompt), or an
    OSError, which names a file that cannot be read or written. Anything else, NumPy's errors
    included, is a bug: it keeps its traceback and exits with status 1.
    """
    try:
        return main()
    except (InputError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        print("interrupted (Ctrl-C); nothing was left half-written", file=sys.stderr)
        raise SystemExit(130) from None


try:
    check(types.SimpleNamespace(**defaults()))
except SettingError as _err:
    print(f"config.py: {_err}", file=sys.stderr)
    raise SystemExit(2) from None
