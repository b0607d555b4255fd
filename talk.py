"""Talk to a trained model: type the start of a text and watch the model continue it.

    python talk.py                                  # the model in checkpoints/
    python talk.py --list                           # the runs in checkpoints/runs/, by name
    python talk.py --checkpoint shakespeare --temperature 0.5   # a run, by its name or the start of it
    python talk.py < prompts.txt                    # one prompt (or command) a line, no "> " shown

Each line typed is a prompt. The model continues it one token at a time, printed as soon as it is
drawn, until it ends its reply or has written /len tokens; with --full, always /len tokens. Where a
reply ends is what the model learned (generate.reply_end): a model of a CSV's rows ends it with its
row, at the first newline it writes (every training row ended with one); a model of one text (a
book, a play) ends it with its paragraph, at the first blank line, so a speech comes out whole.
Characters the model has never seen are left out with a warning; with --strict, such a line is
refused with a warning. Lines starting with / are commands; /help lists them. The command line is
generate.py's, without the prompt, and --list: `python talk.py --help` lists it.

Ctrl-C stops a continuation and returns to the prompt; at the prompt it clears the line. Ctrl-D
(the end of the input) or /quit leaves, with exit status 0. A missing or broken checkpoint is one
line on stderr and exit status 2.
"""

import math
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

import checkpoint
import config
from errors import InputError
from generate import (Sampling, generate, heal_prompt, known_prompt_ids, load_for_sampling, parse_sampling,
                      print_continuation, reply_kind, sampling_parser, warn)


@dataclass
class Session:
    """What a conversation keeps between prompts; /seed restarts rng, so a session can be repeated."""
    model: checkpoint.Checkpoint
    window: int  # the last `window` tokens are what the model reads
    sampling: Sampling
    max_new_tokens: int
    seed: int
    strict: bool  # refuse a line with characters the model has never seen, rather than leave them out
    full: bool  # write max_new_tokens tokens, rather than stop at the end of the reply
    home: Path  # the folder whose runs /models lists
    rng: np.random.Generator = field(init=False)

    def __post_init__(self):
        self.rng = np.random.default_rng(self.seed)


def describe(model, folder):
    """One line about the model: its size, and when, on what and how well it was trained; and where it
    was read from, when that is a run in folder/runs/ because the model on top of folder is not whole."""
    try:
        meta, corpus = model.meta, model.meta["corpus"]
        best = {entry["step"]: entry for entry in meta["history"]}[meta["best_step"]]  # the weights saved
        characters = checkpoint.characters_said(corpus["characters"], checkpoint.corpus_kind(meta))
        about = (f"model: {sum(p.size for p in model.params.values()):,} parameters, {model.cfg.vocab_size} tokens; "
                 f"trained {meta['trained_at']} on {corpus['path']} ({characters}, "
                 f"{corpus['validation_characters']:,} held out); "
                 f"best validation loss {best['val_loss']:.3f} (step {best['step']:,})")
    except (KeyError, TypeError, ValueError) as err:
        raise InputError(f"{model.folder}/model.json lacks what training records about the model ({err!r}); "
                         f"{checkpoint.RETRAIN}") from None
    if model.folder != Path(folder):
        about += f"; read from {model.folder}/, as {folder}/ holds no whole model on top"
    return about


# --- commands -----------------------------------------------------------------------------------

def number(text):
    """An int where text is a whole number, else a float; InputError if it is no number at all."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    raise InputError(f"{text!r} is not a number")


def set_temperature(session, text):
    session.sampling = replace(session.sampling, temperature=number(text))  # Sampling checks the rule


def set_top_k(session, text):
    session.sampling = replace(session.sampling, top_k=number(text))


def set_top_p(session, text):
    session.sampling = replace(session.sampling, top_p=number(text))


def set_length(session, text):
    length = number(text)
    if not (isinstance(length, int) and length > 0):
        raise InputError(f"the length must be a whole number of tokens, 1 or more, got {text}")
    session.max_new_tokens = length


def set_seed(session, text):
    seed = number(text)
    if not (isinstance(seed, int) and seed >= 0):
        raise InputError(f"the seed must be a whole number, 0 or more, got {text}")
    session.seed, session.rng = seed, np.random.default_rng(seed)


SETTERS = {  # command: (its argument, what it sets, the function that sets it)
    "/temp": ("X", "temperature: 0 always takes the most likely token, higher is more surprising", set_temperature),
    "/topk": ("N", "keep only the N most likely tokens; 0 turns this off", set_top_k),
    "/topp": ("P", "keep the most likely tokens until they reach probability P, in (0, 1]; 1 is off", set_top_p),
    "/len": ("N", "the most tokens one continuation may have, 1 or more", set_length),
    "/seed": ("N", "restart the random draws from seed N (0 or more), to repeat a session", set_seed),
}
COMMAND_LIST = ", ".join([f"{name} {arg}" for name, (arg, _, _) in SETTERS.items()] +
                         ["/settings", "/models", "/help", "/quit"])
REPLY_ENDS_SAID = {  # where a reply ends (generate.reply_end), and why, for each kind of text a model learned
    "rows": ("the end of its row", "a newline: every row it learned from ended with one"),
    "text": ("the end of its paragraph", "a blank line, as in the text it learned from"),
}


def settings_line(session):
    s = session.sampling
    return (f"temperature {s.temperature}, top_k {s.top_k}{' (off)' if s.top_k == 0 else ''}, "
            f"top_p {s.top_p}{' (off)' if s.top_p == 1 else ''}, up to {session.max_new_tokens} new tokens, "
            f"seed {session.seed}, window {session.window} tokens")


def help_text(session):
    end, why = REPLY_ENDS_SAID[checkpoint.corpus_kind(session.model.meta)]
    lines = ["Type some text and press Enter: the model continues it a token at a time, until it reaches",
             f"{end} ({why}),", "or has written /len tokens; started with --full, it always writes /len tokens.",
             "Characters it has never seen are left out; started with --strict, such a line is refused.",
             "Ctrl-C stops a continuation; Ctrl-D or /quit leaves.", "commands:"]
    lines += [f"  {name + ' ' + arg:<10} {what}" for name, (arg, what, _) in SETTERS.items()]
    lines += [f"  {'/settings':<10} show the settings now", f"  {'/models':<10} list the runs, as talk.py --list does",
              f"  {'/help':<10} this text", f"  {'/quit':<10} leave"]
    return "\n".join(lines)


def runs_table(home):
    """The runs of home as `talk.py --list` and /models print them, a line each; InputError where there are none."""
    runs = checkpoint.summarize_runs(home)
    if not runs:
        raise InputError(f"there are no runs in {home}/runs/ yet: train one with `python train.py`, "
                         f"named with --name NAME if you like")
    rows = [("", "name", "saved (UTC)", "corpus", "steps", "best bits/char")]
    rows += [("*" if run.on_top else "", run.name, f"{run.saved:%Y-%m-%d %H:%M}", run.corpus, run.steps,
              "not yet" if math.isnan(run.best_bpc) else f"{run.best_bpc:.3f}") for run in runs]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    return "\n".join([f"runs in {home}/runs/, the last saved first (* is on top of {home}/: what talk.py reads "
                      f"without --checkpoint)", *lines])


def run_command(session, line):
    """Carry out a line starting with /; False when it is /quit."""
    name, *values = line.split()
    if name == "/quit":
        return False
    if name == "/help":
        print(help_text(session))
    elif name == "/settings":
        print(settings_line(session))
    elif name == "/models":
        try:
            print(runs_table(session.home))
        except InputError as err:
            warn(str(err))
    elif name not in SETTERS:
        warn(f"unknown command {name}; the commands are {COMMAND_LIST}")
    else:
        argument, what, set_value = SETTERS[name]
        try:
            if len(values) != 1:
                raise InputError(f"{name} takes one value")
            set_value(session, values[0])
            print(settings_line(session))
        except InputError as err:
            warn(f"{err}; nothing changed. Usage: {name} {argument}, {what}")
    return True


# --- continuations ------------------------------------------------------------------------------

def continue_text(session, text):
    """Print the prompt's known characters, then the model's continuation, token by token; a prompt
    that cannot be continued is a warning, and the session goes on."""
    try:
        prompt_ids = known_prompt_ids(session.model.tokenizer, text, session.strict)
    except InputError as err:
        warn(str(err))
        return
    prompt_ids, first_allowed = heal_prompt(session.model.tokenizer, prompt_ids)
    new_ids = generate(session.model.params, session.model.cfg, prompt_ids, session.max_new_tokens,
                       session.window, session.sampling, session.rng, first_allowed=first_allowed)
    print_continuation(session.model.tokenizer, prompt_ids, new_ids, reply_kind(session.model, session.full))


def read_line(interactive):
    """The next line of input without its newline, or None at its end (Ctrl-D)."""
    try:
        return input("> " if interactive else "")
    except EOFError:
        if interactive:
            print()  # so that the shell's prompt starts on a line of its own
        return None


def converse(session, interactive):
    """Read lines until the input ends or /quit; Ctrl-C anywhere returns to a fresh prompt."""
    while True:
        try:
            line = read_line(interactive)
            if line is None:
                return
            if line.startswith("/"):
                if not run_command(session, line):
                    return
            elif line.strip():
                continue_text(session, line)
        except KeyboardInterrupt:
            print("\n(interrupted; /quit or Ctrl-D leaves)", flush=True)


def main(argv=None):
    p = sampling_parser("Talk to a trained model: type text, it continues it (settings from config.py).")
    p.add_argument("--list", action="store_true",
                   help="list the runs in --checkpoint's runs/ folder (name, when, corpus, steps, best bits/char, "
                        "which is on top), and leave")
    args = parse_sampling(p, argv)
    if args.list:
        print(runs_table(Path(args.checkpoint)))
        return
    try:
        model = load_for_sampling(args)
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    home = checkpoint.home_of(model.folder) or args.checkpoint  # a run of a home, or the home itself
    session = Session(model, args.window, Sampling(args.temperature, args.top_k, args.top_p), args.max_new_tokens,
                      args.seed, args.strict, args.full, home)
    interactive = sys.stdin.isatty()
    print(describe(model, args.checkpoint))
    ends = "" if args.full else f", up to {REPLY_ENDS_SAID[checkpoint.corpus_kind(model.meta)][0]}"
    print(f"Type some text to have it continued{ends}; /help lists the commands; Ctrl-D or /quit leaves.", flush=True)
    if interactive:
        try:
            import readline  # noqa: F401  line editing and history for input(); on a terminal only, where it is quiet
        except ImportError:  # a platform without it still works, without the editing
            pass
    converse(session, interactive)


if __name__ == "__main__":
    sys.stdin.reconfigure(errors="replace")  # undecodable bytes become U+FFFD, left out with a warning
    config.run(main)
