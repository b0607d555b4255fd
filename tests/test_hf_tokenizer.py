"""hf_tokenizer.py: a tokenizer.json encodes and decodes as the `tokenizers` library does, and the project's
tokenizers are written as tokenizer.json files that transformers' AutoTokenizer loads to the same ids.

The tokenizers compared are trained here (tests/tiny_tokenizers.py) with the pre-tokenizers and normalizers of
GPT-2, SmolLM2, Qwen3 and Llama-3; every comparison is with tokenizers' own Tokenizer on the same file.
"""

import csv
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("regex", reason='the gpt2 extra is not installed: pip install -e ".[gpt2]"')

import tiny_tokenizers  # noqa: E402
from conftest import REPO  # noqa: E402
from engineering import hf_tokenizer, tokenizer_files  # noqa: E402
from engineering.errors import InputError  # noqa: E402
from tokenizer import BPETokenizer, ByteLevelBPE  # noqa: E402

HARD_TEXTS = [
    "", " ", "  ", "   x", "\n", "\n\n\n", "a\n\nb", "\r\n\r\n x\r\n", "\t\t tab", "trailing   ", " leading",
    "Hello world", "It's I'm we'll they've you'd don't CAN'T 's", "''s'", "x'ſ 'S 'LL", "3.14159 1234567 12 ١٢٣ ²½",
    "naïve café", "e\u0301 cafe\u0301", "日本語のテキスト", "🤖", "👍🏽👍🏽", "🇫🇷❤️", "\u00a0non-breaking\u00a0space",
    "\u200bzero\u3000wide", "\x00\x01\x7f control", "<|endoftext|>", "before<|endoftext|>after", "<|im_end",
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", "<think>\nhm\n</think>\n\nok", "<|begin_of_text|>hi",
    "\U00010d50\U00010d51 Garay, of Unicode 16.0", "a  \n  b", "x" * 300, "🎉" * 5 + " " * 5 + "\n" * 5,
    "\U00010000\U0010ffff", tiny_tokenizers.TRAINING_TEXT,
]


def needs(name):
    return pytest.importorskip(name, reason=f"{name} is not installed (pip install {name}): the comparison needs it")


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    """{kind: (ours, theirs)}: each kind's tokenizer.json read by hf_tokenizer.load and by tokenizers."""
    tokenizers = needs("tokenizers")
    folders = {kind: tiny_tokenizers.write_folder(tmp_path_factory.mktemp(kind), kind, chat_template=None)
               for kind in tiny_tokenizers.KINDS}
    return {kind: (hf_tokenizer.load(folder), tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json")))
            for kind, folder in folders.items()}


# --- a worked example, by hand -------------------------------------------------------------------

def test_a_handwritten_file_encodes_as_its_merges_say():
    tokenizer = hf_tokenizer.from_json(tiny_tokenizers.handwritten(), {}, "tokenizer.json", "")
    assert tokenizer.encode(" hi<|im_end|>hi") == [257, 258, 256]  # "Ġhi", the added token cut out first, "hi"
    assert tokenizer.encode("hit") == [256, ord("t") - ord("!")]  # "t" is stand-in 83: no merge takes it
    assert tokenizer.decode([257, 258, 256]) == " hi<|im_end|>hi"
    assert tokenizer.decode([257, 258], skip_special_tokens=True) == " hi"
    assert tokenizer.vocab_size == 259 and tokenizer.token_id("<|im_end|>") == 258


def test_ignore_merges_takes_a_word_found_whole_in_the_vocabulary():
    file = tiny_tokenizers.handwritten()
    file["model"]["merges"] = [["h", "i"]]  # "Ġhi" (257) stays in the vocabulary, no merge makes it
    assert hf_tokenizer.from_json(file, {}, "tokenizer.json", "").encode(" hi") == [220, 256]
    file["model"]["ignore_merges"] = True
    assert hf_tokenizer.from_json(file, {}, "tokenizer.json", "").encode(" hi") == [257]
    tokenizers = pytest.importorskip("tokenizers")
    assert tokenizers.Tokenizer.from_str(json.dumps(file)).encode(" hi").ids == [257]


def test_a_stream_decoder_holds_back_a_character_cut_between_tokens():
    tokenizer = hf_tokenizer.from_json(tiny_tokenizers.handwritten(), {}, "tokenizer.json", "")
    ids = tokenizer.encode("🤖!")  # four byte tokens, then "!"
    decoder = tokenizer.decoder()
    assert [decoder.add(i) for i in ids] == ["", "", "", "🤖", "!"]
    assert tokenizer.decode(ids[:2]) == "\ufffd"  # a character cut short: one replacement character


# --- the four kinds, against tokenizers ----------------------------------------------------------

@pytest.mark.parametrize("kind", tiny_tokenizers.KINDS)
def test_hard_texts_get_the_ids_and_text_of_tokenizers(pairs, kind):
    ours, theirs = pairs[kind]
    for text in HARD_TEXTS:
        ids = theirs.encode(text).ids
        assert ours.encode(text) == ids, repr(text)
        assert ours.encode(text, add_special_tokens=False) == theirs.encode(text, add_special_tokens=False).ids
        for skip in (False, True):
            assert ours.decode(ids, skip) == theirs.decode(ids, skip_special_tokens=skip), repr(text)


def test_each_kind_cuts_as_its_family_does(pairs):
    """What sets the families apart, seen in the words (in stand-ins, " " is "Ġ") and the ids of a text."""
    ours = {kind: pair[0] for kind, pair in pairs.items()}
    assert ours["gpt2"].words("a 1234567") == ["a", "Ġ1234567"]
    assert ours["smollm2"].words("a 1234") == ["a", "Ġ", "1", "2", "3", "4"]  # each digit alone
    assert ours["qwen3"].words("a 1234") == ["a", "Ġ", "1", "2", "3", "4"]
    assert ours["llama3"].words("a 1234567") == ["a", "Ġ", "123", "456", "7"]  # digits in threes
    assert ours["qwen3"].words("it's\n\n  x") == ["it", "'s", "ĊĊ", "Ġ", "Ġx"]  # line ends apart from spaces
    assert ours["gpt2"].words("it's\n\n  x") == ["it", "'s", "ĊĊĠ", "Ġx"]
    bos = ours["llama3"].token_id("<|begin_of_text|>")
    assert ours["llama3"].encode("hi")[0] == bos and ours["llama3"].encode("hi", add_special_tokens=False)[0] != bos
    assert ours["qwen3"].encode("e\u0301") == ours["qwen3"].encode("é")  # NFC
    assert ours["gpt2"].encode("e\u0301") != ours["gpt2"].encode("é")  # no normalizer


# Assigned characters only: a character newer than tokenizers' Oniguruma tables (Unicode 17.0's, such as U+323B0,
# which the regex package knows as a letter) is cut as the newer tables say (hf_tokenizer.py's docstring)
assigned = st.characters(exclude_categories=("Cs", "Cn"))
pieces_of_text = st.one_of(st.text(assigned, max_size=24), st.sampled_from(
    ["<|im_end|>", "<|endoftext|>", "<think>", "<|begin_of_text|>", " ", "  ", "\n", "\r\n", "'s", "'T", "123",
     "e\u0301", "🤖", "日本"]))


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(tiny_tokenizers.KINDS), parts=st.lists(pieces_of_text, max_size=6))
def test_any_text_gets_the_ids_of_tokenizers(pairs, kind, parts):
    ours, theirs = pairs[kind]
    text = "".join(parts)
    assert ours.encode(text) == theirs.encode(text).ids


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(tiny_tokenizers.KINDS), data=st.data())
def test_any_ids_decode_as_tokenizers_decodes_them_broken_utf8_included(pairs, kind, data):
    ours, theirs = pairs[kind]
    ids = data.draw(st.lists(st.integers(0, ours.vocab_size - 1), max_size=12))
    skip = data.draw(st.booleans())
    assert ours.decode(ids, skip) == theirs.decode(ids, skip_special_tokens=skip)


def test_bytes_the_vocabulary_lacks_are_dropped_as_tokenizers_drops_them_and_named(pairs):
    ours, theirs = pairs["smollm2"]  # trained without ByteLevel's full alphabet, as SmolLM2's was
    text = "ok \U000e0021 and \U000f0000 ok"  # their first byte, 0xF3, is in no training text
    ids, left_out = ours.encode_known(text)
    assert ids == theirs.encode(text).ids
    assert left_out == ["\U000e0021", "\U000f0000"]
    assert pairs["qwen3"][0].encode_known(text)[1] == []  # every byte has its token


def test_unk_token_stands_for_what_the_vocabulary_lacks_fused_or_not(pairs):
    tokenizers = needs("tokenizers")
    file = json.loads(pairs["smollm2"][1].to_str())
    for fuse in (False, True):
        file["model"].update({"unk_token": "<|endoftext|>", "fuse_unk": fuse})
        ours, theirs = hf_tokenizer.HFTokenizer(file, {}), tokenizers.Tokenizer.from_str(json.dumps(file))
        for text in ("a\U000e0021\U000f0000b", "\U000e0021", *HARD_TEXTS[:20]):
            assert ours.encode(text) == theirs.encode(text).ids, (fuse, text)
        assert ours.encode_known("\U000e0021")[1] == []  # it is encoded, as unk


# --- every behaviour of a Split, and every flag of an added token ----------------------------------

BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}


def split(pattern, behavior, invert=False, kind="Regex"):
    return {"type": "Split", "pattern": {kind: pattern}, "behavior": behavior, "invert": invert}


def variants(qwen3_file):
    """{name: tokenizer.json}: Qwen3's file with each Split behaviour and invert, patterns that match an
    empty string or at line ends, Digits joined, a prefix space, added tokens with every flag, ignore_merges."""
    found = {}
    for behaviour in hf_tokenizer.BEHAVIOURS:
        for invert in (False, True):
            for pattern in (r"\s+", r"\p{N}", r"(?=x)", r"a*", r"^a|a$"):
                found[f"{behaviour} {invert} {pattern}"] = {"pre_tokenizer": {
                    "type": "Sequence", "pretokenizers": [split(pattern, behaviour, invert), BYTE_LEVEL]}}
    found["a String pattern"] = {"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        split("a.", "Isolated", kind="String"), BYTE_LEVEL]}}
    found["digits joined, a prefix space, GPT-2's regex"] = {"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": False}, {**BYTE_LEVEL, "use_regex": True, "add_prefix_space": True}]}}
    found["ignore_merges, no normalizer"] = {"model": {**qwen3_file["model"], "ignore_merges": True},
                                             "normalizer": None}
    flagged = [("<L>", {"lstrip": True}), ("<R>", {"rstrip": True}), ("<LR>", {"lstrip": True, "rstrip": True}),
               ("<w>", {"single_word": True}), ("ab", {"single_word": True, "normalized": True}),
               ("caf\u00e9", {"normalized": True}), ("cafe\u0301", {}), ("<e\u0301x>", {"normalized": True}),
               (" <s>", {"lstrip": True, "rstrip": True}), ("<R> x", {})]
    added = list(qwen3_file["added_tokens"])
    next_id = max(token["id"] for token in added) + 1
    for content, flags in flagged:
        token_id = qwen3_file["model"]["vocab"].get(content, next_id)
        next_id += token_id == next_id
        added.append({"id": token_id, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
                      "normalized": False, "special": False, **flags})
    found["added tokens with every flag"] = {"added_tokens": added}
    return {name: {**qwen3_file, **change} for name, change in found.items()}


@pytest.fixture(scope="module")
def variant_pairs(pairs):
    tokenizers = needs("tokenizers")
    files = variants(json.loads(pairs["qwen3"][1].to_str()))
    return {name: (hf_tokenizer.HFTokenizer(file, {}), tokenizers.Tokenizer.from_str(json.dumps(file)))
            for name, file in files.items()}


VARIANT_TEXTS = ["a1b22 c  x  xax\n\naa", "<L>  <R>  x <LR>  y\t<LR>\n", "a<w> <w>b <w> _<w>", "ab abc xab ab",
                 "café cafe\u0301 <e\u0301x> <éx>", "<R> x <R>  x", " a <s>  <s> b", "1½²٣ 12 3", "日本 🤖 ſ", ""]


def test_every_behaviour_and_flag_cuts_as_tokenizers_cuts(variant_pairs):
    for name, (ours, theirs) in variant_pairs.items():
        for text in VARIANT_TEXTS:
            assert ours.encode(text) == theirs.encode(text).ids, (name, text)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), parts=st.lists(st.one_of(st.text(assigned, max_size=10), st.sampled_from(
    ["<L>", "<R>", "<LR>", "<w>", "ab", "café", " <s>", " ", "  ", "\n", "x", "a", "1", "e\u0301", "_"])), max_size=8))
def test_any_text_gets_the_ids_of_tokenizers_in_every_variant(variant_pairs, data, parts):
    ours, theirs = variant_pairs[data.draw(st.sampled_from(sorted(variant_pairs)))]
    text = "".join(parts)
    assert ours.encode(text) == theirs.encode(text).ids


# --- files this reader refuses ---------------------------------------------------------------------

def changed(file, path, value):
    """A copy of a tokenizer.json's object with the entry at path (keys, in order) set to value."""
    copy = json.loads(json.dumps(file))
    inner = copy
    for key in path[:-1]:
        inner = inner[key]
    inner[path[-1]] = value
    return copy


BAD_FILES = {
    "a normalizer it does not follow": (("normalizer",), {"type": "NFKC"}, "normalizer of type 'NFKC'"),
    "a Metaspace": (("pre_tokenizer",), {"type": "Metaspace"}, "pre-tokenizer of type 'Metaspace'"),
    "no ByteLevel": (("pre_tokenizer",), {"type": "Digits", "individual_digits": True}, "no ByteLevel"),
    "a Split behaviour of no name": (("pre_tokenizer",), {"type": "Sequence", "pretokenizers": [
        split(" ", "Sideways"), BYTE_LEVEL]}, "behavior is 'Sideways'"),
    "Ruby's \\h": (("pre_tokenizer",), {"type": "Sequence", "pretokenizers": [split(r"\h+", "Isolated"), BYTE_LEVEL]},
                   "Oniguruma reads otherwise"),
    "byte_fallback": (("model", "byte_fallback"), True, "sets byte_fallback"),
    "dropout": (("model", "dropout"), 0.1, "dropout to 0.1"),
    "a WordPiece": (("model", "type"), "WordPiece", "model of type 'WordPiece'"),
    "a merge of no token": (("model", "merges"), [["h", "i"], ["q", "zz"]], "'zz' is not in its vocabulary"),
    "an added token's wrong id": (("added_tokens", 0, "id"), 300, "the id 300, but tokenizers gives it 258"),
    "an added token without a flag": (("added_tokens", 0), {"id": 258, "content": "<x>"}, "lacks single_word"),
    "truncation": (("truncation",), {"max_length": 8}, "sets truncation"),
    "a Bert post-processor": (("post_processor",), {"type": "BertProcessing"},
                              "post-processor of type 'BertProcessing'"),
    "a WordPiece decoder": (("decoder",), {"type": "WordPiece"}, "decoder of type 'WordPiece'"),
    "ids with a gap": (("model", "vocab", "hi"), 900, "ids that are not 0..258"),
}


@pytest.mark.parametrize("case", BAD_FILES)
def test_a_file_this_reader_does_not_follow_is_one_line_naming_what(tmp_path, case):
    path, value, said = BAD_FILES[case]
    (tmp_path / "tokenizer.json").write_text(json.dumps(changed(tiny_tokenizers.handwritten(), path, value)))
    with pytest.raises(InputError) as refusal:
        hf_tokenizer.load(tmp_path)
    message = str(refusal.value)
    assert message.startswith(f"{tmp_path / 'tokenizer.json'} ") and said in message and "\n" not in message


def test_a_folder_without_tokenizer_json_or_with_broken_json_is_one_line(tmp_path):
    with pytest.raises(InputError, match="tokenizer.json is missing"):
        hf_tokenizer.load(tmp_path)
    (tmp_path / "tokenizer.json").write_text('{"version": "1.0", "model": ')
    with pytest.raises(InputError, match="tokenizer.json is not valid JSON"):
        hf_tokenizer.load(tmp_path)
    (tmp_path / "tokenizer.json").write_text(json.dumps(tiny_tokenizers.handwritten()))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": [{"name": "tool_use",
                                                                                   "template": "x"}]}))
    with pytest.raises(InputError, match="tokenizer_config.json holds chat templates named .'tool_use'. but none "
                                         "named default"):
        hf_tokenizer.load(tmp_path)


# --- a run's model.tok.json ------------------------------------------------------------------------

def test_a_run_saves_and_reloads_a_tokenizer_json_with_its_chat_template(tmp_path):
    (tmp_path / "tokenizer.json").write_text(json.dumps(tiny_tokenizers.handwritten()))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({
        "eos_token": {"content": "<|im_end|>", "special": True}, "chat_template": "{{ messages[0]['content'] }}"}))
    tokenizer = hf_tokenizer.load(tmp_path)
    path = tmp_path / "model.tok.json"
    path.write_bytes(tokenizer_files.to_bytes(tokenizer))
    loaded = tokenizer_files.load(path)
    assert loaded == tokenizer and loaded.settings == {"chat_template": "{{ messages[0]['content'] }}",
                                                       "eos_token": "<|im_end|>"}
    assert loaded.encode(" hi<|im_end|>") == [257, 258] and loaded.stop_ids() == [258]


def run_file(tokenizer, change):
    data = json.loads(tokenizer_files.to_bytes(tokenizer))
    change(data)
    return data


DAMAGED_RUN_FILES = {
    "no tokenizer.json": (lambda data: data.pop("tokenizer_json"), "lacks its tokenizer.json object"),
    "a setting of no tokenizer": (lambda data: data["settings"].update(colour="red"), "hold 'colour'"),
    "a merge of no token": (lambda data: data["tokenizer_json"]["model"]["merges"].append(["q", "zz"]),
                            "'zz' is not in its vocabulary"),
    "a special token that is a number": (lambda data: data["settings"].update(eos_token=7), "eos_token that is not"),
    "another version": (lambda data: data.update(version=2), "has version 2"),
}


@pytest.mark.parametrize("case", DAMAGED_RUN_FILES)
def test_a_damaged_run_tokenizer_file_is_one_line(tmp_path, case):
    change, said = DAMAGED_RUN_FILES[case]
    tokenizer = hf_tokenizer.from_json(tiny_tokenizers.handwritten(), {}, "tokenizer.json", "")
    path = tmp_path / "model.tok.json"
    path.write_text(json.dumps(run_file(tokenizer, change)))
    with pytest.raises(InputError) as refusal:
        tokenizer_files.load(path)
    message = str(refusal.value)
    assert message.startswith(f"{path} ") and said in message and "delete its run" in message


# --- the project's tokenizers written as tokenizer.json --------------------------------------------

def sample_rows():
    with open(REPO / "data" / "sample.csv", newline="", encoding="utf-8") as f:
        return [row["text"] + "\n" for row in csv.DictReader(f)]


def write(files, folder):
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return folder


def auto_tokenizer(folder):
    transformers = needs("transformers")
    return transformers.AutoTokenizer.from_pretrained(str(folder))


def test_the_projects_bpe_written_out_encodes_every_text_as_the_project_does(tmp_path):
    tokenizers = needs("tokenizers")
    rows = sample_rows()
    ours = BPETokenizer.train(rows, num_merges=300)
    folder = write(hf_tokenizer.folder_files(ours), tmp_path / "out")
    theirs, auto = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json")), auto_tokenizer(folder)
    texts = ["".join(rows), *rows[:50], "", "\n", "\n\n\nx", "Mira said ☃ and 🤖\n\n\nhi", "Ünknown ßharacters\n\n"]
    for text in texts:
        ids, left_out = ours.encode_known(text)  # the scripts' encoding: characters outside the alphabet left out
        assert theirs.encode(text).ids == ids and auto.encode(text) == ids, repr(text[:60])
        assert auto.decode(ids) == theirs.decode(ids) == ours.decode(ids)
    assert ours.encode_known("a\n☃\nb")[0] == theirs.encode("a\n☃\nb").ids  # "\n\n" joined once ☃ is gone


@pytest.fixture(scope="module")
def exported_bpe(tmp_path_factory):
    tokenizers = needs("tokenizers")
    ours = BPETokenizer.train(["abcabc abd, aab.\n\n", "ba ab ca\nabc\n"] * 3, num_merges=20)
    folder = write(hf_tokenizer.folder_files(ours), tmp_path_factory.mktemp("bpe"))
    return ours, tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from("abcdefghij .,\n\n☃"), max_size=60))
def test_any_text_written_out_gets_the_projects_ids(exported_bpe, text):
    ours, theirs = exported_bpe
    assert theirs.encode(text).ids == ours.encode_known(text)[0]


def test_a_bpe_whose_ids_share_a_text_cannot_be_written_as_a_tokenizer_json():
    # "abc" is made twice: by (ab, c) and by (a, bc)
    tokenizer = BPETokenizer(["a", "b", "c"], [(0, 1), (1, 2), (3, 2), (0, 4)])
    with pytest.raises(InputError, match="ids 5 and 6 are both 'abc'"):
        hf_tokenizer.folder_files(tokenizer)


def test_gpt2s_bpe_written_out_encodes_as_ours(tmp_path):
    tokenizers = needs("tokenizers")
    trainer = tokenizers.ByteLevelBPETokenizer()
    trainer.train_from_iterator([tiny_tokenizers.TRAINING_TEXT] * 3, vocab_size=400, min_frequency=2,
                                special_tokens=["<|endoftext|>"], show_progress=False)
    vocab = json.loads(trainer.to_str())["model"]["vocab"]
    merges = [tuple(pair) for pair in json.loads(trainer.to_str())["model"]["merges"]]
    ours = ByteLevelBPE(vocab, merges)
    folder = write(hf_tokenizer.folder_files(ours), tmp_path / "out")
    auto = auto_tokenizer(folder)
    for text in HARD_TEXTS:
        assert auto.encode(text) == ours.encode(text), repr(text)
    assert hf_tokenizer.load(folder).stop_ids() == [vocab["<|endoftext|>"]]


@pytest.mark.parametrize("kind", tiny_tokenizers.KINDS)
def test_a_read_tokenizer_written_out_loads_in_transformers_to_the_same_ids(pairs, tmp_path, kind):
    ours = pairs[kind][0]
    auto = auto_tokenizer(write(hf_tokenizer.folder_files(ours), tmp_path))
    for text in HARD_TEXTS:
        assert auto.encode(text) == ours.encode(text), repr(text)


def test_the_projects_bpe_as_a_tokenizer_json_by_hand():
    files = hf_tokenizer.folder_files(BPETokenizer(["a", "b", "\n"], [(0, 1)]))
    model, config = files["tokenizer.json"]["model"], files["tokenizer_config.json"]
    assert model["vocab"] == {"a": 0, "b": 1, "\n": 2, "ab": 3} and model["merges"] == [["a", "b"]]
    assert files["tokenizer.json"]["normalizer"]["pattern"] == {"Regex": "[^\\x{61}\\x{62}\\x{a}]"}
    assert config == {"tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": False}
