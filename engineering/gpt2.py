"""GPT-2 from the Hugging Face hub as the project's own model, and GPT-2's byte-level BPE.

    params, cfg, tokenizer = gpt2.load("gpt2")  # a folder: config.json, model.safetensors, vocab.json, merges.txt

GPT-2 is the model of transformer.py: pre-LN blocks, causal attention, the tanh GELU, learned
positions. Its weights go into the parameter dict under our names, with no transposes: GPT-2's
Conv1D layers store a weight (n_in, n_out) and compute x @ W + b, as linear_forward does. GPT-2 ties
its head to the token table; ours is untied, so W_out starts as a copy of tok_emb.T and b_out at 0,
and the model stays the one the rest of the project trains and samples (docs/12-gpt2.md).

The tokenizer is GPT-2's byte-level BPE, tokenizer.ByteLevelBPE, made from the folder's vocab.json and
merges.txt (read_tokenizer).

Needs the gpt2 extra (pip install -e ".[gpt2]"): safetensors to read the weights, regex for the
pattern's \\p{L} and \\p{N}. Nothing of torch or transformers.
"""

import importlib
import re
from pathlib import Path

import numpy as np

import transformer
from engineering.errors import InputError
from engineering.files import read_json
from engineering.settings import MODEL_OPTIONS, replaced
from engineering.tokenizer_files import merge_problem, vocab_problem
from tokenizer import ByteLevelBPE

FILES = ("config.json", "model.safetensors", "vocab.json", "merges.txt")
DOWNLOAD = "hf download openai-community/gpt2 " + " ".join(FILES) + " --local-dir gpt2"
REFETCH = f"download the folder again ({DOWNLOAD})"


def library(name):
    """The module `name`, which the gpt2 extra installs, or InputError saying how to install it."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        raise InputError(f"reading GPT-2 needs the {name.split('.')[0]} package: "
                         f"pip install -e \".[gpt2]\"") from None


def load(folder):
    """(params, cfg, tokenizer) of the GPT-2 in folder, as the project's model: float32 parameters
    packed in the canonical order of transformer.param_shapes, and a ByteLevelBPE. InputError when
    a file is missing, broken, or of another model.

    Example: load("gpt2") for GPT-2 124M -> 163,087,441 parameters (the head's copy included),
    ModelConfig(vocab_size=50257, context_len=1024, emb_dim=768, num_heads=12, num_layers=12, ...)
    """
    folder = Path(folder)
    cfg = read_config(folder)
    gpt2_config = read_object(folder / "config.json")
    tokenizer = read_tokenizer(folder / "vocab.json", folder / "merges.txt")
    if tokenizer.vocab_size != cfg.vocab_size:
        raise InputError(f"{folder / 'vocab.json'} has {tokenizer.vocab_size} tokens but config.json's vocab_size "
                         f"is {cfg.vocab_size}: the vocabulary is of another model; {REFETCH}")
    tensors = read_tensors(folder / "model.safetensors")
    params = project_params(tensors, cfg, gpt2_config.get("tie_word_embeddings", True), folder / "model.safetensors")
    return params, cfg, tokenizer


def read_config(folder):
    """The ModelConfig of the GPT-2 in folder, from its config.json, once the folder holds all of FILES;
    InputError naming what is missing or wrong. Reads no weights: quick, to check settings before any work."""
    folder = Path(folder)
    for name in FILES:
        if not (folder / name).is_file():
            raise InputError(f"{folder / name} is missing: a GPT-2 folder holds {', '.join(FILES)}; {REFETCH}")
    return model_config(read_object(folder / "config.json"), folder / "config.json")


SHAPE = ("context_len", "emb_dim", "num_heads", "num_layers", "ff_dim", "ln_eps")  # settings a GPT-2 has its own of


def adopt_shape(settings, cfg, folder, given):
    """The settings with the model-shape ones the GPT-2's (cfg): a fine-tuned model keeps its shape, whatever
    config.py or a recipe says. A shape setting the person typed (given) that disagrees is refused in one line;
    so is a seq_len they typed longer than the model reads, where a recipe's or config.py's is shortened to it."""
    for name in SHAPE:
        if name in given and getattr(settings, name) != getattr(cfg, name):
            raise InputError(f"--{name} {getattr(settings, name)} disagrees with the GPT-2 in {folder}/ ({name} "
                             f"{getattr(cfg, name)}): a model fine-tuned from it keeps its shape; leave --{name} out")
    for name, gpt2 in MODEL_OPTIONS.items():  # a GPT-2 has every option of today's at GPT-2's value, its default
        if name in given and getattr(settings, name) != gpt2:
            raise InputError(f"--{name} {getattr(settings, name)} is not a GPT-2's ({name} {gpt2!r}): a model "
                             f"fine-tuned from the one in {folder}/ keeps its shape; leave --{name} out")
    if settings.seq_len > cfg.context_len and "seq_len" in given:
        raise InputError(f"--seq_len {settings.seq_len} is longer than the GPT-2 in {folder}/ reads "
                         f"({cfg.context_len}); give --seq_len {cfg.context_len} or less")
    shape = {name: getattr(cfg, name) for name in SHAPE}
    return replaced(settings, {**shape, **MODEL_OPTIONS, "seq_len": min(settings.seq_len, cfg.context_len)})


def read_object(path):
    """The JSON object in path, or InputError naming the file."""
    data = read_json(path, lambda why: InputError(f"{path} is {why}; {REFETCH}"))
    if not isinstance(data, dict):
        raise InputError(f"{path} holds a {type(data).__name__}, not a JSON object; {REFETCH}")
    return data


def read_tokenizer(vocab_path, merges_path):
    """GPT-2's tokenizer from its vocab.json and merges.txt, or InputError naming the file that is wrong."""
    library("regex")  # ByteLevelBPE's pattern needs it: said here in one line, with how to install it
    vocab = read_object(vocab_path)
    problem = vocab_problem(vocab)
    if problem:
        raise InputError(f"{vocab_path} {problem}: it is not a GPT-2 vocabulary; {REFETCH}")
    try:
        lines = Path(merges_path).read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise InputError(f"{merges_path} is not UTF-8 text; {REFETCH}") from None
    merges = []
    for number, line in enumerate(lines, 1):
        if (number == 1 and line.startswith("#version")) or not line:
            continue
        pair = tuple(line.split(" "))
        problem = merge_problem(pair, vocab)
        if problem:
            raise InputError(f"{merges_path}:{number} {problem}: merges.txt and vocab.json disagree; {REFETCH}")
        merges.append(pair)
    return ByteLevelBPE(vocab, merges)


# ---------------------------------------------------------------------------------------------
# config.json -> ModelConfig, refusing what our model does not compute.

# option: (the value our model computes, GPT2Config's default). reorder_and_upcast_attn is not here:
# it only scales q before q k^T and does that product in float32, which ours is already
SAME_MATH = {"activation_function": (("gelu_new", "gelu_pytorch_tanh"), "gelu_new"),  # both the tanh GELU
             "scale_attn_weights": ((True,), True),  # divide the scores by sqrt(hs)
             "scale_attn_by_inverse_layer_idx": ((False,), False),  # and not by the layer's number too
             "add_cross_attention": ((False,), False)}  # no encoder to attend to


def model_config(gpt2_config, path):
    """The ModelConfig of a GPT-2 config.json, or InputError for another model or an option ours lacks.

    Example: {"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_head": 12,
    "n_layer": 12} -> ModelConfig(50257, 1024, 768, 12, 12, ff_dim=3072, ln_eps=1e-05)
    """
    architectures = gpt2_config.get("architectures") or ["GPT2LMHeadModel"]
    if gpt2_config.get("model_type") != "gpt2" or "GPT2LMHeadModel" not in architectures:
        raise InputError(f"{path} is of a {gpt2_config.get('model_type')} model ({', '.join(map(str, architectures))}), "
                         f"not GPT-2 (model_type gpt2, GPT2LMHeadModel): give the folder of a GPT-2")
    for option, (computed, default) in SAME_MATH.items():
        if gpt2_config.get(option, default) not in computed:
            raise InputError(f"{path} sets {option} to {gpt2_config[option]!r}, which this model does not "
                             f"compute (it computes {computed[0]!r}): give a GPT-2 without it")
    sizes = {key: gpt2_config.get(key) for key in ("vocab_size", "n_positions", "n_embd", "n_head", "n_layer")}
    if None in sizes.values():
        missing = ", ".join(key for key, size in sizes.items() if size is None)
        raise InputError(f"{path} lacks {missing}: {REFETCH}")
    try:
        return transformer.ModelConfig(
            vocab_size=sizes["vocab_size"], context_len=sizes["n_positions"], emb_dim=sizes["n_embd"],
            num_heads=sizes["n_head"], num_layers=sizes["n_layer"],
            ff_dim=gpt2_config.get("n_inner") or 4 * sizes["n_embd"],  # GPT-2's None means 4 C
            ln_eps=gpt2_config.get("layer_norm_epsilon", 1e-5))
    except (ValueError, TypeError) as bad:
        raise InputError(f"{path}: {bad}; {REFETCH}") from None


# ---------------------------------------------------------------------------------------------
# model.safetensors -> the parameter dict. GPT-2 names, stripped of "transformer.":
#   wte.weight (V, C), wpe.weight (Tmax, C), ln_f.weight/bias (C,), and for each block h.{l}.:
#   ln_1 and ln_2 weight/bias (C,), attn.c_attn (C, 3C) and (3C,): q, k and v side by side,
#   attn.c_proj (C, C), mlp.c_fc (C, F), mlp.c_proj (F, C); every Conv1D weight is (n_in, n_out).

BLOCK_NAMES = {"ln1_gain": "ln_1.weight", "ln1_shift": "ln_1.bias", "Wo": "attn.c_proj.weight",
               "bo": "attn.c_proj.bias", "ln2_gain": "ln_2.weight", "ln2_shift": "ln_2.bias",
               "W1": "mlp.c_fc.weight", "b1": "mlp.c_fc.bias", "W2": "mlp.c_proj.weight", "b2": "mlp.c_proj.bias"}
BUFFER = re.compile(r"h\.\d+\.attn\.(bias|masked_bias)")  # the causal mask, which older versions saved: no weight


def read_tensors(path):
    """{GPT-2 name without "transformer.": array} of a safetensors file, the attention masks left out."""
    load_file, SafetensorError = library("safetensors.numpy").load_file, library("safetensors").SafetensorError
    try:
        tensors = load_file(str(path))
    except SafetensorError as bad:  # a header that is not one, or a file cut short
        raise InputError(f"{path} is not a whole safetensors file ({bad}); {REFETCH}") from None
    except TypeError as bad:  # numpy has no bfloat16
        raise InputError(f"{path} holds tensors numpy cannot read ({bad}): give a float32 or float16 "
                         f"model.safetensors (openai-community/gpt2's is float32)") from None
    bare = {name.removeprefix("transformer."): array for name, array in tensors.items()}
    return {name: array for name, array in bare.items() if not BUFFER.fullmatch(name)}


def project_params(tensors, cfg, tied, path):
    """Our parameter dict from GPT-2's tensors: the same numbers under our names, float32, packed.

    The head: GPT-2's logits are x wte^T (tied); ours has its own W_out, a copy of tok_emb.T, and b_out = 0.
    """
    take = tensor_taker(tensors, path)
    C = cfg.emb_dim
    params = {"tok_emb": take("wte.weight", (cfg.vocab_size, C)), "pos_emb": take("wpe.weight", (cfg.context_len, C))}
    for layer in range(cfg.num_layers):
        params.update(block_tensors(take, f"h.{layer}.", cfg, f"block{layer}."))
    params["lnf_gain"], params["lnf_shift"] = take("ln_f.weight", (C,)), take("ln_f.bias", (C,))
    head = params["tok_emb"] if tied else take("lm_head.weight", (cfg.vocab_size, C))
    params["W_out"] = np.ascontiguousarray(head.T)  # (V, C) -> (C, V)
    params["b_out"] = np.zeros(cfg.vocab_size, dtype=np.float32)
    unused = sorted(set(tensors) - take.used - ({"lm_head.weight"} if tied else set()))  # a tied head is wte again
    if unused:
        raise InputError(f"{path} holds {unused[0]}, which GPT-2 has no place for ({len(unused)} such tensors): "
                         f"it is of another model; give the folder of a GPT-2")
    assert list(params) == list(transformer.param_shapes(cfg)), "the parameters are not in the canonical order"
    return transformer.pack(params, np.float32)


def block_tensors(take, gpt2_prefix, cfg, our_prefix):
    """One block's tensors under our names: c_attn's (C, 3C) weight and (3C,) bias cut into q, k and v."""
    C, F = cfg.emb_dim, cfg.ff_dim
    shapes = {"ln1_gain": (C,), "ln1_shift": (C,), "Wo": (C, C), "bo": (C,), "ln2_gain": (C,),
              "ln2_shift": (C,), "W1": (C, F), "b1": (F,), "W2": (F, C), "b2": (C,)}
    block = {key: take(gpt2_prefix + BLOCK_NAMES[key], shapes[key]) for key in shapes}
    # the columns of x c_attn are [q | k | v], each C wide
    block["Wq"], block["Wk"], block["Wv"] = np.split(take(gpt2_prefix + "attn.c_attn.weight", (C, 3 * C)), 3, axis=1)
    block["bq"], block["bk"], block["bv"] = np.split(take(gpt2_prefix + "attn.c_attn.bias", (3 * C,)), 3)
    return {our_prefix + key: block[key] for key in transformer.BLOCK_KEYS}


def tensor_taker(tensors, path):
    """take(name, shape) -> the tensor as float32, or InputError when it is missing or of another
    shape; take.used is the set of names taken so far."""
    used = set()  # not take.used within take: a function that names itself is a reference cycle, which
    # would keep every tensor of the file (500 MB at GPT-2 124M) until Python's garbage collector next runs

    def take(name, shape):
        if name not in tensors:
            raise InputError(f"{path} lacks the tensor {name}: the file is incomplete or of another model; {REFETCH}")
        if tensors[name].shape != shape:
            raise InputError(f"{path}: {name} has shape {tensors[name].shape} where config.json gives {shape}: "
                             f"the weights and config.json are of different models; {REFETCH}")
        used.add(name)
        return tensors[name].astype(np.float32, copy=False)  # project_params packs them into one buffer next
    take.used = used
    return take
