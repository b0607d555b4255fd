"""gpt2.py: GPT-2 folders load as the project's model, and GPT-2's byte-level BPE, exactly.

Everything runs offline on small GPT-2 folders that the fixtures make: random weights written in
GPT-2's safetensors names, and a byte-level vocabulary trained here from a short text by a plain
BPE trainer (train_byte_bpe). The logits are checked against a NumPy GPT-2 written below from the
raw tensors; where transformers and torch are installed, against GPT2LMHeadModel on the same folder,
and the token ids against transformers' GPT-2 tokenizers on the same vocabulary.
"""

import io
import json
import math
import shutil
import types
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

regex = pytest.importorskip("regex", reason="the gpt2 extra is not installed: pip install -e \".[gpt2]\"")
safetensors_numpy = pytest.importorskip("safetensors.numpy", reason="the gpt2 extra is not installed: "
                                        "pip install -e \".[gpt2]\"")

from conftest import run_main  # noqa: E402
from engineering import checkpoint  # noqa: E402
import config  # noqa: E402
from tokenizer import END_OF_TEXT, PRE_SPLIT, ByteLevelBPE, byte_stand_ins, merge_pair  # noqa: E402
from engineering import settings as project_settings  # noqa: E402
from engineering import gpt2  # noqa: E402
from engineering import prompting  # noqa: E402
import train  # noqa: E402
import transformer  # noqa: E402
from engineering.corpus import read_corpus, token_lengths  # noqa: E402
from engineering.errors import InputError  # noqa: E402

Sampling = transformer.Sampling

TRAINING_TEXT = """Hello world! It's the cat's hat; we'll see, they've said, I'm here and you'd know.
Numbers: 1234567 and 3.14159, 2024-06-01, 10,000.   Runs   of    spaces   and\ttabs.
naïve café résumé Ærø, Ελληνικά, русский, 日本語のテキスト, 한국어, عربي, हिन्दी.
Emoji: 🤖🤖 🎉 👍🏽 🇫🇷 and ❤️ in a line.

Blank lines above, and a last line without a newline"""

HARD_STRINGS = [
    "", " ", "  ", "   x", "\n", "\n\n\n", "a\n\nb", "\t\t tab", "trailing   ", " leading",
    "Hello world", "It's I'm we'll they've you'd don't CAN'T 's", "''s'", "3.14159 1234567 ١٢٣ ²",
    "naïve café", "日本語", "🤖", "👍🏽👍🏽", "🇫🇷", "e\u0301", "\u00a0non-breaking\u00a0space", "\u200bzero",
    "\x00\x01\x7f control", "<|endoftext|>", "before<|endoftext|>after", "<|endoftext", "a  \n  b",
    "Ελληνικά русский 한국어 عربي हिन्दी", "x" * 300, "🎉" * 5 + " " * 5 + "\n" * 5,
]

SMALL = {"vocab_size": None, "n_positions": 24, "n_embd": 16, "n_head": 4, "n_layer": 2}  # vocab from the BPE


def train_byte_bpe(text, num_merges):
    """(vocab, merges) of a byte-level BPE trained on text: GPT-2's words as byte stand-ins, each
    round merging the most frequent pair (ties to the larger pair); vocab.json's order is GPT-2's:
    the 256 byte stand-ins, each merge's token, then <|endoftext|>."""
    stand_in = dict(byte_stand_ins())
    words = Counter(tuple(stand_in[b] for b in word.encode("utf-8")) for word in regex.findall(PRE_SPLIT, text))
    merges = []
    for _ in range(num_merges):
        pairs = Counter()
        for word, count in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += count
        if not pairs:
            break
        best = max(pairs, key=lambda pair: (pairs[pair], pair))
        merges.append(best)
        merged = Counter()
        for word, count in words.items():
            merged[tuple(merge_pair(list(word), best, best[0] + best[1]))] += count
        words = merged
    vocab = {char: i for i, (_, char) in enumerate(byte_stand_ins())}
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    vocab[END_OF_TEXT] = len(vocab)
    return vocab, merges


@pytest.fixture(scope="module")
def vocab_and_merges():
    return train_byte_bpe(TRAINING_TEXT, 120)


@pytest.fixture(scope="module")
def tokenizer(vocab_and_merges):
    return ByteLevelBPE(*vocab_and_merges)


def gpt2_tensors(sizes, rng):
    """GPT-2's tensors under its names (no "transformer."), random: weights large enough that a wrong
    mapping moves the logits far past float32's rounding, biases and LN shifts not zero."""
    V, T, C, L = sizes["vocab_size"], sizes["n_positions"], sizes["n_embd"], sizes["n_layer"]
    F = sizes.get("n_inner") or 4 * C
    normal = lambda *shape: rng.normal(0, 0.3, shape).astype(np.float32)  # noqa: E731
    gain = lambda: (1 + rng.normal(0, 0.2, C)).astype(np.float32)  # noqa: E731
    tensors = {"wte.weight": normal(V, C), "wpe.weight": normal(T, C),
               "ln_f.weight": gain(), "ln_f.bias": normal(C)}
    for layer in range(L):
        h = f"h.{layer}."
        tensors.update({h + "ln_1.weight": gain(), h + "ln_1.bias": normal(C),
                        h + "attn.c_attn.weight": normal(C, 3 * C), h + "attn.c_attn.bias": normal(3 * C),
                        h + "attn.c_proj.weight": normal(C, C), h + "attn.c_proj.bias": normal(C),
                        h + "ln_2.weight": gain(), h + "ln_2.bias": normal(C),
                        h + "mlp.c_fc.weight": normal(C, F), h + "mlp.c_fc.bias": normal(F),
                        h + "mlp.c_proj.weight": normal(F, C), h + "mlp.c_proj.bias": normal(C)})
    return tensors


def write_folder(folder, sizes, vocab, merges, tensors, layout):
    """A GPT-2 folder: "save_pretrained" names every tensor "transformer.*"; "hub" (as openai-community/gpt2
    is stored) names them bare and keeps each block's causal-mask buffers, attn.bias and attn.masked_bias."""
    folder.mkdir(parents=True, exist_ok=True)
    T = sizes["n_positions"]
    if layout == "save_pretrained":
        stored = {"transformer." + name: array for name, array in tensors.items()}
    else:
        stored = dict(tensors)
        for layer in range(sizes["n_layer"]):
            stored[f"h.{layer}.attn.bias"] = np.tril(np.ones((T, T), dtype=np.float32))[None, None]
            stored[f"h.{layer}.attn.masked_bias"] = np.array(-1e4, dtype=np.float32)
    safetensors_numpy.save_file(stored, str(folder / "model.safetensors"), metadata={"format": "pt"})
    eot = vocab[END_OF_TEXT]
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", **sizes, "n_ctx": T, "n_inner": None,
              "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5, "bos_token_id": eot,
              "eos_token_id": eot, "tie_word_embeddings": True, "scale_attn_weights": True}
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")
    return folder


@pytest.fixture(scope="module", params=["save_pretrained", "hub"])
def small_gpt2(request, tmp_path_factory, vocab_and_merges):
    """(folder, sizes, GPT-2's tensors by bare name) of a small random GPT-2 in each layout."""
    vocab, merges = vocab_and_merges
    sizes = {**SMALL, "vocab_size": len(vocab)}
    tensors = gpt2_tensors(sizes, np.random.default_rng(0))
    folder = write_folder(tmp_path_factory.mktemp(request.param), sizes, vocab, merges, tensors, request.param)
    return folder, sizes, tensors


# --- a NumPy GPT-2 from the raw tensors, in float64: the reference for the logits -----------------

def reference_logits(tensors, sizes, ids):  # (T,) -> (T, V)
    t = {name: array.astype(np.float64) for name, array in tensors.items()}
    T, C, nh = len(ids), sizes["n_embd"], sizes["n_head"]
    hs = C // nh

    def norm(x, name):
        centred = x - x.mean(-1, keepdims=True)
        return centred / np.sqrt((centred ** 2).mean(-1, keepdims=True) + 1e-5) * t[name + ".weight"] + t[name + ".bias"]

    def conv1d(x, name):
        return x @ t[name + ".weight"] + t[name + ".bias"]

    x = t["wte.weight"][ids] + t["wpe.weight"][:T]
    for layer in range(sizes["n_layer"]):
        h = f"h.{layer}."
        q, k, v = (part.reshape(T, nh, hs).transpose(1, 0, 2)
                   for part in np.split(conv1d(norm(x, h + "ln_1"), h + "attn.c_attn"), 3, axis=-1))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(hs) + np.triu(np.full((T, T), -np.inf), 1)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        x = x + conv1d((weights @ v).transpose(1, 0, 2).reshape(T, C), h + "attn.c_proj")
        u = conv1d(norm(x, h + "ln_2"), h + "mlp.c_fc")
        x = x + conv1d(0.5 * u * (1 + np.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u ** 3))), h + "mlp.c_proj")
    return norm(x, "ln_f") @ t["wte.weight"].T  # GPT-2's head is tied to the token table, with no bias


# --- the loader ------------------------------------------------------------------------------------

def test_load_gives_our_config_and_names_in_canonical_order(small_gpt2):
    folder, sizes, _ = small_gpt2
    params, cfg, tokenizer = gpt2.load(folder)
    assert cfg == transformer.ModelConfig(vocab_size=sizes["vocab_size"], context_len=24, emb_dim=16, num_heads=4,
                                          num_layers=2, ff_dim=64, ln_eps=1e-5)
    assert list(params) == list(transformer.param_shapes(cfg))
    assert {name: p.shape for name, p in params.items()} == transformer.param_shapes(cfg)
    assert all(p.dtype == np.float32 for p in params.values())
    assert transformer.flat_buffer(params).size == sum(p.size for p in params.values())  # packed: one buffer
    assert tokenizer.vocab_size == cfg.vocab_size


def test_load_puts_each_gpt2_tensor_under_our_name(small_gpt2):
    folder, sizes, tensors = small_gpt2
    params, cfg, _ = gpt2.load(folder)
    C = sizes["n_embd"]
    assert np.array_equal(params["tok_emb"], tensors["wte.weight"])
    assert np.array_equal(params["pos_emb"], tensors["wpe.weight"])
    for layer in range(cfg.num_layers):
        ours, h = transformer.block_params(params, layer), f"h.{layer}."
        c_attn, c_attn_bias = tensors[h + "attn.c_attn.weight"], tensors[h + "attn.c_attn.bias"]
        for n, (W, b) in enumerate([("Wq", "bq"), ("Wk", "bk"), ("Wv", "bv")]):
            assert np.array_equal(ours[W], c_attn[:, n * C:(n + 1) * C]), W
            assert np.array_equal(ours[b], c_attn_bias[n * C:(n + 1) * C]), b
        for key, name in gpt2.BLOCK_NAMES.items():
            assert np.array_equal(ours[key], tensors[h + name]), key
    assert np.array_equal(params["lnf_gain"], tensors["ln_f.weight"])
    assert np.array_equal(params["lnf_shift"], tensors["ln_f.bias"])
    assert np.array_equal(params["W_out"], tensors["wte.weight"].T) and params["W_out"].flags.c_contiguous
    assert not np.shares_memory(params["W_out"], params["tok_emb"])  # untied: training moves each on its own
    assert not params["b_out"].any()


def test_logits_match_a_numpy_gpt2_of_the_raw_tensors(small_gpt2, tokenizer):
    folder, sizes, tensors = small_gpt2
    params, cfg, _ = gpt2.load(folder)
    ids = np.array(tokenizer.encode("Hello world! It's 3.14 🤖 naïve café"))[: cfg.context_len]
    logits, _ = transformer.forward(params, ids, cfg)
    expected = reference_logits(tensors, sizes, ids)
    assert np.abs(expected).max() > 1  # logits large enough for a wrong weight to show
    np.testing.assert_allclose(logits, expected, rtol=0, atol=1e-4)


def test_greedy_generation_follows_the_reference(small_gpt2, tokenizer):
    folder, sizes, tensors = small_gpt2
    params, cfg, _ = gpt2.load(folder)
    prompt = tokenizer.encode("Hello world")
    new = list(transformer.generate(params, cfg, prompt, 10, cfg.context_len, Sampling(0.0, 0, 1.0),
                                 np.random.default_rng(0)))
    expected = list(prompt)
    for _ in range(10):
        expected.append(int(np.argmax(reference_logits(tensors, sizes, np.array(expected))[-1])))
    assert new == expected[len(prompt):]


def test_an_untied_head_is_read_from_lm_head(tmp_path, vocab_and_merges):
    vocab, merges = vocab_and_merges
    sizes = {**SMALL, "vocab_size": len(vocab)}
    tensors = gpt2_tensors(sizes, np.random.default_rng(1))
    folder = write_folder(tmp_path, sizes, vocab, merges, tensors, "save_pretrained")
    head = np.random.default_rng(2).normal(size=(len(vocab), SMALL["n_embd"])).astype(np.float32)
    stored = safetensors_numpy.load_file(str(folder / "model.safetensors"))
    safetensors_numpy.save_file({**stored, "lm_head.weight": head}, str(folder / "model.safetensors"))
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "tie_word_embeddings": False}))
    params, _, _ = gpt2.load(folder)
    assert np.array_equal(params["W_out"], head.T)


# --- bad input: one InputError, one line, naming the file -------------------------------------------

def rewrite_json(name, change):
    def broken(folder):
        path = folder / name
        path.write_text(json.dumps(change(json.loads(path.read_text(encoding="utf-8")))), encoding="utf-8")
    return broken


def rewrite_tensors(change):
    def broken(folder):
        path = str(folder / "model.safetensors")
        safetensors_numpy.save_file(change(safetensors_numpy.load_file(path)), path)
    return broken


def cut_short(folder):
    path = folder / "model.safetensors"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def drop_last_id(vocab):
    return {token: i for token, i in vocab.items() if i != len(vocab) - 1}


BAD_FOLDERS = {  # what is broken: (how, the file the error must name)
    **{f"no {name}": ((lambda name: lambda folder: (folder / name).unlink())(name), name) for name in gpt2.FILES},
    "a llama": (rewrite_json("config.json", lambda c: {**c, "model_type": "llama",
                                                       "architectures": ["LlamaForCausalLM"]}), "config.json"),
    "GPT2 without its head": (rewrite_json("config.json", lambda c: {**c, "architectures": ["GPT2Model"]}),
                              "config.json"),
    "exact GELU": (rewrite_json("config.json", lambda c: {**c, "activation_function": "gelu"}), "config.json"),
    "scores by layer": (rewrite_json("config.json", lambda c: {**c, "scale_attn_by_inverse_layer_idx": True}),
                        "config.json"),
    "cross-attention": (rewrite_json("config.json", lambda c: {**c, "add_cross_attention": True}), "config.json"),
    "no n_embd": (rewrite_json("config.json", lambda c: {k: v for k, v in c.items() if k != "n_embd"}), "config.json"),
    "heads do not divide": (rewrite_json("config.json", lambda c: {**c, "n_head": 3}), "config.json"),
    "config not JSON": (lambda folder: (folder / "config.json").write_text("{oops"), "config.json"),
    "weights cut short": (cut_short, "model.safetensors"),
    "weights are garbage": (lambda folder: (folder / "model.safetensors").write_bytes(b"\x07" * 64),
                            "model.safetensors"),
    "a tensor missing": (rewrite_tensors(lambda t: {k: v for k, v in t.items() if "h.1.mlp.c_fc.bias" not in k}),
                         "model.safetensors"),
    "a tensor of the wrong shape": (rewrite_tensors(lambda t: {k: (v[:, :-1] if k.endswith("h.0.attn.c_attn.weight")
                                                                  else v) for k, v in t.items()}), "model.safetensors"),
    "a tensor of another model": (rewrite_tensors(lambda t: {**t, "transformer.h.0.attn.rotary": np.ones(2)}),
                                  "model.safetensors"),
    "more layers than weights": (rewrite_json("config.json", lambda c: {**c, "n_layer": 3}), "model.safetensors"),
    "vocabulary smaller than the model's": (rewrite_json("vocab.json", drop_last_id), "vocab.json"),
    "vocab ids with a gap": (rewrite_json("vocab.json", lambda v: {**v, END_OF_TEXT: len(v) + 5}), "vocab.json"),
    "vocab without a byte": (rewrite_json("vocab.json", lambda v: {t: i for i, t in enumerate(t for t in v if t != "Ġ")}),
                             "vocab.json"),
    "vocab not an object": (lambda folder: (folder / "vocab.json").write_text("[1, 2]"), "vocab.json"),
    "merge of three tokens": (lambda folder: (folder / "merges.txt").write_text("#version: 0.2\nĠ t h\n"),
                              "merges.txt"),
    "merge of unknown tokens": (lambda folder: (folder / "merges.txt").write_text("#version: 0.2\nq z\n"),
                                "merges.txt"),
    "merges not text": (lambda folder: (folder / "merges.txt").write_bytes(b"\xff\xfe\x00"), "merges.txt"),
}


@pytest.mark.parametrize("case", BAD_FOLDERS)
def test_a_bad_folder_is_one_input_error_naming_its_file(case, tmp_path, vocab_and_merges):
    vocab, merges = vocab_and_merges
    sizes = {**SMALL, "vocab_size": len(vocab)}
    folder = write_folder(tmp_path, sizes, vocab, merges, gpt2_tensors(sizes, np.random.default_rng(0)),
                          "save_pretrained")
    gpt2.load(folder)  # whole, it loads
    breaks, file_named = BAD_FOLDERS[case]
    breaks(folder)
    with pytest.raises(InputError) as error:
        gpt2.load(folder)
    message = str(error.value)
    assert "\n" not in message and file_named in message, message


def test_reorder_and_upcast_attn_loads_as_the_same_model(tmp_path, vocab_and_merges):
    vocab, merges = vocab_and_merges
    sizes = {**SMALL, "vocab_size": len(vocab)}
    folder = write_folder(tmp_path, sizes, vocab, merges, gpt2_tensors(sizes, np.random.default_rng(0)), "hub")
    rewrite_json("config.json", lambda c: {**c, "reorder_and_upcast_attn": True})(folder)
    assert gpt2.load(folder)[1].num_layers == 2


# --- the byte-level BPE ------------------------------------------------------------------------------

def test_byte_stand_ins_are_gpt2s_table():
    table = byte_stand_ins()
    assert len(table) == 256 and sorted(b for b, _ in table) == list(range(256))
    stand_in = dict(table)
    # hand-checked against GPT-2's vocab.json: "!" is id 0, "Ġ" (the space) id 220, "Ċ" (the newline) id 198
    assert table[0] == (33, "!") and table[220] == (32, "Ġ") and table[198] == (10, "Ċ")
    assert stand_in[0] == "Ā" and stand_in[127] == "ġ" and stand_in[160] == "ł" and stand_in[173] == "Ń"
    assert stand_in[ord("a")] == "a" and stand_in[0xE9] == "é"
    assert all(char.isprintable() and not char.isspace() for _, char in table)


@pytest.mark.parametrize("word, tokens", [
    (" the", ["Ġthe"]), ("hello", ["hello"]), ("aaa", ["aa", "a"]), ("aaaa", ["aa", "aa"]), ("xyz", ["x", "y", "z"]),
    ("é", ["Ã©"]),  # U+00E9 is the two bytes C3 A9, whose stand-ins are "Ã" and "©"
])
def test_merged_applies_merges_lowest_rank_first(word, tokens):
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("l", "l"), ("e", "l"), ("he", "ll"),
              ("hell", "o"), ("a", "a"), ("Ã", "©")]
    vocab = {char: i for i, (_, char) in enumerate(byte_stand_ins())}
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    assert ByteLevelBPE(vocab, merges).merged(word) == tokens


def test_the_pre_split_is_gpt2s_words():
    words = regex.findall(PRE_SPLIT, "I'm  here: 123abc\n\n  x's ")
    assert words == ["I", "'m", " ", " here", ":", " 123", "abc", "\n\n ", " x", "'s", " "]


@pytest.mark.parametrize("text", HARD_STRINGS)
def test_decode_gives_back_the_text(tokenizer, text):
    ids = tokenizer.encode(text)
    assert all(0 <= i < tokenizer.vocab_size for i in ids)
    assert tokenizer.decode(ids) == text


def test_end_of_text_is_one_special_id(tokenizer, vocab_and_merges):
    eot = vocab_and_merges[0][END_OF_TEXT]
    assert tokenizer.encode("<|endoftext|>") == [eot]
    assert tokenizer.encode("a<|endoftext|>b") == tokenizer.encode("a") + [eot] + tokenizer.encode("b")
    assert eot not in tokenizer.encode("<|endoftext")


def test_words_of_the_training_text_come_out_merged(tokenizer):
    pieces = [tokenizer.decode([i]) for i in tokenizer.encode("Hello world! It's the cat's hat")]
    assert pieces == ["H", "e", "ll", "o", " world", "!", " I", "t", "'s", " the", " ca", "t", "'s", " h", "a", "t"]


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40))
def test_any_text_decodes_back(tokenizer, text):
    assert tokenizer.decode(tokenizer.encode(text)) == text


def stream(tokenizer, ids):
    decoder = tokenizer.decoder()
    return [decoder.add(i) for i in ids] + [decoder.flush()]


def test_streaming_holds_back_a_character_split_across_tokens(tokenizer):
    ids = tokenizer.encode("🤖")
    assert len(ids) > 1  # the robot's four bytes are more than one token in this vocabulary
    assert "\ufffd" in tokenizer.decode(ids[:1])  # decoded alone, the first token is no character
    pieces = stream(tokenizer, ids)
    assert pieces[:-2] == [""] * (len(ids) - 1) and pieces[-2:] == ["🤖", ""]


@pytest.mark.parametrize("text", HARD_STRINGS)
def test_streaming_gives_the_text_whole_characters_at_a_time(tokenizer, text):
    pieces = stream(tokenizer, tokenizer.encode(text))
    assert "".join(pieces) == text and all("\ufffd" not in piece for piece in pieces)


def test_flush_ends_a_stream_cut_inside_a_character(tokenizer):
    ids = tokenizer.encode("🤖")
    assert stream(tokenizer, ids[:1]) == ["", "\ufffd"]


# --- the scripts on a GPT-2 folder, run as a person runs them ---------------------------------------
# talk.py and generate.py read the folder itself (--checkpoint DIR); train.py --init_from DIR fine-tunes
# it into a run of its own, which they then read by its name. Every script's main() runs in this process
# (conftest's run_main), from a folder whose checkpoints/ is the home of the runs, as tests/test_talk.py runs them.

HINT = "Type some text to have it continued, up to the end of its paragraph; /help lists the commands; " \
       "Ctrl-D or /quit leaves."
ACCENTED = "naïve café 🤖 Ærø, "  # 🤖, ï and Æ are each cut across two tokens of this vocabulary
HELD_OUT = "the cat sat on the mat.\n"


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory, vocab_and_merges):
    """A small random GPT-2, as the hub holds one, in a folder named tiny-gpt2."""
    vocab, merges = vocab_and_merges
    sizes = {**SMALL, "vocab_size": len(vocab)}
    return write_folder(tmp_path_factory.mktemp("scripts") / "tiny-gpt2", sizes, vocab, merges,
                        gpt2_tensors(sizes, np.random.default_rng(0)), "hub")


def drawn(folder, prompt, max_new_tokens, sampling, seed):
    """(the ids the scripts continue, the ids drawn after them), by generate() itself, as a GPT-2 folder is read:
    the whole context_len as the window, the prompt's last tokens taken back (prompting.heal_prompt)."""
    model = checkpoint.load(folder)
    prompt_ids, first_allowed = prompting.heal_prompt(model.tokenizer, model.tokenizer.encode(prompt))
    new_ids = transformer.generate(model.params, model.cfg, prompt_ids, max_new_tokens, model.cfg.context_len, sampling,
                                np.random.default_rng(seed), first_allowed=first_allowed)
    return prompt_ids, list(new_ids)


def greedy_paragraph(folder, prompt, max_new_tokens):
    """The prompt and its greedy continuation up to its first blank line, where a reply of a text ends."""
    model = checkpoint.load(folder)
    prompt_ids, new_ids = drawn(folder, prompt, max_new_tokens, Sampling(0.0, 0, 1.0), 0)
    return model.tokenizer.decode(prompt_ids + new_ids).partition("\n\n")[0].rstrip("\n")


def test_talk_reads_a_gpt2_folder_and_continues_a_prompt(gpt2_folder):
    result = run_main("talk.py", "--checkpoint", str(gpt2_folder), stdin="/temp 0\nHello world\n/quit\nnot read\n")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    params, cfg, _ = gpt2.load(gpt2_folder)
    n_params = sum(p.size for p in params.values())
    assert result.stdout.splitlines()[:2] == [
        f"model tiny-gpt2: {n_params:,} parameters, {cfg.vocab_size} tokens; GPT-2's weights, read from {gpt2_folder}/",
        HINT]
    settings, reply = result.stdout.split("\n", 2)[2].split("\n", 1)
    assert settings.endswith("window 24 tokens")  # a GPT-2 learned all its n_positions
    reply_text = greedy_paragraph(gpt2_folder, "Hello world", 50)
    assert reply == reply_text + "\n" and len(reply_text) > len("Hello world")  # then /quit: "not read" is not


def test_generate_prints_whole_characters_as_decoding_all_the_ids_gives_them(gpt2_folder):
    # what is printed a token at a time is the text of all the ids at once: a character cut across two tokens
    # comes out whole, and U+FFFD only where the model drew bytes that are no character, as decode has it
    args = ["--checkpoint", str(gpt2_folder), "--temperature", "1.0", "--top_p", "1", "--max_new_tokens", "40"]
    result = run_main("generate.py", ACCENTED, *args, "--seed", "1", "--full")
    assert result.returncode == 0, result.stderr
    tokenizer = checkpoint.load(gpt2_folder).tokenizer
    prompt_ids, new_ids = drawn(gpt2_folder, ACCENTED, 40, Sampling(1.0, 0, 1.0), 1)
    cut = [(a, b) for a, b in zip(new_ids, new_ids[1:])
           if "\ufffd" in tokenizer.decode([a]) and "\ufffd" not in tokenizer.decode([a, b])]
    assert cut, "no character of the draws is cut across two tokens: the test would show nothing"
    assert "\ufffd" in tokenizer.decode(new_ids)  # and the model drew bytes that are no character, too
    whole = tokenizer.decoder()
    for i in new_ids:
        whole.add(i)
    assert whole.flush() == "", "the draws end inside a character, which is held back: choose another seed"
    assert result.stdout == tokenizer.decode(prompt_ids + new_ids) + "\n"
    assert result.stdout.startswith(ACCENTED)


@pytest.mark.parametrize("prompt", ["Ærø", "🤖"])
def test_a_prompt_that_ends_in_a_character_cut_across_tokens_is_printed_whole(gpt2_folder, prompt):
    tokenizer = checkpoint.load(gpt2_folder).tokenizer
    assert "\ufffd" in tokenizer.decode(tokenizer.encode(prompt)[:-1])  # its last token holds part of a character
    result = run_main("generate.py", prompt, "--checkpoint", str(gpt2_folder), "--temperature", "0", "--full",
                        "--max_new_tokens", "5")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(prompt), result.stdout


@pytest.fixture(scope="module")
def fine_tuned(gpt2_folder, tmp_path_factory):
    """(the folder train.py ran in, its result): 4 steps of fine-tuning gpt2_folder on TRAINING_TEXT, as run
    "ft" in the folder's checkpoints/, at a learning rate so small that the weights stay GPT-2's."""
    where = tmp_path_factory.mktemp("fine-tune")
    (where / "my.txt").write_text(TRAINING_TEXT, encoding="utf-8")
    result = run_main("train.py", "--init_from", str(gpt2_folder), "--corpus_path", "my.txt", "--name", "ft",
                        "--max_steps", "4", "--eval_interval", "2", "--seq_len", "8", "--lr_max", "1e-9",
                        "--lr_min", "0", cwd=where)
    return where, result


def test_fine_tuning_starts_from_the_gpt2_weights_and_saves_its_tokenizer(fine_tuned, gpt2_folder):
    where, result = fine_tuned
    assert result.returncode == 0, result.stderr
    params, cfg, tokenizer = gpt2.load(gpt2_folder)
    run = checkpoint.load(where / "checkpoints" / "runs" / "ft")
    assert run.cfg == cfg and run.meta["settings"]["init_from"] == str(gpt2_folder)
    assert isinstance(run.tokenizer, ByteLevelBPE)
    assert run.tokenizer.vocab == tokenizer.vocab and run.tokenizer.merges == tokenizer.merges
    assert run.tokenizer.encode(TRAINING_TEXT) == tokenizer.encode(TRAINING_TEXT)
    for name in params:
        np.testing.assert_allclose(run.params[name], params[name], rtol=0, atol=1e-6, err_msg=name)
    held_out = read_corpus(where / "my.txt", "text", 0, 0.1, 42).val_text
    ids = np.array(tokenizer.encode(held_out))
    gpt2_loss, _ = train.evaluate(params, cfg, ids, 8, token_lengths(tokenizer))
    fresh_loss, _ = train.evaluate(transformer.init_params(cfg, np.random.default_rng(42)), cfg, ids, 8,
                                   token_lengths(tokenizer))
    first = run.meta["history"][0]
    assert first["step"] == 2 and abs(gpt2_loss - fresh_loss) > 0.3  # the two starts are far apart
    assert first["val_loss"] == pytest.approx(gpt2_loss, abs=1e-4)


def test_talk_reads_the_fine_tuned_run_by_its_name(fine_tuned):
    where, _ = fine_tuned
    named = run_main("talk.py", "--checkpoint", "ft", cwd=where, stdin="/settings\n/temp 0\nHello world\n")
    assert named.returncode == 0, named.stderr
    lines = named.stdout.splitlines()
    assert lines[0].startswith("model ft: ") and "trained" in lines[0] and lines[1] == HINT
    assert lines[2].endswith("window 24 tokens")  # started from GPT-2: its whole context, not the seq_len 8 trained
    reply = named.stdout.split("\n", 4)[4]
    assert reply == greedy_paragraph(where / "checkpoints" / "runs" / "ft", "Hello world", 50) + "\n"
    latest = run_main("talk.py", cwd=where, stdin="/settings\n/temp 0\nHello world\n")
    assert latest.stdout == named.stdout  # the latest finished run, without a name


def nothing_written(where):
    return not (where / "checkpoints").exists() or not any((where / "checkpoints").rglob("*"))


@pytest.mark.parametrize("setting, said", [
    (["--emb_dim", "64"], "--emb_dim 64 disagrees with the GPT-2 in "),
    (["--num_layers", "3"], "--num_layers 3 disagrees with the GPT-2 in "),
    (["--seq_len", "25"], "--seq_len 25 is longer than the GPT-2 in "),  # n_positions is 24
    (["--seq_len", "40"], "--seq_len 40 is longer than the GPT-2 in "),  # past config.py's context_len (32) too
])
def test_a_setting_the_gpt2_cannot_take_is_one_line_and_writes_nothing(gpt2_folder, tmp_path, setting, said):
    (tmp_path / "my.txt").write_text(TRAINING_TEXT, encoding="utf-8")
    result = run_main("train.py", "--init_from", str(gpt2_folder), "--corpus_path", "my.txt", "--max_steps", "4",
                        *setting, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"error: {said}{gpt2_folder}/"), result.stderr
    assert nothing_written(tmp_path)


def test_init_from_a_folder_missing_a_file_is_one_line(gpt2_folder, tmp_path):
    folder = tmp_path / "broken-gpt2"
    shutil.copytree(gpt2_folder, folder)
    (folder / "merges.txt").unlink()
    (tmp_path / "my.txt").write_text(TRAINING_TEXT, encoding="utf-8")
    result = run_main("train.py", "--init_from", str(folder), "--corpus_path", "my.txt", cwd=tmp_path)
    assert result.returncode == 2 and nothing_written(tmp_path)
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"error: {folder / 'merges.txt'} is missing")


def test_fine_tuning_on_a_repeated_text_lowers_the_loss(gpt2_folder, tmp_path):
    (tmp_path / "cat.txt").write_text(HELD_OUT * 40, encoding="utf-8")
    fine_tune = {"init_from": str(gpt2_folder), "corpus_path": str(tmp_path / "cat.txt"), "seq_len": 8,
                 "checkpoint": str(tmp_path / "checkpoints"), "batch_size": 8, "max_steps": 30, "eval_interval": 10,
                 "warmup_steps": 5, "lr_max": 1e-2, "patience": 0}
    s = types.SimpleNamespace(**{**project_settings.defaults(config), **fine_tune})
    project_settings.check(s, config.RECIPES)
    run = checkpoint.load(train.train(s))
    losses = [entry["val_loss"] for entry in run.meta["history"]]
    params, cfg, tokenizer = gpt2.load(gpt2_folder)
    held_out = np.array(tokenizer.encode(read_corpus(tmp_path / "cat.txt", "text", 0, 0.1, 42).val_text))
    start, _ = train.evaluate(params, cfg, held_out, 8, token_lengths(tokenizer))
    assert losses[0] < start and losses[-1] < losses[0] - 1, (start, losses)


def test_bits_per_character_count_each_character_once(tokenizer):
    assert token_lengths(tokenizer)[tokenizer.encode(TRAINING_TEXT)].sum() == len(TRAINING_TEXT)


# --- against transformers, where it is installed ----------------------------------------------------

def hf(name):
    return pytest.importorskip(name, reason=f"{name} is not installed: the checks against Hugging Face's "
                                            f"GPT-2 run where it is (CI installs it)")


def test_logits_match_transformers_gpt2(small_gpt2, tokenizer):
    torch, transformers = hf("torch"), hf("transformers")
    folder, _, _ = small_gpt2
    params, cfg, _ = gpt2.load(folder)
    model = transformers.GPT2LMHeadModel.from_pretrained(folder, dtype=torch.float32).eval()
    ids = tokenizer.encode("Hello world! It's 3.14 🤖 naïve café")[: cfg.context_len]
    with torch.no_grad():
        expected = model(torch.tensor([ids])).logits[0].numpy()
    logits, _ = transformer.forward(params, np.array(ids), cfg)
    np.testing.assert_allclose(logits, expected, rtol=0, atol=1e-4)


def test_greedy_generation_matches_transformers(small_gpt2, tokenizer):
    torch, transformers = hf("torch"), hf("transformers")
    folder, _, _ = small_gpt2
    params, cfg, _ = gpt2.load(folder)
    model = transformers.GPT2LMHeadModel.from_pretrained(folder, dtype=torch.float32).eval()
    prompt = tokenizer.encode("Hello world")
    with torch.no_grad():
        expected = model.generate(torch.tensor([prompt]), max_new_tokens=12, do_sample=False, use_cache=True,
                                  pad_token_id=0)[0, len(prompt):].tolist()
    ours = list(transformer.generate(params, cfg, prompt, 12, cfg.context_len, Sampling(0.0, 0, 1.0),
                                  np.random.default_rng(0)))
    assert ours == expected


def test_loads_a_folder_that_save_pretrained_wrote(tmp_path, vocab_and_merges):
    torch, transformers = hf("torch"), hf("transformers")
    vocab, merges = vocab_and_merges
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=len(vocab), n_positions=20, n_embd=24, n_head=3, n_layer=2,
                                     n_inner=40, layer_norm_epsilon=1e-6)
    model = transformers.GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.3)
    model.save_pretrained(tmp_path)
    (tmp_path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (tmp_path / "merges.txt").write_text("".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")
    params, cfg, _ = gpt2.load(tmp_path)
    assert (cfg.ff_dim, cfg.ln_eps, cfg.context_len) == (40, 1e-6, 20)
    ids = [5, 200, 17, len(vocab) - 1, 3, 3, 90]
    with torch.no_grad():
        expected = model(torch.tensor([ids])).logits[0].numpy()
    np.testing.assert_allclose(transformer.forward(params, np.array(ids), cfg)[0], expected, rtol=0, atol=1e-4)


@pytest.fixture(scope="module")
def hf_tokenizers(small_gpt2):
    transformers = hf("transformers")
    folder = small_gpt2[0]
    return {"fast": transformers.GPT2TokenizerFast.from_pretrained(folder),
            "slow": transformers.GPT2Tokenizer.from_pretrained(folder)}


@pytest.mark.parametrize("kind", ["fast", "slow"])
def test_ids_match_transformers_tokenizers(hf_tokenizers, tokenizer, kind):
    theirs = hf_tokenizers[kind]
    for text in HARD_STRINGS + [TRAINING_TEXT]:
        assert tokenizer.encode(text) == theirs.encode(text), repr(text)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40))
def test_any_text_gets_the_ids_of_transformers(hf_tokenizers, tokenizer, text):
    assert tokenizer.encode(text) == hf_tokenizers["fast"].encode(text)


def test_ids_match_a_vocabulary_trained_by_tokenizers(tmp_path):
    tokenizers = hf("tokenizers")
    trainer = tokenizers.ByteLevelBPETokenizer()
    trainer.train_from_iterator([TRAINING_TEXT] * 3, vocab_size=400, min_frequency=2,
                                special_tokens=[END_OF_TEXT])
    trainer.save_model(str(tmp_path))
    ours = gpt2.read_tokenizer(tmp_path / "vocab.json", tmp_path / "merges.txt")
    for text in HARD_STRINGS + [TRAINING_TEXT]:
        assert ours.encode(text) == trainer.encode(text).ids, repr(text)


# --- what a newcomer met (issue 32): the README's fine-tune command, a folder's missing file, /models --------

def test_the_readmes_fine_tune_command_takes_the_gpt2s_own_context(gpt2_folder, tmp_path):
    (tmp_path / "my.txt").write_text(TRAINING_TEXT, encoding="utf-8")
    result = run_main("train.py", "--recipe", "gpt2", "--init_from", gpt2_folder, "--corpus_path", "my.txt",
                      "--name", "mine", "--max_steps", "2", "--eval_interval", "2", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    recipe = result.stdout.splitlines()[0]  # n_positions is 24: the recipe's seq_len 128 yields to it
    assert recipe.startswith("recipe gpt2: seq_len 24 (the model's), batch_size 4, max_steps 2 (typed), "), recipe
    assert checkpoint.load(tmp_path / "checkpoints" / "runs" / "mine").meta["settings"]["context_len"] == 24


def test_a_gpt2_folder_without_config_json_is_told_so_where_talk_reads_it(gpt2_folder, tmp_path):
    folder = tmp_path / "gpt2"
    shutil.copytree(gpt2_folder, folder)
    (folder / "config.json").unlink()
    result = run_main("talk.py", "--checkpoint", folder)
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {folder}/config.json is missing: a GPT-2 folder holds config.json, ")


def test_models_in_a_conversation_with_a_gpt2_folder_lists_config_pys_runs(gpt2_folder, tmp_path):
    result = run_main("talk.py", "--checkpoint", gpt2_folder, stdin="/models\n", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stderr == ("there are no runs in checkpoints/runs/ yet: train one with `python train.py`, "
                             "named with --name NAME if you like\n")


def test_the_files_tensors_are_let_go_once_they_are_packed():
    """tensor_taker's take keeps no reference cycle: once the weights are packed, the file's tensors
    (500 MB at GPT-2 124M) are freed at once, not whenever Python's garbage collector next runs."""
    import gc
    import weakref
    table = np.ones((3, 2), dtype=np.float32)
    freed = weakref.ref(table)
    take = gpt2.tensor_taker({"wte.weight": table}, "model.safetensors")
    assert np.array_equal(take("wte.weight", (3, 2)), np.ones((3, 2)))
    assert take.used == {"wte.weight"}
    gc.disable()
    try:
        del take, table
        assert freed() is None
    finally:
        gc.enable()
