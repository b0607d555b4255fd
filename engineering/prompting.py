"""What generate.py and talk.py share: their command line, the model they read, the prompt going in
(the characters the model knows, the last tokens taken back) and the reply coming out (where it ends,
printed token by token). continue_prompt puts them together around transformer.generate.

A continuation keeps the shape of what the model learned (reply_end): from the rows of a CSV it ends
at the end of its row, the first newline it writes; from one running text (a book, a play) at the end
of its paragraph, the first blank line it writes, so a speech comes out whole with its speaker and
line breaks. --full writes all max_new_tokens instead.

The prompt's last tokens are taken back before it is continued (heal_prompt): the first new token
must then start with their text, so a prompt that stops inside what the model learned as one token
('ROMEO:' of 'ROMEO:\n') is continued as the text it learned, not from a split it never saw. The
reply is printed after the prompt as typed, so what the model adds to its last word shows as added
('The baker' may go on as 'The bakery'); --exact continues the prompt's tokens as they are.
"""

import dataclasses
import sys
from pathlib import Path

import numpy as np

from engineering import checkpoint, runs
from engineering.corpus import characters_said
from engineering.errors import InputError
from engineering.settings import SettingsParser
from transformer import Sampling, generate

# --- where a reply ends --------------------------------------------------------------------------

REPLY_ENDS = {"rows": "\n", "text": "\n\n"}  # a CSV's row ends at its newline; a text's paragraph at a blank line


def reply_end(written, kind):
    """Where the reply ends in the text written so far, for a model of that kind (checkpoint.corpus_kind):
    the index of the first end of a row ("rows") or of a paragraph ("text"); None while it goes on.

    Example: reply_end("ROMEO:\\nO, she doth\\nteach\\n\\nJULIET:", "text") -> 24; with "rows" -> 6
    """
    at = written.find(REPLY_ENDS[kind])
    return None if at < 0 else at


REPLY_ENDS_SAID = {  # where a reply ends, and why, for each kind of text a model learned
    "rows": ("the end of its row", "a newline: every row it learned from ended with one"),
    "text": ("the end of its paragraph", "a blank line, as in the text it learned from"),
}


def printable(written, kind):
    """(how much of the text written so far can be printed, whether the reply has ended). Everything
    where kind is None (--full); else up to the reply's end, or while it goes on, all but the newlines
    at the end, which may be the start of its end (both ends are newlines): the next token tells."""
    if kind is None:
        return len(written), False
    end = reply_end(written, kind)
    if end is not None:
        return end, True
    return len(written.rstrip("\n")), False


# --- the command line of generate.py and talk.py --------------------------------------------------

SAMPLING_SETTINGS = ("checkpoint", "temperature", "top_k", "top_p", "max_new_tokens", "seed")  # of config.py
CHECKPOINT_HELP = ("the model to read: a run's name in checkpoints/runs/ or the start of one (python talk.py --list "
                   "lists them), or a folder; checkpoints itself: its latest finished run")  # lab.py's too


def sampling_parser(config, description):
    """The command line both sampling scripts read: the settings of config.py that sampling uses and
    the options below; a training setting (--epochs) is refused as an unknown option."""
    p = SettingsParser(config, description, SAMPLING_SETTINGS, {
        "seed": "seeds the random draws of the sampling: the same seed and prompt give the same text",
        "checkpoint": CHECKPOINT_HELP})
    group = p.add_argument_group("what the model reads, and where it stops")
    group.add_argument("--window", type=int, default=0, metavar="INT",
                       help="tokens the model reads: the last INT of the prompt and what it has written so far, "
                            "at most the model's context_len; 0 = the seq_len the checkpoint was trained with")
    group.add_argument("--strict", action="store_true",
                       help="refuse a prompt with a character the model has never seen, instead of leaving "
                            "the character out with a warning")
    group.add_argument("--exact", action="store_true",
                       help="continue the prompt's tokens as they are, instead of taking its last tokens back to be "
                            "drawn again as tokens that start with the same text (see heal_prompt)")
    group.add_argument("--full", action="store_true",
                       help="write all max_new_tokens tokens, instead of stopping where the model ends a reply: "
                            "at the end of a row (its first newline) for a model of a CSV's rows, at the end "
                            "of a paragraph (its first blank line) for a model of one text")
    return p


def trained_window(model):
    """The seq_len the checkpoint was trained with: the positions it learned (those past it only
    ever saw weight decay). A checkpoint that does not record it, or started from GPT-2, gets the whole context_len."""
    trained = model.meta.get("settings")
    seq_len = trained.get("seq_len") if isinstance(trained, dict) and not trained.get("init_from") else None
    return seq_len if isinstance(seq_len, int) else model.cfg.context_len  # GPT-2 learned every position


def parse_sampling(p, argv=None):
    """argv parsed with a sampling_parser, its settings checked."""
    args = p.parse(argv)
    p.settings(args)  # checks the values given; the settings sampling does not use are not read
    return args


def sampling(temperature, top_k, top_p):
    """transformer.Sampling of a person's values: one it refuses is said in one line (InputError)."""
    try:
        return Sampling(temperature, top_k, top_p)
    except ValueError as err:  # Sampling's own words: what is wrong, and what it takes
        raise InputError(str(err)) from None


def load_for_sampling(args, home, decoding=True):
    """The checkpoint --checkpoint names (a folder, a file in one, or a run of home, config.py's checkpoint
    folder, by its name; by default the latest finished run, runs.default_run), with args.checkpoint made
    that folder and args.window filled in where it was left at 0. decoding: a model whose matrices stream
    from memory at every token (more than STREAMED bytes, as GPT-2's) gets its parameters laid out for
    generating (laid_out_for_decoding); the lab, which adds into the packed buffer, keeps them as loaded."""
    folder = Path(home) if args.checkpoint == home else runs.find(args.checkpoint, home)
    home_of_runs = (folder / "runs").is_dir() or not checkpoint.holds_model(folder)
    args.checkpoint = runs.default_run(folder) if home_of_runs else folder
    model = checkpoint.load(args.checkpoint)
    context_len = model.cfg.context_len
    args.window = args.window or trained_window(model)
    if not 0 < args.window <= context_len:  # checked here, before anything is printed
        raise InputError(f"--window {args.window} does not fit this model: it reads 1 to {context_len} tokens "
                         f"(its context_len); give --window {context_len} or less, or leave it out")
    if decoding and sum(p.nbytes for name, p in model.params.items() if is_matrix(name, p)) > STREAMED:
        return dataclasses.replace(model, params=laid_out_for_decoding(model.params))
    return model


# Bytes of weight matrices past which decoding reads them from memory at every token: a CPU's last-level cache
# holds 8 to 64 MiB. Below, they stay in the cache, where the layout showed no steady gain: 0.79 to 1.31 times
# the packed speed at benchmarks/bench_generate.py's two shapes, float64 the slower, in runs side by side.
STREAMED = 64 * 2**20


def is_matrix(name, tensor):  # a weight matrix that x @ W multiplies, not a table of rows (tok_emb, pos_emb)
    return name.rpartition(".")[2].startswith("W") and tensor.ndim == 2


def laid_out_for_decoding(params):
    """The parameters as separate arrays, each weight matrix with at least as many rows as columns (Wq, Wk,
    Wv, Wo, W2 at GPT-2's sizes) stored transposed in memory, in Fortran order: the same numbers, names and
    shapes, so x @ W still reads W as (n_in, n_out) and the logits agree to float32's rounding.

    Why: each generated token multiplies one row by every matrix once, so its speed is how fast the
    matrices stream from memory, and OpenBLAS streams a square or tall matrix faster stored this way.
    Measured: a decoding step of GPT-2 124M 1.10x to 1.28x as fast in four runs of benchmarks/bench_gpt2.py
    (docs/engineering/performance.md). Wide matrices (W1, the head) stream faster as they are. A new
    dict, not packed: flat_buffer refuses it, so nothing trains on it.
    """
    def laid_out(name, tensor):
        transposed = is_matrix(name, tensor) and tensor.shape[0] >= tensor.shape[1]
        return np.asfortranarray(tensor) if transposed else tensor.copy()  # copied too: the packed buffer goes
    return {name: laid_out(name, tensor) for name, tensor in params.items()}


def describe(model):
    """One line about the model: its run, its size, and when, on what and how well it was trained."""
    size = f"{sum(p.size for p in model.params.values()):,} parameters, {model.cfg.vocab_size:,} tokens"
    if "gpt2" in model.meta:
        return f"model {model.folder.name}: {size}; GPT-2's weights, read from {model.folder}/"
    try:
        meta, corpus = model.meta, model.meta["corpus"]
        best = {entry["step"]: entry for entry in meta["history"]}[meta["best_step"]]  # the weights saved
        characters = characters_said(corpus["characters"], checkpoint.corpus_kind(meta))
        return (f"model {model.folder.name}: {size}; trained {meta['trained_at']} on {corpus['path']} ({characters}, "
                f"{corpus['validation_characters']:,} held out); best validation loss {best['val_loss']:.3f} "
                f"(step {best['step']:,})")
    except (KeyError, TypeError, ValueError) as err:
        raise checkpoint.damaged(model.folder / "model.json", f"it lacks what training records: {err!r}") from None


def warn(message):
    print(message, file=sys.stderr, flush=True)


def known_prompt_ids(tokenizer, text, strict):
    """The ids of the prompt's characters that the model knows. Characters it has never seen are left
    out with a warning, or, with strict, refused; a prompt with nothing left is refused. InputError.

    Example: a tokenizer trained without 'Z', text "the Zcat" -> the ids of "the cat", and the
    warning "left out 'Z': the model has never seen this character"
    """
    ids, unknown = tokenizer.encode_known(text)
    if unknown:
        said = list(dict.fromkeys(map(character_said, unknown)))
        listed = ", ".join(said)
        these = "this character" if len(said) == 1 else "these characters"
        if strict:
            raise InputError(f"the prompt has {listed}: the model has never seen {these} "
                             f"(without --strict, {'it is' if len(said) == 1 else 'they are'} left out)")
        warn(f"left out {listed}: the model has never seen {these}")
    if not ids:
        raise InputError("nothing is left to continue: give characters the model knows")
    return ids


NOT_UTF8 = "a byte that is not UTF-8"


def character_said(char):
    """A character of a prompt as a message names it: its repr; a byte that is not UTF-8 the same words whether it
    came as talk.py reads it (U+FFFD, its input read with errors="replace") or as Python gives it from a command line
    (U+DC80 to U+DCFF, the byte + 0xDC00).

    Example: character_said("Z") -> "'Z'"; character_said("\\udce9") -> "a byte that is not UTF-8"
    """
    return NOT_UTF8 if char == "\ufffd" or "\udc80" <= char <= "\udcff" else repr(char)


def heal_prompt(tokenizer, prompt_ids):
    """(the prompt with its last tokens taken back, the ids the first new token may be): those whose
    text starts with the text taken back. What is taken back is the longest run of the prompt's last
    tokens whose text starts some token of the vocabulary; the first token of the prompt stays.

    BPE cuts a prompt as it cuts any text, so a prompt that stops where the training text went on
    ends on tokens the model has never seen there: 'ROMEO:' is 'ROMEO', ':' where the play held
    'ROMEO:\n' as one token. Taken back and redrawn as a token that starts with 'ROMEO:', it can
    become 'ROMEO:\n', and the model goes on from where it knows how to.
    Example: a tokenizer trained on "Lear.\nWhat, Kent?\n\nKent.\nSir.\n" with 12 merges, prompt "Lear."
    -> the ids of "Lea", and True for the id of 'r.\n' alone (no token starts with "ar.")
    """
    pieces = [tokenizer.token_bytes(i) for i in range(tokenizer.vocab_size)]  # bytes: GPT-2 tokens may cut a character
    taken_back = 0
    while taken_back + 1 < len(prompt_ids):
        tail = b"".join(map(tokenizer.token_bytes, prompt_ids[len(prompt_ids) - taken_back - 1:]))
        if not any(piece.startswith(tail) for piece in pieces):
            break
        taken_back += 1
    if taken_back == 0:
        return list(prompt_ids), None
    tail = b"".join(map(tokenizer.token_bytes, prompt_ids[len(prompt_ids) - taken_back:]))
    return list(prompt_ids[:len(prompt_ids) - taken_back]), np.array([piece.startswith(tail) for piece in pieces])


def print_continuation(tokenizer, prompt_ids, new_ids, kind):
    """Print the prompt, then each new token as soon as it is drawn, up to the end of the reply for a
    model of that kind (reply_end), or all of them where kind is None (--full); then one newline, also
    where Ctrl-C stops it (KeyboardInterrupt goes on to the caller)."""
    text_of = tokenizer.decoder()  # whole characters only: GPT-2's tokens may cut one, the prompt's last too
    print("".join(map(text_of.add, prompt_ids)), end="", flush=True)
    written, shown = "", 0
    try:
        for token_id in new_ids:
            written += text_of.add(token_id)  # a merged token can hold text past the reply's end too
            ready, ended = printable(written, kind)
            print(written[shown:ready], end="", flush=True)
            shown = ready
            if ended:
                break  # no more tokens are drawn: generate waits for the next one to be asked for
    finally:
        print(flush=True)


def continue_prompt(model, text, asked, sampling, rng):
    """Print the prompt's known characters, then the model's continuation, token by token. asked: what the
    command line or the conversation set (window, max_new_tokens, strict, exact, full)."""
    prompt_ids = known_prompt_ids(model.tokenizer, text, asked.strict)
    first_allowed = None
    if not asked.exact:
        prompt_ids, first_allowed = heal_prompt(model.tokenizer, prompt_ids)
    new_ids = generate(model.params, model.cfg, prompt_ids, asked.max_new_tokens, asked.window, sampling, rng,
                       first_allowed=first_allowed)
    kind = None if asked.full else checkpoint.corpus_kind(model.meta)
    print_continuation(model.tokenizer, prompt_ids, new_ids, kind)
