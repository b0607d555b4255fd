"""A Hugging Face tokenizer.json read as the project's tokenizer, encoding and decoding as `tokenizers` does.

    tokenizer = hf_tokenizer.load("SmolLM2-135M-Instruct")  # tokenizer.json, tokenizer_config.json beside it
    tokenizer.encode("Hi<|im_end|>")  # the ids of tokenizers' Tokenizer.encode(text).ids

SmolLM2, Qwen3 and GPT-2 ship a byte-level BPE in a tokenizer.json: GPT-2's merging (tokenizer.ByteLevelBPE),
with the steps around it that the file names. Encoding a text runs them in this order, each as `tokenizers`
does it (its Rust source is the reference: tokenizer/added_vocabulary.rs, normalizer.rs, models/bpe/):

1. Added tokens ("<|im_end|>", "<think>") are cut out of the text first, leftmost and longest first: those
   marked "normalized": false in the raw text, the others in the normalized text. lstrip and rstrip take the
   whitespace beside a token into it; a single_word token is only found between non-word characters.
2. The normalizer: NFC (Qwen3) or none.
3. The pre-tokenizer cuts each stretch between added tokens into words: Split by a regex (Qwen3's, Llama-3's),
   Digits (SmolLM2 cuts every digit off), and ByteLevel, which writes each word's UTF-8 bytes as GPT-2's
   stand-in characters (tokenizer.byte_stand_ins), after GPT-2's own regex where use_regex is set.
4. The model, a BPE, merges each word's stand-ins, lowest rank first, leftmost first (merge_all). A stand-in
   the vocabulary lacks is dropped, as tokenizers drops it (SmolLM2's vocabulary lacks a few bytes), or becomes
   unk_token where the file names one. ignore_merges takes a word found whole in the vocabulary as one token.
5. The post-processor adds the ids it names around the text (a TemplateProcessing's BOS) unless
   add_special_tokens is False; tokenizers' encode adds them by default, and so does ours.

Decoding writes each token's stand-ins back as bytes (an added token's text as its UTF-8) and reads the bytes
as UTF-8, each broken sequence one U+FFFD, as Rust's String::from_utf8_lossy does; an id of no token is left
out, as tokenizers leaves it out.

Exactly as tokenizers, but for one thing: Unicode's tables. \\p{L} and its kind are the regex package's, and a
character assigned in a version of Unicode that tokenizers' regex engine (Oniguruma) does not know yet is a
letter here and unassigned there (today, as of regex 2026.5 and tokenizers 0.23, Unicode 17.0's: CJK Extension J,
U+323B0 on, and a few new scripts), so a word holding one may be cut otherwise.

What a file holds that this reader does not follow (another normalizer, a Metaspace, byte_fallback, dropout,
truncation) is one line naming it. Needs the gpt2 extra (pip install -e ".[gpt2]"): regex, for \\p{L}.

The project's own tokenizers are written out as tokenizer.json and tokenizer_config.json too (folder_files), so
that transformers' AutoTokenizer encodes a text to the ids the project gives it.
"""

import heapq
import importlib
import json
import unicodedata
from functools import partial
from pathlib import Path

from engineering import chat_template
from engineering.errors import InputError
from engineering.files import read_json
from tokenizer import END_OF_TEXT, PIECE, PRE_SPLIT, ByteLevelBPE, StreamDecoder, byte_stand_ins

BEHAVIOURS = ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")  # a Split's
SPECIAL_TOKEN_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
FLAGS = ("single_word", "lstrip", "rstrip", "normalized", "special")  # an added token's, each a bool
READS = "this project reads byte-level BPE tokenizers such as GPT-2's, SmolLM2's and Qwen3's"
REFETCH = "download the folder again"

STAND_IN = {byte: char for byte, char in byte_stand_ins()}
BYTE_OF = {char: byte for byte, char in STAND_IN.items()}


class Refused(Exception):
    """What this reader does not follow in a tokenizer file, in words that follow the file's name."""


class Damaged(Refused):
    """What is wrong with a tokenizer file, which another copy may not have: the reader's advice follows it."""


def regex_module():
    """The regex package (\\p{L} in the patterns), or InputError saying how to install it."""
    try:
        return importlib.import_module("regex")
    except ModuleNotFoundError:
        raise InputError('reading a tokenizer.json needs the regex package: pip install -e ".[gpt2]"') from None


# --- reading a folder ----------------------------------------------------------------------------

def load(folder):
    """The tokenizer of a Hugging Face folder: its tokenizer.json, with the chat template and special tokens of
    its tokenizer_config.json (and chat_template.jinja, which transformers prefers) where it has them.

    Example: load("SmolLM2-135M-Instruct") -> its HFTokenizer, whose chat.end_of_turn is "<|im_end|>"
    """
    folder = Path(folder)
    path = folder / "tokenizer.json"
    if not path.is_file():
        raise InputError(f"{path} is missing: the folder holds no tokenizer.json; {REFETCH}")
    file = read_object(path)
    config_path = folder / "tokenizer_config.json"
    config = read_object(config_path) if config_path.is_file() else {}
    template_path = folder / "chat_template.jinja"
    if template_path.is_file():
        try:
            config = {**config, "chat_template": template_path.read_text(encoding="utf-8")}
        except UnicodeDecodeError:
            raise InputError(f"{template_path} is not UTF-8 text; {REFETCH}") from None
    return from_json(file, checked(config_path, REFETCH, settings_of, config), path, REFETCH)


def read_object(path):
    """The JSON object in path, or InputError naming the file."""
    data = read_json(path, lambda why: InputError(f"{path} is {why}; {REFETCH}"))
    if not isinstance(data, dict):
        raise InputError(f"{path} holds a {type(data).__name__}, not a JSON object; {REFETCH}")
    return data


def from_json(file, config, where, advice):
    """The HFTokenizer of a tokenizer.json's object and the settings of a tokenizer_config.json (settings_of),
    every field checked; InputError naming where for what this reader does not follow, and for what is
    damaged, with advice."""
    return checked(where, advice, lambda: HFTokenizer(file, settings_of(config)))


def checked(where, advice, make, *args):
    """make(*args), a Refused turned into one InputError that names where, with advice for a damaged file."""
    try:
        return make(*args)
    except Damaged as problem:
        raise InputError(f"{where} {problem}; {advice}") from None
    except Refused as problem:
        raise InputError(f"{where} {problem}") from None


def settings_of(config):
    """What the project keeps of a tokenizer_config.json: the chat template (the one named "default" of a
    list) and the named special tokens, each a string. Example: {"eos_token": {"content": "<|im_end|>", ...},
    "chat_template": "..."} -> {"chat_template": "...", "eos_token": "<|im_end|>"}"""
    settings = {}
    template = config.get("chat_template")
    if isinstance(template, list):
        named = {entry.get("name"): entry.get("template") for entry in template if isinstance(entry, dict)}
        if "default" not in named:
            raise Refused(f"holds chat templates named {sorted(map(str, named))} but none named default, "
                          f"the one a chat uses")
        template = named["default"]
    if template is not None:
        if not isinstance(template, str):
            raise Damaged(f"has a chat_template that is a {type(template).__name__}, not a Jinja template's text")
        settings["chat_template"] = template
    for name in SPECIAL_TOKEN_NAMES:
        token = config.get(name)
        if isinstance(token, dict):  # an AddedToken as transformers writes it
            token = token.get("content")
        if token is not None and not isinstance(token, str):
            raise Damaged(f"has a {name} that is not a token's text: {token!r}")
        if token is not None:
            settings[name] = token
    return settings


# --- the tokenizer -------------------------------------------------------------------------------

class HFTokenizer:
    """A tokenizer.json's byte-level BPE, with its added tokens, and what tokenizer_config.json adds: the named
    special tokens and the chat template (chat: a ChatTemplate, or None for a base model).

    file and settings are what it was made from, kept to save it (engineering/tokenizer_files.py) and write it
    out again (folder_files): the rest is derived from them.
    """

    def __init__(self, file, settings):
        regex = regex_module()
        self.file, self.settings = file, dict(settings)
        check_top(file)
        self.normalize = normalizer(file.get("normalizer"))
        self.model = BPEModel(file.get("model"))
        self.added = added_tokens(file.get("added_tokens"), self.model.vocab, self.normalize)
        self.text_of = {**{i: text for text, i in self.model.vocab.items()},
                        **{token.id: token.text for token in self.added}}
        if sorted(self.text_of) != list(range(len(self.text_of))):
            raise Damaged(f"has token ids that are not 0..{len(self.text_of) - 1} (its model vocab and added tokens "
                          f"together)")
        self.raw_tokens = TokenFinder(regex, [token for token in self.added if not token.normalized])
        self.normalized_tokens = TokenFinder(regex, [token for token in self.added if token.normalized])
        self.words = pre_tokenizer(regex, file.get("pre_tokenizer"))
        self.prefix, self.suffix = post_processor(file.get("post_processor"), self.vocab_size)
        check_decoder(file.get("decoder"))
        self.special_ids = {token.id for token in self.added if token.special}
        self._bytes = [token_text_bytes(self.text_of[i]) for i in range(self.vocab_size)]
        self.id_of = {**self.model.vocab, **{token.content: token.id for token in self.added}}
        self.chat = self.chat_of([token.content for token in self.added])

    def chat_of(self, added_tokens):
        """The ChatTemplate of the settings' chat_template, seeing the named special tokens; None without one."""
        if "chat_template" not in self.settings:
            return None
        variables = {name: token for name, token in self.settings.items() if name in SPECIAL_TOKEN_NAMES}
        try:
            return chat_template.ChatTemplate(self.settings["chat_template"], variables, added_tokens)
        except chat_template.Unreadable as bad:
            raise Damaged(f"has a chat_template (from tokenizer_config.json) that Jinja cannot read: {bad}") from None

    @property
    def vocab_size(self):
        return len(self.text_of)

    def encode(self, text, add_special_tokens=True):
        """The ids of text, as tokenizers' Tokenizer.encode(text, add_special_tokens).ids gives them.

        Example: tests/tiny_tokenizers.py's handwritten file, encode(" hi<|im_end|>hi") -> [257, 258, 256]
        ("Ġhi", then the added token, cut out before the words, then "hi")
        """
        ids = []
        for piece, token_id in self.pieces(text):
            if token_id is not None:
                ids.append(token_id)
            else:
                for word in self.words(piece):
                    ids += self.model.word_ids(word)
        return self.prefix + ids + self.suffix if add_special_tokens else ids

    def pieces(self, text):
        """[(text, added token's id or None)]: text cut at its added tokens, each stretch between them normalized.
        Example: NFC, and <|im_end|> of id 2: "e\\u0301<|im_end|>" -> [("é", None), ("<|im_end|>", 2)]"""
        pieces = []
        for raw, token_id in self.raw_tokens.split(text):
            if token_id is not None:
                pieces.append((raw, token_id))
            else:
                pieces += self.normalized_tokens.split(self.normalize(raw))
        return [(piece, token_id) for piece, token_id in pieces if piece]

    def encode_known(self, text):
        """(ids, the characters left out): the scripts' way to encode. A character is left out where one of its
        bytes has no token and the file names no unk_token (SmolLM2 lacks a few bytes, as tokenizers does)."""
        stretches = [piece for piece, token_id in self.pieces(text) if token_id is None]
        return self.encode(text), self.model.left_out(stretches)

    def token_bytes(self, token_id):
        """The bytes one id stands for; b"" for an id of no token, which tokenizers' decode leaves out.
        Example: GPT-2's 220 ("Ġ") -> b" "; "<|im_end|>" -> b"<|im_end|>" """
        return self._bytes[token_id] if 0 <= token_id < self.vocab_size else b""

    def decode(self, ids, skip_special_tokens=False):
        """The text of ids, as tokenizers' Tokenizer.decode(ids, skip_special_tokens) gives it.

        Example: decode(encode("naïve 🤖")) -> "naïve 🤖"; decode of "🤖"'s first two bytes' tokens -> "\\ufffd"
        """
        kept = [i for i in ids if not (skip_special_tokens and i in self.special_ids)]
        return b"".join(map(self.token_bytes, kept)).decode("utf-8", errors="replace")

    def decoder(self):
        """A StreamDecoder: the text of ids given one at a time, each character once it is whole."""
        return StreamDecoder(self)

    def token_id(self, text):
        """The id of the token whose text is text (an added token's, or a vocabulary entry), or None."""
        return self.id_of.get(text)

    def stop_ids(self):
        """The ids a reply ends at: the chat template's end of turn and eos_token, where each is a token.
        Example: SmolLM2-135M-Instruct -> [2] (<|im_end|> is both); Qwen3 -> [151645] (<|im_end|>)"""
        ends = [self.settings.get("eos_token"), self.chat.end_of_turn if self.chat else None]
        return sorted({self.id_of[text] for text in ends if text in self.id_of})

    def chat_prompt(self, messages, add_generation_prompt=True, **variables):
        """The text of a conversation, rendered by the chat template as transformers' apply_chat_template(
        messages, tokenize=False) renders it; InputError for a tokenizer without a template (a base model)."""
        if self.chat is None:
            raise InputError("this model's tokenizer_config.json holds no chat_template: it is a base model, which "
                             "continues a text rather than answering a conversation")
        return self.chat.render(messages, add_generation_prompt=add_generation_prompt, **variables)

    def __eq__(self, other):
        if not isinstance(other, HFTokenizer):
            return NotImplemented
        return self.file == other.file and self.settings == other.settings

    def __repr__(self):
        return f"HFTokenizer({self.vocab_size} tokens, {len(self.added)} added)"


def check_top(file):
    """Refused where the file is no tokenizer.json or asks for what changes encode's ids beyond the tokens."""
    if file.get("version", "1.0") != "1.0":
        raise Refused(f"is of version {file.get('version')!r}; tokenizers reads version 1.0")
    for setting in ("truncation", "padding"):
        if file.get(setting) is not None:
            raise Refused(f"sets {setting}, which cuts or pads every encoding; set it to null")


def token_text_bytes(text):
    """The bytes of a token's text, as the ByteLevel decoder gives them: its stand-ins' bytes, or, where a
    character is no stand-in (an added token such as "<|日本|>"), the text's UTF-8. Example: "Ġhi" -> b" hi" """
    if all(char in BYTE_OF for char in text):
        return bytes(BYTE_OF[char] for char in text)
    return text.encode("utf-8")


# --- 1. added tokens -----------------------------------------------------------------------------

class AddedToken:
    """One entry of added_tokens: its id, its content, its flags, and text, what it matches and decodes as:
    the content, normalized where the token is."""

    def __init__(self, entry, normalize):
        self.id, self.content = entry["id"], entry["content"]
        self.single_word, self.lstrip, self.rstrip, self.normalized, self.special = (entry[f] for f in FLAGS)
        self.text = normalize(self.content) if self.normalized else self.content


def added_tokens(entries, vocab, normalize):
    """The added tokens, each checked, with the ids tokenizers gives them: a vocabulary entry's id, else the
    next id after the vocabulary, in the file's order. Refused where the file says another id."""
    if not isinstance(entries, list):
        raise Damaged("has no added_tokens list")
    tokens, next_id = {}, len(vocab)
    for n, entry in enumerate(entries):
        problem = added_token_problem(entry)
        if problem:
            raise Damaged(f"has added token {n} = {json.dumps(entry)[:80]}, which {problem}")
        content = entry["content"]
        if not content:
            continue  # tokenizers ignores an empty token
        given = vocab.get(content, tokens[content].id if content in tokens else None)
        if given is None:
            given, next_id = next_id, next_id + 1
        if entry["id"] != given:
            raise Damaged(f"gives the added token {content!r} the id {entry['id']}, but tokenizers gives it {given}")
        tokens[content] = AddedToken(entry, normalize)
    return list(tokens.values())


def added_token_problem(entry):
    """What is wrong with one entry of added_tokens, or None.
    Example: {"id": 3, "content": 7} -> "has no text (content)" """
    if not isinstance(entry, dict):
        return "is not an object"
    if not isinstance(entry.get("content"), str):
        return "has no text (content)"
    if type(entry.get("id")) is not int:
        return "has no whole-number id"
    missing = [flag for flag in FLAGS if not isinstance(entry.get(flag), bool)]
    return f"lacks {missing[0]} (true or false)" if missing else None


class TokenFinder:
    """Added tokens found in a text as tokenizers' AddedVocabulary.find_matches finds them: leftmost first, the
    longest at a place, never overlapping; lstrip/rstrip widen a match over the whitespace beside it; a
    single_word token is passed over where a word character touches it."""

    def __init__(self, regex, tokens):
        self.token = {token.text: token for token in tokens}
        longest_first = sorted(self.token, key=len, reverse=True)  # an alternation tries its branches in order
        self.pattern = regex.compile("|".join(map(regex.escape, longest_first))) if tokens else None
        self.space = regex.compile(r"\s")  # Unicode's White_Space, as Rust's regex \s
        self.word = regex.compile(r"[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]")  # Rust's \w

    def split(self, text):
        """[(text, token id or None)] covering text. Example: tokens <|im_end|> (2), "a<|im_end|>b"
        -> [("a", None), ("<|im_end|>", 2), ("b", None)]"""
        if self.pattern is None or not text:
            return [(text, None)]
        pieces, done = [], 0
        for match in self.pattern.finditer(text):
            token = self.token[match.group()]
            start, stop = match.span()
            if token.single_word and (self.is_word(text, start - 1) or self.is_word(text, stop)):
                continue
            if token.lstrip:
                start = max(self.spaces_end_at(text, start), done)
            if token.rstrip:
                stop = self.spaces_start_at(text, stop)
            if done < start:
                pieces.append((text[done:start], None))
            pieces.append((text[start:stop], token.id))
            done = stop
        if done != len(text):
            pieces.append((text[done:], None))
        return pieces

    def is_word(self, text, at):
        return 0 <= at < len(text) and self.word.match(text[at]) is not None

    def spaces_end_at(self, text, at):
        """Where the run of whitespace that ends at position at starts. Example: ("a  <x>", 3) -> 1"""
        while at > 0 and self.space.match(text[at - 1]):
            at -= 1
        return at

    def spaces_start_at(self, text, at):
        """Where the run of whitespace that starts at position at ends. Example: ("<x>  b", 3) -> 5"""
        while at < len(text) and self.space.match(text[at]):
            at += 1
        return at


# --- 2. the normalizer ---------------------------------------------------------------------------

def normalizer(spec):
    """The normalizer's function of a text: NFC, or the text as it is (null, or an empty Sequence)."""
    steps = normalizer_steps(spec)
    if steps:
        return lambda text: unicodedata.normalize("NFC", text)
    return lambda text: text


def normalizer_steps(spec):
    """["NFC", ...] of a normalizer, a Sequence's flattened; Refused for another kind."""
    if spec is None:
        return []
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind == "Sequence" and isinstance(spec.get("normalizers"), list):
        return [step for inner in spec["normalizers"] for step in normalizer_steps(inner)]
    if kind == "NFC":
        return ["NFC"]
    raise Refused(f"has a normalizer of type {kind!r}, which this project does not follow: it reads NFC or none; "
                  f"{READS}")


# --- 3. the pre-tokenizer ------------------------------------------------------------------------

def pre_tokenizer(regex, spec):
    """words(text) -> the words of text, each as the model receives it (in stand-ins after ByteLevel)."""
    steps = [pre_tokenizer_step(regex, step) for step in flattened(spec)]
    if not any(step.func is byte_level for step in steps):
        raise Refused(f"has no ByteLevel pre-tokenizer, so it is not a byte-level BPE; {READS}")

    def words(text):
        pieces = [text]
        for step in steps:
            pieces = [part for piece in pieces for part in step(piece) if part]
        return pieces
    return words


def flattened(spec):
    """The steps of a pre-tokenizer, a Sequence's (nested or not) in order; none for null."""
    if spec is None:
        return []
    if isinstance(spec, dict) and spec.get("type") == "Sequence" and isinstance(spec.get("pretokenizers"), list):
        return [step for inner in spec["pretokenizers"] for step in flattened(inner)]
    return [spec]


def pre_tokenizer_step(regex, spec):
    """One pre-tokenizer as step(piece) -> its parts: Split, Digits or ByteLevel; Refused for another."""
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind == "Split":
        return partial(split, pattern=split_pattern(regex, spec.get("pattern")), behaviour=split_behaviour(spec),
                       invert=spec["invert"])
    if kind == "Digits":
        if not isinstance(spec.get("individual_digits"), bool):
            raise Damaged("has a Digits pre-tokenizer without individual_digits (true or false)")
        behaviour = "Isolated" if spec["individual_digits"] else "Contiguous"
        return partial(split, pattern=regex.compile(r"\p{N}"), behaviour=behaviour, invert=False)
    if kind == "ByteLevel":
        use_regex = spec.get("use_regex", True)  # files older than the setting split by GPT-2's regex
        if not isinstance(spec.get("add_prefix_space"), bool) or not isinstance(use_regex, bool):
            raise Damaged("has a ByteLevel pre-tokenizer whose add_prefix_space or use_regex is not true or false")
        return partial(byte_level, add_prefix_space=spec["add_prefix_space"],
                       words=regex.compile(PRE_SPLIT) if use_regex else None)
    raise Refused(f"has a pre-tokenizer of type {kind!r}, which this project does not follow: it reads Split, Digits "
                  f"and ByteLevel; {READS}")


# Oniguruma (tokenizers' regex engine) reads these in Ruby's way and Python's regex otherwise: \h is a hex digit
# there, (?m) makes . match a newline, \Z and \z differ; a pattern with one is refused rather than misread.
RUBY_ONLY = r"(?<!\\)(?:\\\\)*(?:\\[hHzZG]|\(\?[a-ln-z]*m)"


def split_pattern(regex, pattern):
    """The compiled pattern of a Split: {"Regex": text} read in Oniguruma's (Ruby's) way, where ^ and $ match at
    every line; {"String": text} matched literally."""
    if not (isinstance(pattern, dict) and len(pattern) == 1 and list(pattern)[0] in ("Regex", "String")
            and isinstance(list(pattern.values())[0], str)):
        raise Damaged(f"has a Split whose pattern is {pattern!r}, not {{\"Regex\": ...}} or {{\"String\": ...}}")
    if "String" in pattern:
        return regex.compile(regex.escape(pattern["String"]))
    if regex.search(RUBY_ONLY, pattern["Regex"]):
        raise Refused(f"has a Split pattern {pattern['Regex']!r} with \\h, \\z, \\Z, \\G or (?m), which Oniguruma "
                      f"reads otherwise than Python's regex")
    try:
        return regex.compile(pattern["Regex"], regex.MULTILINE)
    except regex.error as bad:
        raise Refused(f"has a Split pattern {pattern['Regex']!r} that Python's regex cannot compile ({bad})") from None


def split_behaviour(spec):
    """A Split's behaviour and invert, checked; the behaviour's name."""
    if spec.get("behavior") not in BEHAVIOURS:
        raise Damaged(f"has a Split whose behavior is {spec.get('behavior')!r}, not one of {', '.join(BEHAVIOURS)}")
    if not isinstance(spec.get("invert"), bool):
        raise Damaged("has a Split whose invert is not true or false")
    return spec["behavior"]


def split(piece, pattern, behaviour, invert):
    """The parts of piece cut by a pattern, as tokenizers' NormalizedString.split cuts them; empty parts dropped.

    Isolated keeps matches and the text between as parts; Removed drops the matches; MergedWithPrevious joins
    a match to the part before it, MergedWithNext to the part after it; Contiguous joins neighbouring matches.
    invert swaps which spans count as matches.
    Example: "a1b", \\p{N}: Isolated -> ["a", "1", "b"]; MergedWithPrevious -> ["a1", "b"]; Removed -> ["a", "b"]
    """
    spans = [(start, end, is_match != invert) for start, end, is_match in find_matches(pattern, piece)]
    joins_a_text = lambda is_match, previous: is_match and not previous  # noqa: E731
    if behaviour == "Removed":
        kept = [(start, end) for start, end, is_match in spans if not is_match]
    elif behaviour == "Isolated":
        kept = [(start, end) for start, end, _ in spans]
    elif behaviour == "MergedWithPrevious":
        kept = joined(spans, joins_a_text)
    elif behaviour == "MergedWithNext":
        kept = joined(spans[::-1], joins_a_text)[::-1]
    else:
        kept = joined(spans, lambda is_match, previous: is_match == previous)  # Contiguous
    return [piece[start:end] for start, end in kept if end > start]


def joined(spans, joins):
    """The spans, each one for which joins(is_match, the span before's is_match) holds taken into the span kept
    before it (the first span's "before" is no match); spans may run backwards (MergedWithNext).
    Example: [(0, 1, False), (1, 2, True), (2, 3, True)], a match joins the text before it -> [(0, 2), (2, 3)]
    """
    kept, previous = [], False
    for start, end, is_match in spans:
        if joins(is_match, previous) and kept:
            kept[-1] = (min(kept[-1][0], start), max(kept[-1][1], end))
        else:
            kept.append((start, end))
        previous = is_match
    return kept


def find_matches(pattern, text):
    """[(start, end, is_match)] covering text: the pattern's matches, as Oniguruma's find_iter finds them, and
    the text between them. Example: pattern "1", "a1b" -> [(0, 1, False), (1, 2, True), (2, 3, False)]"""
    if not text:
        return [(0, 0, False)]
    spans, done = [], 0
    for start, end in match_spans(pattern, text):
        if done != start:
            spans.append((done, start, False))
        spans.append((start, end, True))
        done = end
    if done != len(text):
        spans.append((done, len(text), False))
    return spans


def match_spans(pattern, text):
    """The (start, end) of the pattern's matches. Where none is empty these are Python's; with an empty one,
    Oniguruma's rule decides: an empty match right where the last match ended is passed over, and the search
    goes on one character later."""
    spans = [match.span() for match in pattern.finditer(text)]
    if all(start != end for start, end in spans):
        return spans
    spans, at, last_end = [], 0, None
    while at <= len(text):
        match = pattern.search(text, at)
        if match is None:
            break
        start, end = match.span()
        at = end + 1 if start == end else end
        if not (start == end and end == last_end):
            spans.append((start, end))
        last_end = end
    return spans


def byte_level(piece, add_prefix_space, words):
    """ByteLevel's parts of piece: a space put before it (add_prefix_space, unless it starts with one), cut by
    GPT-2's regex (where use_regex), each part's UTF-8 bytes as stand-ins. Example: "hi you" -> ["hi", "Ġyou"]"""
    if add_prefix_space and not piece.startswith(" "):
        piece = " " + piece
    parts = split(piece, words, "Isolated", False) if words is not None else [piece]
    return [part.encode("utf-8").decode("latin-1").translate(STAND_IN) for part in parts]


# --- 4. the model --------------------------------------------------------------------------------

class BPEModel:
    """tokenizers' BPE model: a vocabulary (text -> id) and merges, each a pair of ids -> (rank, the merged id)."""

    def __init__(self, spec):
        if not isinstance(spec, dict) or spec.get("type", "BPE") != "BPE":
            kind = spec.get("type") if isinstance(spec, dict) else spec
            raise Refused(f"has a model of type {kind!r}, not BPE; {READS}")
        check_bpe_options(spec)
        self.vocab = checked_vocab(spec.get("vocab"))
        self.merges = ranked_merges(spec.get("merges"), self.vocab)
        self.unk = spec.get("unk_token")
        if self.unk is not None and self.unk not in self.vocab:
            raise Damaged(f"has the unk_token {self.unk!r}, which is not in its vocabulary")
        self.fuse_unk, self.ignore_merges = bool(spec.get("fuse_unk")), bool(spec.get("ignore_merges"))  # null: false
        self._word_ids = {}  # word -> its ids, filled as words are encoded: a text repeats most of its words

    def word_ids(self, word):
        """The ids of one word (in stand-ins), as tokenizers' BPE.tokenize gives them."""
        ids = self._word_ids.get(word)
        if ids is None:
            ids = self._word_ids[word] = self.tokenize(word)
        return ids

    def tokenize(self, word):
        """Example: vocab {a: 0, b: 1, ab: 2}, merges [(a, b)]: "abca" -> [2, 0] ("c", in no token, dropped)"""
        if self.ignore_merges and word in self.vocab:
            return [self.vocab[word]]
        symbols, unknown = [], 0  # unknown: characters in no token since the last known one
        for char in word:
            if char in self.vocab:
                symbols += self.unk_ids(unknown) + [self.vocab[char]]
                unknown = 0
            else:
                unknown += 1
        return merge_all(symbols + self.unk_ids(unknown), self.merges)

    def unk_ids(self, unknown):
        """The unk ids of a run of unknown characters: one each, or one for the run (fuse_unk); none without unk."""
        if self.unk is None or not unknown:
            return []
        return [self.vocab[self.unk]] * (1 if self.fuse_unk else unknown)

    def left_out(self, texts):
        """The characters of texts (in order of first appearance) one of whose bytes is in no token, where
        there is no unk_token to stand for it: encode drops them."""
        missing = {byte for byte, char in STAND_IN.items() if char not in self.vocab}
        if not missing or self.unk is not None:
            return []
        return [char for char in dict.fromkeys("".join(texts)) if missing.intersection(char.encode("utf-8"))]


def check_bpe_options(spec):
    """Refused for a BPE option that makes encoding other than plain merging over bytes."""
    if spec.get("dropout") not in (None, 0, 0.0):
        raise Refused(f"sets the model's dropout to {spec['dropout']!r}, which makes encoding random; set it to null")
    if spec.get("byte_fallback") not in (None, False):
        raise Refused(f"sets byte_fallback, for a tokenizer over characters rather than bytes; {READS}")
    for affix in ("continuing_subword_prefix", "end_of_word_suffix"):
        if spec.get(affix) not in (None, ""):
            raise Refused(f"sets {affix} to {spec[affix]!r}, for a tokenizer over words; {READS}")
    for flag in ("fuse_unk", "ignore_merges"):
        if spec.get(flag) not in (None, True, False) or type(spec.get(flag)) is int:
            raise Damaged(f"has a {flag} that is not true or false")
    if spec.get("unk_token") is not None and not isinstance(spec["unk_token"], str):
        raise Damaged(f"has an unk_token that is not a token's text: {spec['unk_token']!r}")


def checked_vocab(vocab):
    """The model's vocabulary (text -> id), its ids whole numbers, each once."""
    if not isinstance(vocab, dict):
        raise Damaged("has no model vocab object")
    if not all(type(i) is int and i >= 0 for i in vocab.values()):
        raise Damaged("has a model vocab that maps a token to something other than a whole number")
    if len(set(vocab.values())) != len(vocab):
        raise Damaged("has a model vocab that gives two tokens the same id")
    return vocab


def ranked_merges(merges, vocab):
    """{(left id, right id): (rank, merged id)} of the merges, "a b" strings or ["a", "b"] pairs, every token in
    the vocabulary; a pair listed twice has its last rank, as in tokenizers. Example: ["a b"], vocab {a: 0, b: 1,
    ab: 2} -> {(0, 1): (0, 2)}"""
    if not isinstance(merges, list):
        raise Damaged("has no model merges list")
    if all(isinstance(merge, str) for merge in merges):
        pairs = [merge.split(" ") for merge in merges if not merge.startswith("#version")]
    else:
        pairs = merges
    ranked = {}
    for rank, pair in enumerate(pairs):
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(token, str) for token in pair)):
            raise Damaged(f"has merge {rank} = {pair!r}, which is not two tokens")
        unknown = [token for token in (*pair, pair[0] + pair[1]) if token not in vocab]
        if unknown:
            raise Damaged(f"has merge {rank} = {pair!r}, but {unknown[0]!r} is not in its vocabulary")
        ranked[vocab[pair[0]], vocab[pair[1]]] = (rank, vocab[pair[0] + pair[1]])
    return ranked


def merge_all(ids, merges):
    """ids with the merges applied as tokenizers' Word.merge_all applies them: a heap of (rank, position) pops
    the lowest-ranked pair, leftmost first, and merges it where the pair at that position still makes the
    entry's id; each merge pushes the new pairs beside it. The order is tokenizer.BPETokenizer._apply_merges's;
    here the merged id is looked up, since the ids are the file's.

    Example: merges {(0, 1): (0, 2)}, ids [0, 1, 0, 1] -> [2, 2]
    """
    tokens = list(ids)
    after = list(range(1, len(tokens))) + [-1]
    before = list(range(-1, len(tokens) - 1))
    heap = [(*merges[pair], at) for at, pair in enumerate(zip(tokens, tokens[1:])) if pair in merges]
    heapq.heapify(heap)
    while heap:
        rank, new_id, at = heapq.heappop(heap)
        right = after[at]
        # Skip an entry whose pair an earlier merge changed; a merged-away position holds -1, in no pair
        if right == -1 or merges.get((tokens[at], tokens[right]), (None, None))[1] != new_id:
            continue
        tokens[at], tokens[right] = new_id, -1
        after[at] = after[right]
        if after[at] != -1:
            before[after[at]] = at
        for left in (before[at], at):
            if left != -1 and after[left] != -1 and (tokens[left], tokens[after[left]]) in merges:
                heapq.heappush(heap, (*merges[tokens[left], tokens[after[left]]], left))
    return [token for token in tokens if token != -1]


# --- 5. the post-processor, and the decoder --------------------------------------------------------

def post_processor(spec, vocab_size):
    """(ids before the text, ids after it) that encode adds: a TemplateProcessing's special tokens around $A,
    a Sequence's processors in turn; ByteLevel or none add nothing."""
    kind = spec.get("type") if isinstance(spec, dict) else None
    if spec is None or kind == "ByteLevel":
        return [], []
    if kind == "Sequence" and isinstance(spec.get("processors"), list):
        prefix, suffix = [], []
        for inner in spec["processors"]:
            before, after = post_processor(inner, vocab_size)
            prefix, suffix = before + prefix, suffix + after
        return prefix, suffix
    if kind == "TemplateProcessing":
        return template_ids(spec, vocab_size)
    raise Refused(f"has a post-processor of type {kind!r}, which this project does not follow: it reads "
                  f"TemplateProcessing, ByteLevel and Sequence; {READS}")


def template_ids(spec, vocab_size):
    """The ids a TemplateProcessing's single template puts before and after $A. Example: single
    [<|begin_of_text|>, $A] with <|begin_of_text|> = 128000 -> ([128000], [])"""
    single, specials = spec.get("single"), spec.get("special_tokens")
    if not isinstance(single, list) or not isinstance(specials, dict):
        raise Damaged("has a TemplateProcessing without its single template and special_tokens")
    sequences = [n for n, piece in enumerate(single) if isinstance(piece, dict) and "Sequence" in piece]
    if [single[n]["Sequence"].get("id") for n in sequences] != ["A"]:
        raise Damaged("has a TemplateProcessing whose single template does not hold the text ($A) once")
    sides = ([], [])
    for n, piece in enumerate(single):
        if n in sequences:
            continue
        name = piece.get("SpecialToken", {}).get("id") if isinstance(piece, dict) else None
        ids = specials.get(name, {}).get("ids") if isinstance(specials.get(name), dict) else None
        if not (isinstance(ids, list) and all(type(i) is int and 0 <= i < vocab_size for i in ids)):
            raise Damaged(f"has a TemplateProcessing whose special token {name!r} has no ids of its tokens")
        sides[n > sequences[0]].extend(ids)
    return sides


def check_decoder(spec):
    """Refused unless the decoder is ByteLevel, the one that writes stand-ins back as bytes."""
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind != "ByteLevel":
        raise Refused(f"has a decoder of type {kind!r}, not ByteLevel; {READS}")


# --- the project's tokenizers written as tokenizer.json --------------------------------------------

def folder_files(tokenizer):
    """{"tokenizer.json": object, "tokenizer_config.json": object} for a Hugging Face folder holding tokenizer,
    which transformers' AutoTokenizer loads as a PreTrainedTokenizerFast that encodes a text to the project's ids.

    A read tokenizer.json (HFTokenizer) is written as it was read; GPT-2's BPE as GPT-2's own file;
    the project's BPE as a character-level BPE (project_tokenizer_json).
    """
    if isinstance(tokenizer, HFTokenizer):
        file, settings = tokenizer.file, tokenizer.settings
    elif isinstance(tokenizer, ByteLevelBPE):
        file = gpt2_tokenizer_json(tokenizer)
        settings = {name: END_OF_TEXT for name in ("bos_token", "eos_token", "unk_token")}
    else:
        file, settings = project_tokenizer_json(tokenizer), {}
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": False, **settings}
    return {"tokenizer.json": file, "tokenizer_config.json": config}


def bpe_model(vocab, merges):
    """A tokenizer.json's model: a plain BPE with vocab (text -> id) and merges (pairs of texts)."""
    return {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
            "vocab": vocab, "merges": [list(pair) for pair in merges]}


def tokenizer_json(model, added_tokens, normalizer, pre_tokenizer, decoder):
    """A tokenizer.json's object, of version 1.0, which adds nothing around a text."""
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added_tokens,
            "normalizer": normalizer, "pre_tokenizer": pre_tokenizer, "post_processor": None, "decoder": decoder,
            "model": model}


def gpt2_tokenizer_json(tokenizer):
    """GPT-2's tokenizer.json for a ByteLevelBPE: its regex in ByteLevel, <|endoftext|> a special token."""
    byte_level_step = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    added = [{"id": tokenizer.vocab[END_OF_TEXT], "content": END_OF_TEXT, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True}] if END_OF_TEXT in tokenizer.vocab else []
    return tokenizer_json(bpe_model(tokenizer.vocab, tokenizer.merges), added, None, byte_level_step,
                          {**byte_level_step, "add_prefix_space": True})


def project_tokenizer_json(tokenizer):
    """The project's character-level BPE (tokenizer.BPETokenizer) as a tokenizer.json.

    Its model is a BPE over characters, with no ByteLevel: each token's text is its id's, each merge its two
    tokens' texts, in learned order, so tokenizers' merging (lowest rank, leftmost first) is
    BPETokenizer._apply_merges. The pre-tokenizer is a Split by tokenizer.PIECE, the pieces no merge spans.
    A Replace normalizer first removes every character outside the alphabet, as encode_known does (encode
    refuses such a text, and a file cannot refuse; were they left for the model to drop, they would be dropped
    after the text is cut into pieces, and in "a\\n☃\\nb" the two newlines would not be joined).
    The decoder Fuse joins the tokens' texts. InputError where two ids have one text, which a vocabulary
    cannot hold.

    Example: alphabet ["a", "b"], merges [(0, 1)] -> vocab {"a": 0, "b": 1, "ab": 2}, merges [["a", "b"]]
    """
    texts = [tokenizer.decode([i]) for i in range(tokenizer.vocab_size)]
    vocab = {text: i for i, text in enumerate(texts)}
    if len(vocab) != len(texts):
        first = next(i for i, text in enumerate(texts) if vocab[text] != i)
        raise InputError(f"the tokenizer's ids {first} and {vocab[texts[first]]} are both {texts[first]!r}, and a "
                         f"tokenizer.json gives each text one id: this tokenizer cannot be written as one")
    merges = [(texts[left], texts[right]) for left, right in tokenizer.merges]
    return tokenizer_json(bpe_model(vocab, merges), [],
                          {"type": "Replace", "pattern": {"Regex": outside(tokenizer.alphabet)}, "content": ""},
                          {"type": "Split", "pattern": {"Regex": PIECE.pattern}, "behavior": "Isolated",
                           "invert": False},
                          {"type": "Fuse"})


def outside(alphabet):
    """An Oniguruma pattern of one character outside alphabet, each character written by its code point.
    Example: ["a", "\\n"] -> "[^\\x{61}\\x{a}]"; [] -> any character"""
    if not alphabet:
        return r"[\s\S]"
    return "[^" + "".join(f"\\x{{{ord(char):x}}}" for char in alphabet) + "]"
