"""Sampling from a trained model: one-shot on the command line, and the functions talk.py uses.

    python generate.py "The little cat" --max_new_tokens 80 --seed 1

generate.py and talk.py read the same command line: the sampling settings of config.py, the window,
and two choices. A character the model has never seen is left out of the prompt with a warning
(--strict refuses the prompt instead), and a continuation keeps the shape of what the model
learned (reply_end): from the rows of a CSV it ends at the end of its row, the first newline it
writes; from one running text (a .txt: a book, a play) at the end of its paragraph, the first
blank line it writes, so a speech comes out whole with its speaker and line breaks. --full writes
all max_new_tokens instead. --checkpoint takes a folder, or a run's name (or the start of one).

Each new token is drawn from the last position's logits, filtered in this order:
    1. temperature: divide the logits by it (0 means greedy: take the most likely token)
    2. top_k: keep the k most likely tokens (0 means off)
    3. top_p: of what is left, keep the smallest set of most likely tokens whose probability
       reaches top_p (nucleus sampling)
    4. renormalise what is kept and draw one token with a seeded np.random.Generator
Ties in the ordering go to the smaller token id, so a filter never depends on sort luck.

The scripts take the prompt's last tokens back before they continue it (heal_prompt): the first new
token must then start with their text, so a prompt that stops inside what the model learned as one
token ('ROMEO:' of 'ROMEO:\n') is continued as the text it learned, not from a split it never saw.
"""

import math
import sys
from dataclasses import dataclass

import numpy as np

import checkpoint
import config
from errors import InputError
from transformer import forward_cached


ROUNDING = 1e-9  # top-p counts a set as reaching top_p when it falls short by less than this


@dataclass(frozen=True)
class Sampling:
    temperature: float  # 0 means greedy
    top_k: int  # 0 means off
    top_p: float  # 1 means off

    def __post_init__(self):
        if not 0 <= self.temperature < math.inf:
            raise InputError(f"temperature must be a finite number, 0 (greedy) or more, got {self.temperature}")
        if isinstance(self.top_k, bool) or not (isinstance(self.top_k, (int, np.integer)) and self.top_k >= 0):
            raise InputError(f"top_k must be a whole number, 0 (off) or more, got {self.top_k}")
        if not 0 < self.top_p <= 1:
            raise InputError(f"top_p must be in (0, 1], got {self.top_p}")


def filtered_probs(logits, sampling):  # (V,) -> (V,) probabilities, zero outside what is kept
    """The distribution a token is drawn from: softmax(logits / temperature), then top-k, then top-p.

    Example: logits [2, 1, 0, -1], temperature 1, top_k 2 -> [0.731, 0.269, 0, 0]
    """
    logits = np.asarray(logits, dtype=np.float64)
    shifted = logits - logits.max()  # <= 0, so dividing by a tiny temperature gives -inf at worst, never nan
    if sampling.temperature == 0:
        probs = (np.arange(len(logits)) == np.argmax(logits)).astype(np.float64)  # the first of equal maxima
    else:
        with np.errstate(over="ignore"):  # -inf, for a token far below the maximum, is the right answer
            probs = np.exp(shifted / sampling.temperature)
        probs /= probs.sum()
    order = np.argsort(-probs, kind="stable")  # most likely first; ties to the smaller id
    keep = len(probs)
    if sampling.top_k:
        keep = min(keep, sampling.top_k)
    if sampling.top_p < 1:
        kept = probs[order[:keep]]
        reach = np.cumsum(kept) / kept.sum()  # probabilities renormalised after top-k
        # the first prefix reaching top_p; a sum of rounded probabilities such as 0.7 + 0.1 can come
        # out a hair under 0.8, which would otherwise keep one token too many
        keep = int(np.searchsorted(reach, sampling.top_p - ROUNDING)) + 1
    filtered = np.zeros_like(probs)
    filtered[order[:keep]] = probs[order[:keep]]
    return filtered / filtered.sum()


def sample_next(logits, sampling, rng):  # (V,) -> int
    """One token id drawn from a row of logits, as the module docstring says."""
    cumulative = np.cumsum(filtered_probs(logits, sampling))
    # the token whose slice of [0, total) holds a uniform draw; tokens with probability 0 have no slice
    return int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))


def generate(params, cfg, prompt_ids, max_new_tokens, window, sampling, rng, stop_id=None, use_cache=True,
             first_allowed=None):
    """Yield up to max_new_tokens new ids, each as soon as it is drawn; stop after stop_id.

    The model reads only the last `window` ids, so a prompt of any length works. With use_cache,
    while the window still grows each new id costs the work of one position: the keys and values
    of the earlier ones are kept (a key/value cache). Once the window is full it slides, every
    id moves to a new position, and the model reads the whole window again. first_allowed, a (V,)
    array of booleans, limits the first draw to the ids where it is True (heal_prompt).
    """
    if len(prompt_ids) == 0:
        raise InputError("the prompt is empty: give at least one character")
    if not 0 < window <= cfg.context_len:
        raise InputError(f"the window must be in 1..{cfg.context_len} (context_len), got {window}")
    context = list(prompt_ids)[-window:]
    logits, past = forward_cached(params, context, cfg)
    for step in range(max_new_tokens):
        scores = logits
        if step == 0 and first_allowed is not None:
            scores = np.where(first_allowed, scores, -np.inf)  # probability 0 for every other id
        next_id = sample_next(scores, sampling, rng)
        yield next_id
        if next_id == stop_id or step == max_new_tokens - 1:
            return
        context.append(next_id)
        if use_cache and len(context) <= window:
            logits, past = forward_cached(params, [next_id], cfg, past)
        else:
            context = context[-window:]
            logits, past = forward_cached(params, context, cfg)


# --- where a reply ends ---------------------------------------------------------------------------

REPLY_ENDS = {"rows": "\n", "text": "\n\n"}  # a CSV's row ends at its newline; a text's paragraph at a blank line


def reply_end(written, kind):
    """Where the reply ends in the text written so far, for a model of that kind (checkpoint.corpus_kind):
    the index of the first end of a row ("rows") or of a paragraph ("text"); None while it goes on.

    Example: reply_end("ROMEO:\\nO, she doth\\nteach\\n\\nJULIET:", "text") -> 24; with "rows" -> 6
    """
    at = written.find(REPLY_ENDS[kind])
    return None if at < 0 else at


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


def sampling_parser(description):
    """The command line both sampling scripts read: the settings of config.py that sampling uses and
    the three options below; a training setting (--epochs) is refused as an unknown option."""
    p = config.parser(description, SAMPLING_SETTINGS, {
        "seed": "seeds the random draws of the sampling: the same seed and prompt give the same text",
        "checkpoint": "the model to read: a home folder (its latest good model), one run's folder, or a run's name "
                      "in checkpoints/runs/ or the start of one (python talk.py --list lists them)"})
    group = p.add_argument_group("what the model reads, and where it stops")
    group.add_argument("--window", type=int, default=0, metavar="INT",
                       help="tokens the model reads: the last INT of the prompt and what it has written so far, "
                            "at most the model's context_len; 0 = the seq_len the checkpoint was trained with")
    group.add_argument("--strict", action="store_true",
                       help="refuse a prompt with a character the model has never seen, instead of leaving "
                            "the character out with a warning")
    group.add_argument("--full", action="store_true",
                       help="write all max_new_tokens tokens, instead of stopping where the model ends a reply: "
                            "at the end of a row (its first newline) for a model of a CSV's rows, at the end "
                            "of a paragraph (its first blank line) for a model of one text")
    return p


def trained_window(model):
    """The seq_len the checkpoint was trained with: the positions it learned (those past it only
    ever saw weight decay). A checkpoint that does not record it gets the whole context_len."""
    trained = model.meta.get("settings")
    seq_len = trained.get("seq_len") if isinstance(trained, dict) else None
    return seq_len if isinstance(seq_len, int) else model.cfg.context_len


def parse_sampling(p, argv=None):
    """argv parsed with a sampling_parser, its settings checked."""
    args = config.parse(p, argv)
    config.settings(args)  # checks the values given; the settings sampling does not use are not read
    return args


def load_for_sampling(args):
    """The checkpoint --checkpoint names (a folder, or a run of config.py's checkpoint folder by its
    name), with args.checkpoint made that folder and args.window filled in where it was left at 0."""
    args.checkpoint = checkpoint.find(args.checkpoint, config.defaults()["checkpoint"])
    model = checkpoint.load(args.checkpoint)
    context_len = model.cfg.context_len
    args.window = args.window or trained_window(model)
    if not 0 < args.window <= context_len:  # checked here, before anything is printed
        raise InputError(f"--window {args.window} does not fit this model: it reads 1 to {context_len} tokens "
                         f"(its context_len); give --window {context_len} or less, or leave it out")
    return model


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
        listed = ", ".join(map(repr, unknown))
        these = "this character" if len(unknown) == 1 else "these characters"
        if strict:
            raise InputError(f"the prompt has {listed}: the model has never seen {these} "
                             f"(without --strict, {'it is' if len(unknown) == 1 else 'they are'} left out)")
        warn(f"left out {listed}: the model has never seen {these}")
    if not ids:
        raise InputError("nothing is left to continue: give characters the model knows")
    return ids


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
    texts = [tokenizer.decode([i]) for i in range(tokenizer.vocab_size)]
    taken_back = 0
    while taken_back + 1 < len(prompt_ids):
        tail = tokenizer.decode(prompt_ids[len(prompt_ids) - taken_back - 1:])
        if not any(text.startswith(tail) for text in texts):
            break
        taken_back += 1
    if taken_back == 0:
        return list(prompt_ids), None
    tail = tokenizer.decode(prompt_ids[len(prompt_ids) - taken_back:])
    return list(prompt_ids[:len(prompt_ids) - taken_back]), np.array([text.startswith(tail) for text in texts])


def print_continuation(tokenizer, prompt_ids, new_ids, kind):
    """Print the prompt, then each new token as soon as it is drawn, up to the end of the reply for a
    model of that kind (reply_end), or all of them where kind is None (--full); then one newline."""
    print(tokenizer.decode(prompt_ids), end="", flush=True)
    written, shown = "", 0
    for token_id in new_ids:
        written += tokenizer.decode([token_id])  # a merged token can hold text past the reply's end too
        ready, ended = printable(written, kind)
        print(written[shown:ready], end="", flush=True)
        shown = ready
        if ended:
            break  # no more tokens are drawn: generate waits for the next one to be asked for
    print()


def reply_kind(model, full):
    """The kind of reply print_continuation writes: None with --full, else the kind of text the model learned."""
    return None if full else checkpoint.corpus_kind(model.meta)


def main(argv=None):
    p = sampling_parser("Continue a prompt with a trained model (see talk.py for a conversation).")
    p.add_argument("prompt", help="the text to continue")
    args = parse_sampling(p, argv)
    model = load_for_sampling(args)
    prompt_ids, first_allowed = heal_prompt(model.tokenizer, known_prompt_ids(model.tokenizer, args.prompt,
                                                                                args.strict))
    sampling = Sampling(args.temperature, args.top_k, args.top_p)
    new_ids = generate(model.params, model.cfg, prompt_ids, args.max_new_tokens, args.window, sampling,
                       np.random.default_rng(args.seed), first_allowed=first_allowed)
    print_continuation(model.tokenizer, prompt_ids, new_ids, reply_kind(model, args.full))


if __name__ == "__main__":
    config.run(main)
