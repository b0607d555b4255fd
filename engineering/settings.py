"""The settings of config.py as the scripts take them: checked, and given on the command line.

config.py is plain assignments, each with a comment. A script builds its command line from that file
(SettingsParser): one `--name value` option for each setting it reads, typed by the setting's value,
its help the setting's comment. A recipe (--recipe NAME) sets its values first, and the settings given
on the command line win (SettingsParser.parse). The values are checked before any work (check): the
first that cannot work is named in one line, with what is accepted.
"""

import argparse
import difflib
import inspect
import io
import re
import tokenize
import types
from dataclasses import MISSING, fields
from pathlib import Path

from engineering.errors import InputError
from engineering.wording import plural
from transformer import ModelConfig


class SettingError(InputError):
    """A setting has a value that cannot work; the message names it and says what is accepted."""


def defaults(config):
    """Every setting of config.py (the module) with its value, in the order written there."""
    return {name: value for name, value in vars(config).items()
            if not name.startswith("_") and type(value) in (int, float, str, bool)}


# today's options of the model: the fields of ModelConfig with a default, GPT-2's, each a setting of the same name
MODEL_OPTIONS = {field.name: field.default for field in fields(ModelConfig) if field.default is not MISSING}


def model_config(s, vocab_size):
    """The ModelConfig the settings s (a namespace) describe, for a tokenizer of vocab_size tokens."""
    return ModelConfig(vocab_size, s.context_len, s.emb_dim, s.num_heads, s.num_layers, s.ff_dim, s.ln_eps,
                       **{name: getattr(s, name) for name in MODEL_OPTIONS})


def recorded(s):
    """The settings as a run's files record them (model.json, resume.json): every one but a model option at its
    default, so that the files of a model of GPT-2's family read as they did before the options were.
    Example: recorded(settings with norm "layernorm", seed 42) -> {..., "seed": 42, ...}, and no "norm" """
    return {name: value for name, value in vars(s).items() if MODEL_OPTIONS.get(name, MISSING) != value}


def read_back(saved):
    """The settings a run recorded (recorded), each model option it leaves out at its default.

    Example: read_back({"seed": 42}) -> {"norm": "layernorm", ..., "seed": 42}"""
    return {**MODEL_OPTIONS, **saved}


def boolean(text):
    """A true/false setting as typed on the command line. Example: boolean("False") -> False"""
    if text.lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"{text!r} is neither true nor false")
    return text.lower() == "true"


def comments(config):
    """The comment written beside each top-level assignment of config.py, by the name it assigns.

    Example: the line `seed = 42  # seeds the initial weights` -> {"seed": "seeds the initial weights"}
    """
    source = Path(inspect.getsourcefile(config)).read_text(encoding="utf-8")
    found, assigned = {}, None  # assigned: (the name a line at column 0 starts with, that line's number)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.NAME and token.start[1] == 0:
            assigned = (token.string, token.start[0])
        elif token.type == tokenize.COMMENT and assigned and token.start[0] == assigned[1]:
            found[assigned[0]] = token.string.lstrip("#").strip()
    return found


MOST_MINUTES = 7 * 24 * 60  # minutes at most: a week
FEWEST_MINUTES = 0.1  # minutes at least, where not 0: six seconds (a plan for less would hold no step)
MOST_STEPS = 10_000_000  # max_steps at most: 10 hours at the default run's pace (README: 55,365 steps in 198 s)
PROCESSES_PER_CORE = 2  # processes at most per core: past one a core, each process only waits for the others
SEEDS = 2 ** 64  # a seed is a whole number from 0 to SEEDS - 1, as PyTorch's are


def check_seed(seed):
    """Raise SettingError unless seed can seed NumPy's generators here (0 to 2**64 - 1).

    Example: check_seed(-3) -> SettingError("seed must be a whole number from 0 to 18446744073709551615, got -3")
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < SEEDS:
        raise SettingError(f"seed must be a whole number from 0 to {SEEDS - 1}, got {seed}")


def check(s, recipes):
    """Raise SettingError naming the first setting that cannot work. s: a namespace of settings; recipes:
    config.RECIPES. The model's shape is ModelConfig's to check, and the sampling settings are
    transformer.Sampling's: each rule in one place."""
    from engineering.parallel import cores  # here: importing train.py does not load multiprocessing and threadpoolctl

    most_processes = PROCESSES_PER_CORE * cores()
    try:
        model_config(s, 1)
    except ValueError as err:
        raise SettingError(str(err).replace("ModelConfig.", "")) from None
    for name in ["seq_len", "stride", "batch_size", "epochs", "eval_interval", "lr_max", "adam_eps", "grad_clip",
                 "max_new_tokens"]:
        if not getattr(s, name) > 0:
            raise SettingError(f"{name} must be positive, got {getattr(s, name)}")
    for name in ["max_rows", "num_merges", "max_steps", "eval_tokens", "warmup_steps", "weight_decay", "patience"]:
        if not getattr(s, name) >= 0:
            raise SettingError(f"{name} must be 0 or more, got {getattr(s, name)}")
    check_seed(s.seed)
    rules = [  # the recipe's first: a recipe's own values must not be refused before what the recipe needs
        (s.recipe in ("", *recipes), f"there is no recipe {s.recipe!r}; the recipes are: {', '.join(recipes)}"),
        (s.recipe != "gpt2" or s.init_from, "--recipe gpt2 fine-tunes a GPT-2: give its folder with --init_from "
                                            "(python train.py --recipe gpt2 --init_from gpt2 --corpus_path my.txt)"),
        (s.init_from or s.seq_len <= s.context_len,  # a GPT-2 to start from has its own context_len (gpt2.py)
         f"seq_len ({s.seq_len}) must not exceed context_len ({s.context_len}), the rows of the position table"),
        (0 < s.val_fraction < 1, f"val_fraction must be between 0 and 1, got {s.val_fraction}"),
        (0 <= s.lr_min <= s.lr_max, f"lr_min must be between 0 and lr_max ({s.lr_max}), got {s.lr_min}"),
        (s.processes >= 0, f"processes must be 0 (this process's threads, as many as pay), 1 (this thread alone) or "
                           f"more, got {s.processes}"),
        (s.processes <= most_processes, f"processes must be at most {most_processes}, {PROCESSES_PER_CORE} for each "
                                        f"of this machine's {plural(cores(), 'core')}, got {s.processes}; 0 chooses "
                                        f"for you"),
        (s.minutes == 0 or FEWEST_MINUTES <= s.minutes <= MOST_MINUTES,  # NaN and inf fail here too
         f"minutes must be 0 (off) or from {FEWEST_MINUTES} to {MOST_MINUTES:,} (a week), got {s.minutes}"),
        (not (s.minutes and s.init_from), "--minutes plans a model trained from scratch; to fine-tune a GPT-2 "
                                          "(--init_from), give --max_steps instead"),
        (s.max_steps <= MOST_STEPS, f"max_steps must be at most {MOST_STEPS:,} (hours of training even for the "
                                    f"default model), got {s.max_steps:,}"),
        (0 <= s.beta1 < 1, f"beta1 must be in [0, 1), got {s.beta1}"),
        (0 <= s.beta2 < 1, f"beta2 must be in [0, 1), got {s.beta2}"),
        (s.dtype in ("float32", "float64"), f"dtype must be float32 or float64, got {s.dtype!r}"),
    ]
    for holds, message in rules:
        if not holds:
            raise SettingError(message)


def replaced(settings, values):
    """A copy of the settings (a namespace) with the values given in place; the settings themselves stay as they are.

    Example: replaced(settings, {"processes": 1}).processes -> 1, and settings.processes as it was
    """
    return types.SimpleNamespace(**{**vars(settings), **values})


def given(argv):
    """The names of the settings given on a command line, in either spelling (--name value, --name=value).

    Example: given(["--epochs=5", "--seed", "3", "my.txt"]) -> {"epochs", "seed"}
    """
    return {arg[2:].split("=", 1)[0] for arg in argv if arg.startswith("--")}


class SettingsParser(argparse.ArgumentParser):
    """A script's command line: a `--name value` option for each setting of config.py it reads (names, or
    all), typed by its value, with help from its comment (or helps[name]), and the script's own options.
    Its errors are one line and exit status 2, without the usage block; a mistyped option is told the
    nearest one it may have meant."""

    def __init__(self, config, description, names=None, helps=None):
        reads = [name for name in defaults(config) if names is None or name in names]
        recipes = "".join(f"\n  {name}: {use}" for name, use in config.RECIPE_USES.items())
        super().__init__(description=description, allow_abbrev=False, formatter_class=HelpFormatter,
                         epilog=f"recipes (--recipe NAME):{recipes}" if "recipe" in reads else None)
        self.config = config
        group = self.add_argument_group("settings (defaults from config.py)")
        notes = {**comments(config), **(helps or {})}
        for name in reads:
            value = getattr(config, name)
            group.add_argument(f"--{name}", type=boolean if type(value) is bool else type(value), default=value,
                               metavar=type(value).__name__.upper(), help=notes.get(name, ""))

    def error(self, message):
        self.exit(2, f"{self.prog}: {message}{self.nearest_options(message)} (see --help)\n")

    def nearest_options(self, message):
        """For argparse's message about unknown options, the options they are nearest to, else "".

        Example: "unrecognized arguments: --max_step 20" -> " (did you mean --max_steps?)"
        """
        if not message.startswith("unrecognized arguments:"):
            return ""
        options = sorted(set(re.findall(r"--[\w-]+", self.format_usage())))
        typed = [word.split("=", 1)[0] for word in message.split()[2:] if word.startswith("--")]
        # a setting of config.py that the script does not read was meant as typed; 0.75 keeps --seq_len from --seed
        meant = {word: difflib.get_close_matches(word, options, n=1, cutoff=0.75) for word in typed
                 if word[2:] not in defaults(self.config)}
        guesses = [f"{near[0]}{f' for {word}' if len(typed) > 1 else ''}" for word, near in meant.items() if near]
        return f" (did you mean {', '.join(guesses)}?)" if guesses else ""

    def parse(self, argv):
        """argv parsed; a known --recipe among them sets its values first, and the settings given on the
        command line override those (check refuses an unknown recipe)."""
        args = self.parse_args(argv)
        chosen = getattr(args, "recipe", "")
        if chosen in self.config.RECIPES:
            self.set_defaults(**self.config.RECIPES[chosen])
            args = self.parse_args(argv)
        return args

    def settings(self, args):
        """The checked settings from parsed arguments: a namespace with every setting of config.py."""
        values = defaults(self.config)
        s = types.SimpleNamespace(**{**values, **{name: value for name, value in vars(args).items() if name in values}})
        check(s, self.config.RECIPES)
        return s


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """argparse's help with each option's default; the epilog (the recipes, a line each) as written."""
