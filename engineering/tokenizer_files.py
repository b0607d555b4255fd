"""A tokenizer's file, a run's model.tok.json: written, and read back with every field checked.

A run saves one of three tokenizers: the project's character-level BPE (tokenizer.py), as its alphabet
and its merges of ids; for a run fine-tuned from GPT-2, GPT-2's byte-level BPE, as its vocabulary and
its merges of token texts; for a run fine-tuned from a folder with a tokenizer.json (SmolLM2, Qwen3),
that file's object and what the project keeps of its tokenizer_config.json, the chat template and the
named special tokens (hf_tokenizer.py). The file's "format" says which. Loading checks every field,
so that a damaged or foreign file is one line saying what is wrong and what to do.
GPT-2's own vocab.json and merges.txt are read by gpt2.py, with the same checks (vocab_problem,
merge_problem).
"""

import json

from engineering import hf_tokenizer
from engineering.errors import InputError
from engineering.files import read_json
from tokenizer import BPETokenizer, ByteLevelBPE, byte_stand_ins

FORMAT = "numpy-gpt-bpe"  # the project's BPE
GPT2_FORMAT = "numpy-gpt-gpt2-bpe"  # GPT-2's, in a run fine-tuned from it
HF_FORMAT = "numpy-gpt-hf-tokenizer"  # a tokenizer.json's, in a run fine-tuned from a SmolLM2 or Qwen3 folder
VERSION = 1
RETRAIN = "retrain the tokenizer with `python train.py`"


def to_bytes(tokenizer):
    """The tokenizer as the JSON of a model.tok.json. ensure_ascii escapes every non-ASCII character,
    so any str, even a lone surrogate from a badly decoded file, survives the round trip."""
    if isinstance(tokenizer, ByteLevelBPE):
        data = {"format": GPT2_FORMAT, "version": VERSION, "vocab": tokenizer.vocab,
                "merges": [list(pair) for pair in tokenizer.merges]}
    elif isinstance(tokenizer, hf_tokenizer.HFTokenizer):
        data = {"format": HF_FORMAT, "version": VERSION, "tokenizer_json": tokenizer.file,
                "settings": tokenizer.settings}
    else:
        data = {"format": FORMAT, "version": VERSION, "alphabet": tokenizer.alphabet,
                "merges": [list(pair) for pair in tokenizer.merges]}
    return json.dumps(data, ensure_ascii=True).encode("ascii")


def load(path):
    """The tokenizer a model.tok.json holds, of any of the three formats; InputError saying what is wrong with it."""
    try:
        data = read_json(path, lambda why: InputError(f"{path} is {why}, so it may be truncated or corrupt; "
                                                       f"{RETRAIN}"))
    except FileNotFoundError:
        raise FileNotFoundError(f"there is no tokenizer file at {path}; {RETRAIN}") from None
    if isinstance(data, dict) and data.get("format") == GPT2_FORMAT:
        return gpt2_tokenizer(data, path)
    if isinstance(data, dict) and data.get("format") == HF_FORMAT:
        return hf_tokenizer_of(data, path)
    problem = file_problem(data)
    if problem:
        raise InputError(f"{path} {problem}; {RETRAIN}")
    return BPETokenizer(data["alphabet"], data["merges"])


def gpt2_tokenizer(data, path):
    """The ByteLevelBPE in the contents of a model.tok.json of GPT2_FORMAT, or InputError naming path."""
    vocab, merges = data.get("vocab"), data.get("merges")
    problem = vocab_problem(vocab) if isinstance(vocab, dict) else "holds no vocabulary"
    if problem or not isinstance(merges, list) or not all(isinstance(m, list) and len(m) == 2 for m in merges):
        raise InputError(f"{path} is damaged ({problem or 'its merges are not pairs'}): restore it from a copy, "
                         f"or delete its run ({path.parent}/) and train again")
    return ByteLevelBPE(vocab, merges)


def hf_tokenizer_of(data, path):
    """The HFTokenizer in the contents of a model.tok.json of HF_FORMAT, every field of its tokenizer.json and
    settings checked as reading a folder checks them; InputError naming path."""
    restore = f"restore it from a copy, or delete its run ({path.parent}/) and train again"
    file, settings = data.get("tokenizer_json"), data.get("settings")
    if type(data.get("version")) is not int or data["version"] != VERSION:
        raise InputError(f"{path} has version {data.get('version')!r}, but this code reads version {VERSION}; "
                         f"{restore}")
    if not isinstance(file, dict) or not isinstance(settings, dict):
        raise InputError(f"{path} is damaged (it lacks its tokenizer.json object or its settings): {restore}")
    unknown = sorted(set(settings) - {"chat_template", *hf_tokenizer.SPECIAL_TOKEN_NAMES})
    if unknown:
        raise InputError(f"{path} is damaged (its settings hold {unknown[0]!r}, no setting of a tokenizer): {restore}")
    return hf_tokenizer.from_json(file, settings, path, restore)


# --- the project's BPE ---------------------------------------------------------------------------

def file_problem(data):
    """Say what is wrong with the contents of a tokenizer file, or None if nothing is.

    Example: data={"format": "numpy-gpt-bpe", "version": 2}
             -> "has version 2, but this code reads version 1"
    """
    if not isinstance(data, dict):
        return "holds JSON that is not an object, so it is not a saved tokenizer"
    if data.get("format") != FORMAT:
        return f"is not a tokenizer of this project (its format is {data.get('format')!r}, not {FORMAT!r})"
    if type(data.get("version")) is not int or data["version"] != VERSION:
        return f"has version {data.get('version')!r}, but this code reads version {VERSION}"
    alphabet, merges = data.get("alphabet"), data.get("merges")
    return alphabet_problem(alphabet) or merges_problem(merges, len(alphabet))


def alphabet_problem(alphabet):
    """Say what is wrong with a loaded alphabet, or None if nothing is.

    Example: alphabet=["b", "a"]
             -> "has an alphabet that is not sorted by code point without repeats ('a' after 'b')"
    """
    if not isinstance(alphabet, list):
        return "has no alphabet list"
    for i, char in enumerate(alphabet):
        if not isinstance(char, str) or len(char) != 1:
            return f"has alphabet entry {i} = {char!r}, which is not a single character"
    for before, char in zip(alphabet, alphabet[1:]):
        if not before < char:
            return (f"has an alphabet that is not sorted by code point without repeats "
                    f"({char!r} after {before!r})")
    return None


def merges_problem(merges, alphabet_size):
    """Say what is wrong with loaded merges, or None if nothing is; merge i may use only the
    ids defined before it, those below alphabet_size + i.

    Example: merges=[[0, 5]], alphabet_size=2 -> "has merge 0 = [0, 5], but merge 0 may only use ids 0 to 1"
    """
    if not isinstance(merges, list):
        return "has no merges list"
    seen = set()
    for i, merge in enumerate(merges):
        defined = alphabet_size + i
        if not (isinstance(merge, list) and len(merge) == 2 and all(type(x) is int for x in merge)):
            return f"has merge {i} = {merge!r}, which is not a pair of token ids"
        if not all(0 <= x < defined for x in merge):
            return f"has merge {i} = {merge}, but merge {i} may only use ids 0 to {defined - 1}"
        if tuple(merge) in seen:
            return f"has merge {i} = {merge}, a repeat of an earlier merge"
        seen.add(tuple(merge))
    return None


# --- GPT-2's byte-level BPE ----------------------------------------------------------------------

def vocab_problem(vocab):
    """What is wrong with a GPT-2 vocabulary (token text -> id), or None: ids must be 0..n-1 and the
    256 byte stand-ins must be tokens. Example: vocab_problem({"!": 0, '"': 2}) -> "has ids that are not 0..1"
    """
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in vocab.values()):
        return "maps a token to something other than a whole number"
    if sorted(vocab.values()) != list(range(len(vocab))):
        return f"has ids that are not 0..{len(vocab) - 1}"
    missing = [char for _, char in byte_stand_ins() if char not in vocab]
    if missing:
        return f"lacks the byte token {missing[0]!r} ({len(missing)} of the 256 missing)"
    return None


def merge_problem(pair, vocab):
    """What is wrong with one line of GPT-2's merges.txt, split at its spaces, or None.

    Example: merge_problem(("Ġ", "t"), {"Ġ": 0, "t": 1, "Ġt": 2}) -> None
    """
    if len(pair) != 2 or not all(pair):
        return f"is {' '.join(pair)!r}, not two tokens with one space between them"
    unknown = [token for token in (*pair, pair[0] + pair[1]) if token not in vocab]
    if unknown:
        return f"merges {pair[0]!r} and {pair[1]!r}, but {unknown[0]!r} is not in vocab.json"
    return None
