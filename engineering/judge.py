"""Judge the exercises: a learner writes the project's functions in files of their own (docs/exercises.md), and
each kind of function is judged its own way.

    python exercises/judge.py                           the exercises, in the order to do them
    python exercises/judge.py layernorm                 yours in exercises/guided/03_layernorm.py
    python exercises/judge.py layernorm --track derive  yours in exercises/derive/03_layernorm.py

The whole model, forward and backward, then the learning-rate schedule, clipping, AdamW's step, sampling and the
plain BPE, on one of two tracks: exercises/guided/NN_NAME.py holds each function's signature, its equations and
hints; exercises/derive/NN_NAME.py (--track derive) only the signature, the shapes and the page to read.
judge_exercise judges the functions the learner has written in one file (--exercises-dir DIR reads DIR/NN_NAME.py
instead), each the way its kind is judged: a backward by central differences (gradcheck.py's checks); a forward
against the project's on random inputs, its cache through the project's backward, and the page's worked example,
the learner's numbers beside the page's; the others by their pages' examples, against the project's function and
by the properties a likely mistake breaks. Where the numbers show what kind of mistake it is, the table adds a
hint under the row; an error raised in the learner's code shows the learner's lines. Exit status 0 right, 1 wrong
or not written yet, 2 a missing file or a mistake in the command line.

train.py, generate.py, talk.py and lab.py --exercises judge the same way before they put the learner's functions
in the project's place (engineering/learners.py).
"""

import argparse
import ast
import contextlib
import importlib.util
import inspect
import math
import sys
import textwrap
import traceback
from pathlib import Path
from typing import NamedTuple

import numpy as np

import tokenizer
import transformer as tf
from gradcheck import (CHECKS, TINY, TOLERANCE, Error, Parser, WrongShape, block_inputs, check, complain, copied,
                       relative_error, table, tiny_model, what_failed)

PROG = "judge.py"  # the command's name in its messages: python exercises/judge.py
REPO = Path(__file__).resolve().parent.parent  # where exercises/ is, wherever this is run from


# ---------------------------------------------------------------------------------------------
# The exercises: the learner writes the project's functions in files of their own, and each kind of
# function is judged its own way. A backward: by central differences, gradcheck.py's check. A forward: against
# the project's on random inputs, its cache handed to the project's backward, and the page's worked example.
# The schedule, clipping, AdamW, sampling and the BPE: by their pages' worked examples, against the project's
# function, and by the properties that a likely mistake breaks.

class Exercise(NamedTuple):
    """One exercise: the page that derives what it asks for (each stub names it too), and the project's functions
    the learner writes, as "module.name" ("module.Class.name" for a method)."""
    page: str
    functions: tuple


# the exercises in the order to do them: each uses only what comes before it. Exercise number NN (from 01) is the
# file NN_NAME.py of each track (TRACKS): exercises/guided/03_layernorm.py, exercises/derive/03_layernorm.py
EXERCISES = {
    "embedding": Exercise("docs/01-embeddings.md", ("transformer.embed_forward", "transformer.embed_backward")),
    "linear": Exercise("docs/02-layernorm.md", ("transformer.linear_forward", "transformer.linear_backward")),
    "layernorm": Exercise("docs/02-layernorm.md", ("transformer.layernorm_forward", "transformer.layernorm_backward")),
    "softmax": Exercise("docs/03-attention.md", ("transformer.softmax", "transformer.softmax_backward")),
    "attention": Exercise("docs/03-attention-backward.md",
                          ("transformer.attention_forward", "transformer.attention_backward")),
    "gelu": Exercise("docs/04-mlp.md", ("transformer.gelu_forward", "transformer.gelu_backward")),
    "mlp": Exercise("docs/04-mlp.md", ("transformer.mlp_forward", "transformer.mlp_backward")),
    "block": Exercise("docs/05-block.md", ("transformer.block_forward", "transformer.block_backward")),
    "cross_entropy": Exercise("docs/06-output.md",
                              ("transformer.cross_entropy_forward", "transformer.cross_entropy_backward")),
    "model": Exercise("docs/07-model.md", ("transformer.forward", "transformer.loss_and_grads")),
    "lr_schedule": Exercise("docs/08-training.md", ("transformer.lr_schedule",)),
    "clip_grad_norm": Exercise("docs/08-training.md", ("transformer.clip_grad_norm",)),
    "adamw": Exercise("docs/08-training.md", ("transformer.Adam.step",)),
    "sampling": Exercise("docs/10-sampling.md", ("transformer.filtered_probs",)),
    "bpe": Exercise("docs/09-tokenizer.md", ("tokenizer.merge_pair", "tokenizer.train_plain")),
}
MODULES = {"transformer": tf, "tokenizer": tokenizer}  # the modules of the exercises' functions: no script


def function_name(qualified):
    """The name a learner writes. Example: "transformer.Adam.step" -> "Adam.step" """
    return qualified.split(".", 1)[1]


def projects_function(qualified):
    """The project's own function. Example: "transformer.Adam.step" -> transformer.Adam.step (a plain function)"""
    module, *names = qualified.split(".")
    value = MODULES[module]
    for name in names:
        value = getattr(value, name)
    return value


def is_stub(definition):
    """Whether a def (its syntax tree) is still its stub: a body of only `raise NotImplementedError` (or
    NotImplementedError("...")), after a docstring. train.py --exercises reads the learner's files by this rule."""
    body = definition.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    raised = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"


def written(function):
    """False while a function's body is still its stub's line (is_stub)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError):  # no source to read (a built-in): not a stub
        return True
    return not is_stub(tree.body[0])


# ---------------------------------------------------------------------------------------------
# Comparing a learner's numbers with the expected ones.

def numbers_in(value):
    """Every array and number of an output (nested tuples, lists and dicts), as arrays, in a fixed order."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        return [array for item in value for array in numbers_in(item)]
    return [np.asarray(value)]


def compared(yours, expected):
    """The error of an output against the expected one: WrongShape where a shape differs, infinite where a
    count of values differs or a number is not finite, else the worst relative_error of its arrays.

    Example: compared((np.ones(2), 3.0), (np.ones(2), 3.0)) -> 0.0
    """
    mine, theirs = numbers_in(yours), numbers_in(expected)
    if len(mine) != len(theirs):
        return Error(math.inf, f"returns {len(mine)} numbers or arrays, where {len(theirs)} "
                               f"{'is' if len(theirs) == 1 else 'are'} expected")
    worst = 0.0
    for a, b in zip(mine, theirs):
        if a.shape != b.shape:
            return WrongShape(a.shape, b.shape)
        if a.dtype.kind not in "biuf":
            return Error(math.inf, f"holds {a.dtype} values, where numbers are expected")
        if not np.array_equal(np.isfinite(a), np.isfinite(b)) or not np.array_equal(a[~np.isfinite(a)],
                                                                                    b[~np.isfinite(b)]):
            return Error(math.inf, "a number is nan or inf where the expected one is not, or the other way round")
        finite = np.isfinite(b)
        worst = max(worst, relative_error(a[finite].astype(np.float64), b[finite].astype(np.float64)))
    return Error(worst)


def shown_array(value, precision=4):
    """An array on one line, 4 decimals. Example: [0.01851, -0.5] -> '[ 0.0185 -0.5000]'"""
    return np.array2string(np.asarray(value, dtype=np.float64), precision=precision, floatmode="fixed",
                           suppress_small=True, max_line_width=10_000)


def side_by_side(yours, expected, whose="the page's"):
    """Lines that set each named value of yours beside the expected one, row by row, marking the rows that
    differ, to 4 decimals or to 10 where 4 hide the difference. yours and expected: {name: array}."""
    lines = []
    for name, value in expected.items():
        mine = yours.get(name) if isinstance(yours, dict) else None
        if mine is None or np.shape(mine) != np.shape(value):
            lines.append(f"{name}: yours {None if mine is None else shown_array(mine)}, {whose} {shown_array(value)}")
            continue
        rows = [(f"{name} row {i}", a, b) for i, (a, b) in enumerate(zip(np.atleast_2d(mine), np.atleast_2d(value)))] \
            if np.ndim(value) == 2 else [(name, mine, value)]
        for label, a, b in rows:
            differs = not compared(a, b) < TOLERANCE
            precision = 10 if differs and shown_array(a) == shown_array(b) else 4
            lines.append(f"{label:<16} yours {shown_array(a, precision)}   {whose} {shown_array(b, precision)}"
                         + "   <- differs" * differs)
    return lines


# ---------------------------------------------------------------------------------------------
# The pages' worked examples, the inputs of tests/test_examples_*.py and tests/test_transformer.py: each runs a
# function (the learner's or the project's) and returns {name: what it computed}. The page shows the project's.

def page_tables():
    """The embeddings page's tables: 4 tokens and 3 positions of width 2."""
    return tf.pack({"tok_emb": np.array([[0.1, 0.2], [0.3, -0.1], [0.5, 0.4], [-0.2, 0.6]]),
                    "pos_emb": np.array([[0.0, 0.1], [0.1, 0.0], [0.2, 0.1]])})


def page_layernorm():
    """The layer norm page's rows, gain and shift: x (2, 4), gain (4,), shift (4,)."""
    return np.array([[1.0, 7.0, 7.0, 9.0], [2.0, 2.0, 6.0, 6.0]]), np.array([1.0, 2.0, 0.5, 1.0]), \
        np.array([0.0, 0.0, 1.0, -1.0])


def page_linear():
    """The MLP page's linear layer: x (2, 2), W (2, 3), b (3,)."""
    x, W = np.array([[1.0, 2.0], [3.0, -1.0]]), np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]])
    return x, W, np.array([0.5, 0.0, -0.5])


def page_attention():
    """The attention page's three positions of width 2 in two heads of 1, every matrix I, every bias 0."""
    p = {name: np.eye(2) if name[0] == "W" else np.zeros(2)
         for name in ("Wq", "bq", "Wk", "bk", "Wv", "bv", "Wo", "bo")}
    return np.array([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]]), p


def page_mlp():
    """The MLP page's one number in, two hidden units (weights 1 and -1), summed back with b2 = 0.5."""
    return np.array([[1.0]]), {"W1": np.array([[1.0, -1.0]]), "b1": np.zeros(2), "W2": np.array([[1.0], [1.0]]),
                               "b2": np.array([0.5])}


def page_block():
    """The block page's block of width 3 whose attention branch is LN1 alone and whose MLP is off."""
    cfg = tf.ModelConfig(vocab_size=1, context_len=1, emb_dim=3, num_heads=1, num_layers=1, ff_dim=2, ln_eps=1e-5)
    p = tf.block_params(tf.init_params(cfg, np.random.default_rng(0)), 0)
    p["Wv"][...] = p["Wo"][...] = np.eye(3)
    p["Wq"][...] = p["Wk"][...] = p["W1"][...] = p["W2"][...] = 0
    return np.array([[[1.0, 2.0, 3.0]]]), p, cfg


PAGE_LOGITS, PAGE_TARGETS = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]), np.array([2, 0])  # the output page's two rows
ZERO_HEAD = tf.ModelConfig(vocab_size=3, context_len=4, emb_dim=4, num_heads=2, num_layers=1, ff_dim=8, ln_eps=1e-5)


def page_zero_head():
    """The model page's model whose head is 0: (params, ids, targets)."""
    params = tf.init_params(ZERO_HEAD, np.random.default_rng(0))
    params["W_out"][...] = 0
    return params, np.array([[0, 1, 2], [2, 2, 1]]), np.array([[1, 2, 2], [2, 1, 0]])


def embed_backward_example(f):
    grads = tf.zeros_like(page_tables())
    f(np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]]), np.array([2, 0, 2]), grads)
    return {"dtok_emb": grads["tok_emb"], "dpos_emb": grads["pos_emb"]}


def model_backward_example(f):
    loss, grads = f(*page_zero_head(), ZERO_HEAD)
    return {"loss": loss, "db_out": grads["b_out"]}


# function -> (the page, the test that holds its numbers, the example run through a function)
PAGE_EXAMPLES = {
    "embed_forward": ("docs/01-embeddings.md", "tests/test_transformer.py::test_embedding_worked_example",
                      lambda f: {"X0": f(page_tables(), np.array([2, 0, 2]))}),
    "embed_backward": ("docs/01-embeddings.md", "tests/test_transformer.py::test_embedding_backward_sums_repeated_ids",
                       embed_backward_example),
    "linear_forward": ("docs/02-layernorm.md", "tests/test_examples_layers.py::test_linear_worked_example",
                       lambda f: {"out": f(*page_linear())[0]}),
    "linear_backward": ("docs/02-layernorm.md", "tests/test_examples_layers.py::test_linear_worked_example",
                        lambda f: dict(zip(("dx", "dW", "db"), f(np.array([[1.0, 0.0, 1.0], [0.0, 2.0, 0.0]]),
                                                                 tf.linear_forward(*page_linear())[1])))),
    "layernorm_forward": ("docs/02-layernorm.md",
                          "tests/test_examples_layers.py::test_layernorm_forward_worked_example",
                          lambda f: {"out": f(*page_layernorm(), 1e-5)[0]}),
    "layernorm_backward": ("docs/02-layernorm.md",
                           "tests/test_examples_layers.py::test_layernorm_backward_worked_example",
                           lambda f: dict(zip(("dx", "dgain", "dshift"), f(
                               np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]),
                               tf.layernorm_forward(*page_layernorm(), 1e-5)[1])))),
    "softmax": ("docs/03-attention.md", "tests/test_examples_layers.py::test_softmax_worked_example",
                lambda f: {"probs": f(np.array([1.0, 0.0, 1.0])),
                           "1000 apart": f(np.array([[0.0, 1.0], [-1000.0, -999.0]]))}),
    "softmax_backward": ("docs/03-attention-backward.md",
                         "tests/test_examples_layers.py::test_softmax_backward_worked_example",
                         lambda f: {"ds": f(np.array([1.0, 2.0, 5.0]), np.array([0.5, 0.5, 0.0]))}),
    "attention_forward": ("docs/03-attention.md", "tests/test_examples_layers.py::test_attention_worked_example",
                          lambda f: {"out": f(*page_attention(), 2)[0][0]}),
    "attention_backward": ("docs/03-attention-backward.md",
                           "tests/test_examples_layers.py::test_attention_backward_worked_example",
                           lambda f: (lambda dx, g: {"dx": dx[0], "dbq": g["bq"], "dbk": g["bk"], "dbv": g["bv"]})(
                               *f(np.ones((1, 3, 2)), tf.attention_forward(*page_attention(), 2)[1]))),
    "gelu_forward": ("docs/04-mlp.md", "tests/test_examples_layers.py::test_gelu_worked_example",
                     lambda f: {"y": f(np.array([0.0, 1.0, -1.0]))[0]}),
    "gelu_backward": ("docs/04-mlp.md", "tests/test_examples_layers.py::test_gelu_worked_example",
                      lambda f: {"dy/dx": f(np.ones(3), tf.gelu_forward(np.array([0.0, 1.0, -1.0]))[1])}),
    "mlp_forward": ("docs/04-mlp.md", "tests/test_examples_layers.py::test_mlp_worked_example",
                    lambda f: {"out": f(*page_mlp())[0]}),
    "mlp_backward": ("docs/04-mlp.md", "tests/test_examples_layers.py::test_mlp_worked_example",
                     lambda f: (lambda dx, g: {"dx": dx, **{f"d{k}": v for k, v in g.items()}})(
                         *f(np.array([[1.0]]), tf.mlp_forward(*page_mlp())[1]))),
    "block_forward": ("docs/05-block.md", "tests/test_examples_model.py::test_block_residual_worked_example",
                      lambda f: {"out": f(*page_block())[0][0]}),
    "block_backward": ("docs/05-block.md", "tests/test_examples_model.py::test_block_residual_worked_example",
                       lambda f: {"dx": f(np.array([[[1.0, 0.0, 0.0]]]), tf.block_forward(*page_block())[1])[0][0]}),
    "cross_entropy_forward": ("docs/06-output.md",
                              "tests/test_examples_model.py::test_cross_entropy_two_rows_divides_by_n",
                              lambda f: {"loss": f(PAGE_LOGITS, PAGE_TARGETS)[0],
                                         "loss, one row": f(PAGE_LOGITS[:1], PAGE_TARGETS[:1])[0]}),
    "cross_entropy_backward": ("docs/06-output.md",
                               "tests/test_examples_model.py::test_cross_entropy_two_rows_divides_by_n",
                               lambda f: {"dlogits": f(tf.cross_entropy_forward(PAGE_LOGITS, PAGE_TARGETS)[1])}),
    "forward": ("docs/07-model.md", "tests/test_examples_model.py::test_whole_model_with_a_zero_head",
                lambda f: {"logits[0]": f(page_zero_head()[0], page_zero_head()[1], ZERO_HEAD)[0][0]}),
    "loss_and_grads": ("docs/07-model.md", "tests/test_examples_model.py::test_whole_model_with_a_zero_head",
                       model_backward_example),
}


def page_example(function, yours):
    """The page's worked example of `function` run through yours: an Error against the project's numbers,
    which the page shows, with the two side by side."""
    page, test, run = PAGE_EXAMPLES[function]
    expected = run(getattr(tf, function))
    try:
        mine = run(yours)
    except Exception as error:  # noqa: BLE001  yours fails on the page's shapes (a (C,) row, say): say where
        where = traceback.extract_tb(error.__traceback__)[-1]
        return Error(math.inf, f"the page's worked example ({page}) raised {type(error).__name__}: {error}, in yours "
                               f"at {where.filename}, line {where.lineno}: {where.line}")
    error = compared(mine, expected)
    return Error(error, getattr(error, "hint", None),
                 [f"the page's worked example ({page}), yours beside the page's:"] + side_by_side(mine, expected))


# ---------------------------------------------------------------------------------------------
# A forward: its output against the project's on random inputs (and on those the page's special cases
# name), its cache handed to the project's backward, and the page's worked example.

@contextlib.contextmanager
def replaced(module, name, value):
    """module.name is value inside the with block, and what it was after."""
    kept = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, kept)


def cache_error(backward, mine, theirs, dout):
    """The error of the project's backward handed your forward's cache, against the same handed its own: the
    project's backward is paired with your forward (in train.py --exercises) until you write your own."""
    if hasattr(theirs, "_fields") and type(mine) is not type(theirs):
        name = type(theirs).__name__
        return Error(math.inf, f"return the cache as transformer.{name}(...), by name: generation reads its fields")
    try:
        got = backward(copied(dout), copied(mine))
    except Exception as error:  # noqa: BLE001  a cache of another layout: the backward cannot unpack it
        return Error(math.inf, f"the project's {backward.__name__} cannot read your cache ({type(error).__name__}: "
                               f"{error}): return the cache your stub names, in its order")
    return compared(got, backward(copied(dout), copied(theirs)))


def forward_errors(yours, function, cases, backward=None, with_cache=None):
    """{row: Error} of a forward: each case (label, args), your output against the project's; with the project's
    `backward`, which takes (dout, cache), the row "cache" on the first case; then the page's example.
    with_cache: whether the forward returns (out, cache), as it does when it has a backward to hand it to."""
    project, errors, rng = getattr(tf, function), {}, np.random.default_rng(5)
    with_cache = backward is not None if with_cache is None else with_cache
    for number, (label, args) in enumerate(cases):
        mine, theirs = yours(*copied(args)), project(*copied(args))
        if with_cache and not (isinstance(mine, tuple) and len(mine) == 2):
            errors[label] = Error(math.inf, f"return (out, cache), a pair, as the stub says; yours returns "
                                            f"{type(mine).__name__}")
            return errors
        errors[label] = compared(mine[0], theirs[0]) if with_cache else compared(mine, theirs)
        if backward is not None and number == 0:
            errors["cache"] = cache_error(backward, mine[1], theirs[1], rng.normal(size=np.shape(theirs[0])))
    errors["page example"] = page_example(function, yours)
    return errors


def random_tables(rng):
    return {"tok_emb": rng.normal(size=(TINY.vocab_size, 4)), "pos_emb": rng.normal(size=(TINY.context_len, 4))}


def random_past(rng, B=2, S=3):
    """The keys and values of S earlier positions for TINY's attention: two (B, nh, S, hs) arrays."""
    return rng.normal(size=(B, 2, S, 2)), rng.normal(size=(B, 2, S, 2))


def forward_cases(function, rng):
    """(label, args) of the random inputs a forward is judged on, the first one with a batch (B, T)."""
    p, x = block_inputs(rng), rng.normal(size=(2, 5, 4))
    ids = np.array([[2, 0, 2, 1, 6], [3, 3, 0, 2, 5]])
    cases = {
        "embed_forward": [("X0", (random_tables(rng), ids)), ("X0, start=3", (random_tables(rng), ids[:, :4], 3)),
                          ("ids (T,)", (random_tables(rng), ids[0]))],
        "linear_forward": [("out", (x, p["W1"], p["b1"])), ("x (N, n_in)", (x[0], p["W1"], p["b1"]))],
        "layernorm_forward": [("out", (3 * x + 1, p["ln1_gain"], p["ln1_shift"], 1e-5)),
                              ("a constant row", (np.full((1, 4), 5.0), p["ln1_gain"], p["ln1_shift"], 1e-5))],
        "softmax": [("probs", (rng.normal(size=(2, 3, 5)),)),
                    ("1000 apart", (np.array([[0.0, 1.0], [-1000.0, -999.0]]),)),
                    ("masked", (np.array([[0.0, -np.inf], [1.0, 2.0]]),))],
        "attention_forward": [("out", (x, p, 2)), ("with a past", (x[:, :2], p, 2, random_past(rng)))],
        "gelu_forward": [("y", (rng.normal(scale=2.0, size=(3, 7)),))],
        "mlp_forward": [("out", (x, p))],
        "block_forward": [("out", (x, p, TINY)), ("with a past", (x[:, :2], p, TINY, random_past(rng)))],
        "cross_entropy_forward": [("loss", (rng.normal(size=(6, 5)), np.array([0, 4, 4, 1, 2, 3]))),
                                  ("1000 apart", (np.array([[1.0, 2.0, 3.0], [-999.0, -998.0, -997.0]]),
                                                  np.array([2, 2])))],
    }
    return cases[function]


# forward -> the project's backward that takes its cache, as (dout, cache); None for a forward without a cache
PAIRED_BACKWARDS = {
    "embed_forward": None, "softmax": None, "linear_forward": tf.linear_backward,
    "layernorm_forward": tf.layernorm_backward, "attention_forward": tf.attention_backward,
    "gelu_forward": tf.gelu_backward, "mlp_forward": tf.mlp_backward, "block_forward": tf.block_backward,
    "cross_entropy_forward": lambda dout, cache: tf.cross_entropy_backward(cache) * dout,
}


def layer_forward_errors(function, yours):
    cases = forward_cases(function, np.random.default_rng(4))
    return forward_errors(yours, function, cases, PAIRED_BACKWARDS[function])


def model_forward_errors(yours):
    """forward: the logits of TINY's random model for (B, T) and (T,) ids, and the project's loss_and_grads
    with your forward in place of its own."""
    cfg, params, ids, targets = tiny_model()
    errors = forward_errors(yours, "forward", [("logits", (params, ids, cfg)), ("ids (T,)", (params, ids[0], cfg))],
                            with_cache=True)
    if "page example" not in errors:  # not a pair (out, cache): there is no cache to hand on
        return errors
    with replaced(tf, "forward", yours):
        try:
            got = tf.loss_and_grads(params, ids, targets, cfg)
        except Exception as error:  # noqa: BLE001  a cache of another layout
            errors["cache"] = Error(math.inf, f"the project's loss_and_grads cannot read your cache "
                                              f"({type(error).__name__}: {error}): return the cache your stub names")
            return errors
    errors["cache"] = compared(got, tf.loss_and_grads(params, ids, targets, cfg))
    errors["page example"] = errors.pop("page example")  # last, as for every forward
    return errors


# ---------------------------------------------------------------------------------------------
# A backward: central differences (check), and where it fails, the page's worked example through it.

# backward -> the first layer of gradcheck.CHECKS that judges it (the whole model's loss_and_grads: "model", GPT-2's,
# not "mod_model", which checks the same function on today's options): reversed, so that the first one is kept
CHECKED_BY = {backward: layer for layer, (backward, _) in reversed(CHECKS.items())}

def rows_mixed(layer, backward):
    """True when your row-wise backward's first row changes when the other rows are there: a sum or mean over
    another axis than the row's. For the softmax and the layer norm, whose rows are independent."""
    rng = np.random.default_rng(3)
    x, gain, shift = rng.normal(size=(2, 3, 6)), rng.normal(size=6), rng.normal(size=6)
    dout = rng.normal(size=x.shape)
    try:
        if layer == "softmax":
            probs = tf.softmax(x)
            together, alone = backward(dout, probs.copy()), backward(dout[:1], probs[:1].copy())
        else:
            xhat, rstd, _ = tf.layernorm_forward(x, gain, shift, 1e-5)[1]
            together = backward(dout, (xhat.copy(), rstd.copy(), gain))[0]
            alone = backward(dout[:1], (xhat[:1].copy(), rstd[:1].copy(), gain))[0]
    except Exception:  # noqa: BLE001  yours fails on one row alone: that says nothing of its axes
        return False
    return np.shape(together)[1:] == np.shape(alone)[1:] and not compared(np.asarray(together)[:1], alone) < TOLERANCE


def backward_errors(function, yours):
    """({tensor: Error}, notes) of a backward by central differences: where x fails in a row-wise layer whose
    rows mix, the hint says so; where any row fails, the notes run the page's worked example through yours and
    set it beside the page's."""
    layer = CHECKED_BY[function]
    errors = check(layer, backward=yours)
    if all(error < TOLERANCE for error in errors.values()):
        return errors, []
    if layer in ("softmax", "layernorm") and not errors["x"] < TOLERANCE and not isinstance(errors["x"], WrongShape) \
            and rows_mixed(layer, yours):
        errors["x"] = Error(errors["x"], "row 0 of yours changes when other rows are there: a sum or a mean runs "
                                         "over another axis than the row's (axis=-1)")
    example = page_example(function, yours)
    return errors, example.beside or [example.hint]


# ---------------------------------------------------------------------------------------------
# The schedule, clipping, AdamW, sampling and the BPE: the pages' worked examples, the project's function on
# other inputs, and the properties a likely mistake breaks.

def shown_value(value):
    """A number or a list of numbers to 6 digits, anything else as Python writes it.
    Example: [0.6, 0.7999999999999999] -> '[0.6, 0.8]'"""
    if isinstance(value, (float, np.floating)):
        return f"{value:.6g}"
    if isinstance(value, list) and all(isinstance(item, (int, float, np.number)) for item in value):
        return "[" + ", ".join(shown_value(item) for item in value) + "]"
    return repr(value)


def beside(mine, expected, whose="the page's"):
    """An Error of yours against the expected value, with the two side by side."""
    error = compared(mine, expected)
    lines = side_by_side(mine, expected, whose) if isinstance(expected, dict) else \
        [f"yours {shown_value(mine)}, {whose} {shown_value(expected)}"]
    return Error(error, getattr(error, "hint", None), lines)


def same(mine, expected, whose="the page's"):
    """An Error of 0 when yours equals the expected value exactly (lists, tuples, text), else infinite."""
    return Error(0.0 if mine == expected else math.inf, None, [f"yours {mine!r}, {whose} {expected!r}"])


def holds(fact, hint):
    """An Error of 0 where a property holds, infinite with the hint where it does not."""
    return Error(0.0 if fact else math.inf, None if fact else hint)


def schedule_errors(yours):
    project = tf.lr_schedule
    errors = {f"step {step} of {total}": beside(yours(step, total, 1e-3, 1e-4, 50),
                                                project(step, total, 1e-3, 1e-4, 50))
              for step, total in ((25, 1000), (50, 1000), (525, 1000), (1000, 1000), (10, 10))}
    runs = [(step, total, warmup) for total, warmup in ((1000, 50), (120, 10), (30, 50), (40, 0))
            for step in range(1, total + 1)]
    wrong = [(step, total, warmup) for step, total, warmup in runs
             if not compared(yours(step, total, 1e-3, 1e-4, warmup),
                             project(step, total, 1e-3, 1e-4, warmup)) < TOLERANCE]
    errors["every step"] = holds(not wrong, None)
    if wrong:
        step, total, warmup = wrong[0]
        errors["every step"].beside = [f"step {step} of {total}, warmup {warmup}: yours "
                                       f"{shown_value(yours(step, total, 1e-3, 1e-4, warmup))}, the project's "
                                       f"{shown_value(project(step, total, 1e-3, 1e-4, warmup))} "
                                       f"({len(wrong)} steps differ)"]
    return errors


def clipped(clip, values, max_norm):
    """(what clip returned, the gradients' buffer after it, whether each tensor is still its view of that buffer)
    for gradients a (1,) and b (1, len(values) - 1) holding values."""
    grads = tf.pack({"a": np.array(values[:1], dtype=np.float64), "b": np.array([values[1:]], dtype=np.float64)})
    flat, tensors = tf.flat_buffer(grads), dict(grads)
    returned = clip(grads, max_norm)
    return returned, flat.tolist(), all(grads[name] is tensor for name, tensor in tensors.items())


def clipping_errors(yours):
    project = tf.clip_grad_norm
    errors = {}
    for values, max_norm in (([3.0, 4.0], 1.0), ([0.3, 0.4], 1.0), ([0.9, 1.2], 1.0), ([1.2, 1.6], 1.0)):
        norm = math.hypot(*values)
        returned, after, in_place = clipped(yours, values, max_norm)
        expected_returned, expected_after, _ = clipped(project, values, max_norm)
        label = f"norm {norm:g} (max {max_norm:g})"
        errors[label] = beside(after, expected_after, "the project's")
        if after == values and norm > max_norm and in_place:
            errors[label].hint = (f"a norm of {norm:g} is above max_norm {max_norm:g}, yet yours left the gradients "
                                  f"as they were")
        errors[f"returns {norm:g}"] = beside(returned, expected_returned, "the project's")
        if not in_place:
            errors["in place"] = holds(False, "scale the gradients in place (grads[name] *= ..., or the buffer "
                                              "flat_buffer(grads)): AdamW reads that buffer; a new array is not seen")
    errors.setdefault("in place", holds(True, None))
    rng = np.random.default_rng(6)
    values = rng.normal(size=9).tolist()
    norm = math.sqrt(sum(v * v for v in values))
    wrong = [scale for scale in (0.3, 0.9, 1.5)
             if not compared(clipped(yours, values, scale * norm)[:2],
                             clipped(project, values, scale * norm)[:2]) < TOLERANCE]
    errors["9 random numbers"] = holds(not wrong, wrong and f"with max_norm {wrong[0]:g} times their norm, yours is "
                                                            f"not the project's")
    return errors


def adam_run(step, params, grads_by_step, settings, lr):
    """(params, m, v, t) after step, a function of (optimizer, params, grads, lr), is taken once per gradient."""
    params = tf.pack(params)
    opt = tf.Adam(params, *settings)
    for grads in grads_by_step:
        step(opt, params, tf.pack(grads), lr)
    return {"params": tf.flat_buffer(params).copy(), "m": opt.m.copy(), "v": opt.v.copy(), "t": opt.t}


def adamw_errors(yours):
    project = tf.Adam.step
    errors = {}
    page = ({"W": np.array([[1.0, -2.0]]), "b": np.array([0.5])}, {"W": np.array([[0.1, 0.0]]), "b": np.array([0.0])})
    for steps in (1, 2):  # the training page's two steps by hand: W decays, b does not
        mine, theirs = (adam_run(step, page[0], [page[1]] * steps, (0.9, 0.999, 1e-8, 0.5), 0.1)
                        for step in (yours, project))
        errors[f"page, step {steps}"] = beside({k: mine[k] for k in ("params", "m", "v")},
                                               {k: theirs[k] for k in ("params", "m", "v")})
        if steps == 1 and np.array_equal(mine["params"], [1.0, -2.0, 0.5]):
            errors["page, step 1"].hint = ("yours left the parameters as they were: update them in place (p -= ..., "
                                           "on flat_buffer(params) or each tensor), as train.py reads them")
        elif mine["params"][-1] != page[0]["b"][0]:
            errors[f"page, step {steps}"].hint = ("b, a bias with a gradient of 0, moved: weight decay is for the "
                                                  "matrices alone (decay_group), and Adam moves an entry only by its "
                                                  "gradient's running means")
        errors[f"t after {steps}"] = beside(mine["t"], theirs["t"])
    mine, theirs = (adam_run(step, {"b": np.ones(3)}, [{"b": np.array([0.5, -2.0, 0.0])}], (0.9, 0.999, 1e-8, 0.0), 0.1)
                    for step in (yours, project))
    errors["lr times sign"] = beside(mine["params"].tolist(), theirs["params"].tolist())
    cfg, params, _, _ = tiny_model()
    rng = np.random.default_rng(7)
    grads = [{name: rng.normal(size=p.shape) for name, p in params.items()} for _ in range(3)]
    mine, theirs = (adam_run(step, params, grads, (0.9, 0.95, 1e-8, 0.1), 1e-2) for step in (yours, project))
    errors["3 steps, a model"] = compared(mine, theirs)
    return errors


def sampling_errors(yours):
    project, Sampling = tf.filtered_probs, tf.Sampling
    p4 = np.log([0.1, 0.4, 0.2, 0.3])
    cases = {"top-k 2": (p4, Sampling(1.0, 2, 1.0)), "top-p 0.5": (p4, Sampling(1.0, 0, 0.5)),
             "top-p 0.4": (p4, Sampling(1.0, 0, 0.4)), "ties": (np.log([0.25] * 4), Sampling(1.0, 0, 0.5)),
             "0.7 + 0.1 vs 0.8": (np.log([0.7, 0.1, 0.1, 0.1]), Sampling(1.0, 0, 0.8)),
             "top-k, then top-p": (np.log([0.5, 0.3, 0.15, 0.05]), Sampling(1.0, 2, 0.6)),
             "temperature 0": (np.array([1.0, 3.0, 3.0, 0.0]), Sampling(0, 0, 0.9)),
             "tiny temperature": (np.array([2.0, 1.0, 0.0]), Sampling(1e-300, 0, 1.0))}
    errors = {label: beside(np.round(yours(logits.copy(), s), 4).tolist(), np.round(project(logits, s), 4).tolist())
              for label, (logits, s) in cases.items()}
    rng = np.random.default_rng(8)
    logits = rng.normal(scale=3.0, size=50)
    settings = [Sampling(t, k, p) for t in (0.5, 1.0, 2.0) for k in (0, 1, 5) for p in (1.0, 0.9, 0.3)]
    wrong = [s for s in settings if not compared(yours(logits.copy(), s), project(logits, s)) < TOLERANCE]
    errors["50 random logits"] = holds(not wrong, wrong and f"with {wrong[0]}, yours is not the project's")
    return errors


BPE_TEXTS = ["the cat sat on the mat\nthe cat ate\n", "a hat, a mat\n\nthat cat sat\n"]


def bpe_errors(merge_pair=None, train_plain=None):
    errors = {}
    if merge_pair is not None:
        for tokens, pair, new in (([1, 2, 3, 1, 2], (1, 2), 4), ([0, 0, 0], (0, 0), 1), ([0, 0, 0, 0], (0, 0), 1),
                                  ([5, 1, 2], (2, 1), 9)):
            kept = list(tokens)
            errors[f"{tokens}"] = same(merge_pair(tokens, pair, new), tokenizer.merge_pair(kept, pair, new))
            if tokens != kept:
                errors["tokens kept"] = holds(False, "return a new list: merge_pair must not change the list it reads")
        errors.setdefault("tokens kept", holds(True, None))
    if train_plain is not None:
        for label, texts, merges in (("aaabdaaabac", ["aaabdaaabac"], 10), ("ties", ["cdcd", "abab"], 1),
                                     ("left ids tie", ["acac", "abab"], 1), ("no pair twice", ["abcd"], 5),
                                     ("two texts", BPE_TEXTS, 30)):
            errors[label] = same(train_plain(texts, merges), tokenizer.train_plain(texts, merges),
                                 "the page's" if label != "two texts" else "the project's")
    return errors


def judged(name, functions):
    """[(function, {row: Error}, notes)] of exercise `name`, for its written functions: {qualified name: yours}."""
    parts = []
    for qualified, yours in functions.items():
        function = function_name(qualified)
        if name == "model" and function == "forward":
            parts.append((function, model_forward_errors(yours), []))
        elif function in PAIRED_BACKWARDS:
            parts.append((function, layer_forward_errors(function, yours), []))
        elif function in CHECKED_BY:
            parts.append((function, *backward_errors(function, yours)))
    others = {"lr_schedule": schedule_errors, "clip_grad_norm": clipping_errors, "adamw": adamw_errors,
              "sampling": sampling_errors}
    if name in others:
        (qualified, yours), = functions.items()
        parts.append((function_name(qualified), others[name](yours), []))
    if name == "bpe":
        mine = {function_name(qualified): yours for qualified, yours in functions.items()}
        for function in mine:
            parts.append((function, bpe_errors(**{function: mine[function]}), []))
    return parts


# ---------------------------------------------------------------------------------------------
# The learner's files.

# the two tracks of exercises: the guided stubs (signature, equations, hints) and the derive stubs (signature,
# shapes and the page to read); --track picks one, guided by default
TRACKS = {"guided": REPO / "exercises" / "guided", "derive": REPO / "exercises" / "derive"}


def exercise_file(folder, name):
    """The learner's file of exercise `name` in folder: NN_NAME.py, NN its number (03_layernorm.py); or NAME.py
    where only that one is there (a copy of the files from before they were numbered)."""
    numbered = Path(folder) / f"{list(EXERCISES).index(name) + 1:02d}_{name}.py"
    plain = numbered.with_name(f"{name}.py")
    return plain if plain.is_file() and not numbered.is_file() else numbered


def relative_to_repo(path):
    """A file's name as the learner knows it: relative to the repository when it lies inside it."""
    path = Path(path).resolve()
    return path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else str(path)


def learners_module(path):
    """The learner's Python file at path, run afresh as a module of its own."""
    spec = importlib.util.spec_from_file_location(f"exercise_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def learners_function(path, name):
    """The function `name` ("Adam.step" for a method) of the Python file at path, run afresh (None if none)."""
    value = learners_module(path)
    for part in name.split("."):
        value = getattr(value, part, None)
    return value


def learners_traceback(error, folder):
    """The traceback of an error raised in the learner's code, cut to the frames of the learner's files (and the
    last frame, where NumPy or the project raised it): the judge's own frames say nothing about the mistake."""
    folder = Path(folder).resolve()
    frames = traceback.extract_tb(error.__traceback__)
    mine = [frame for frame in frames if Path(frame.filename).resolve().is_relative_to(folder)]
    if mine and frames[-1] is not mine[-1]:
        mine.append(frames[-1])
    lines = ["Traceback (most recent call last), your lines:\n"] * bool(mine) + traceback.format_list(mine)
    return "".join(lines + traceback.format_exception_only(type(error), error))


def not_written_line(path, functions):
    """The line that says which of a file's functions still raise NotImplementedError."""
    names = [function_name(qualified) for qualified in functions]
    if len(names) == 1:
        return (f"{relative_to_repo(path)}: {names[0]} is not written yet (it raises NotImplementedError): write its "
                f"body, then run this again")
    return (f"{relative_to_repo(path)}: {' and '.join(names)} are not written yet (each raises NotImplementedError): "
            f"write their bodies, {names[0]} first, then run this again")


def judge_exercise(name, folder, track="guided"):
    """Judge exercise `name`, the learner's functions in its file in folder (exercise_file), each the way its kind
    is judged, and print the table. Exit status 0 right, 1 wrong or not written yet, 2 a missing file or function."""
    path = exercise_file(folder, name)
    if not path.is_file():
        stub = relative_to_repo(exercise_file(TRACKS[track], name))
        print(f"{PROG}: there is no {relative_to_repo(path)}; `git checkout {stub}` brings back its stub",
              file=sys.stderr)
        return 2
    try:
        module = learners_module(path)
    except Exception as error:  # noqa: BLE001  the learner's file does not run: show its lines
        print(learners_traceback(error, folder), end="", file=sys.stderr)
        return 1
    yours = {}
    for qualified in EXERCISES[name].functions:
        value = module
        for part in function_name(qualified).split("."):
            value = getattr(value, part, None)
        if value is None:
            what = function_name(qualified)
            place = f"`class {what.split('.')[0]}:` with `def {what.split('.')[1]}`" if "." in what else f"`def {what}`"
            print(f"{PROG}: {relative_to_repo(path)} defines no {what}: write {place} with the stub's signature",
                  file=sys.stderr)
            return 2
        yours[qualified] = value
    used = {q for exercise in EXERCISES.values() for q in exercise.functions if q.startswith("transformer.")}
    replaced_already = [q for q in sorted(used | set(yours)) if projects_function(q).__module__ != q.split(".")[0]]
    assert not replaced_already, f"judge the learner's functions against the project's, before putting them in " \
                                 f"the project's place: {', '.join(replaced_already)} are replaced already"
    not_yet = [qualified for qualified, function in yours.items() if not written(function)]
    if len(not_yet) == len(yours):
        print(not_written_line(path, not_yet), file=sys.stderr)
        return 1
    try:
        parts = judged(name, {qualified: f for qualified, f in yours.items() if qualified not in not_yet})
    except Exception as error:  # noqa: BLE001  a mistake in the learner's code: its lines, not the judge's
        print(learners_traceback(error, folder), end="", file=sys.stderr)
        return 1
    functions = ", ".join(function_name(qualified) for qualified in yours if qualified not in not_yet)
    print(f"{functions} of {relative_to_repo(path)}, in place of the project's\n")
    failed = table([(name, function, errors) for function, errors, _ in parts],
                   f"a backward against central differences (float64, h = 1e-5), anything else against the page's "
                   f"worked example and the project's own function: pass below {TOLERANCE:.0e}", first=name)
    for function, errors, notes in parts:
        if notes:
            print(f"\n{function}:\n" + "\n".join(f"  {line}" for line in notes))
    if not_yet:
        print("\n" + not_written_line(path, not_yet), file=sys.stderr)
        return 1
    if not failed:
        print(f"\n{relative_to_repo(path)}: {functions} {'is' if len(yours) == 1 else 'are'} right; compare with the "
              f"project's own in {EXERCISES[name].functions[0].split('.')[0]}.py")
        return 0
    print("\n" + "\n".join(line for (label, function), errors in failed.items()
                           for line in what_failed(label, function, errors)), file=sys.stderr)
    print(f"fix {relative_to_repo(path)}, then run this again", file=sys.stderr)
    return 1


def list_exercises(folder):
    """Print the exercises in the order to do them, each with its file and the page it needs."""
    print("the exercises, in the order to do them (docs/exercises.md): write the body of each function in\n"
          f"its file, then run python exercises/judge.py NAME. Two tracks, the same {len(EXERCISES)} exercises:\n"
          f"guided (the default): {relative_to_repo(TRACKS['guided'])}/NN_NAME.py gives the equations and hints\n"
          f"derive (--track derive): {relative_to_repo(TRACKS['derive'])}/NN_NAME.py gives only the shapes and the "
          f"page to read\n")
    for number, (name, exercise) in enumerate(EXERCISES.items(), 1):
        path = relative_to_repo(exercise_file(folder, name))
        print(f"  {number:>2}  {name:<15} {path:<33} {exercise.page:<30} "
              f"{', '.join(function_name(f) for f in exercise.functions)}")


# ---------------------------------------------------------------------------------------------
# The command line: python exercises/judge.py [NAME] [--track derive] [--exercises-dir DIR].

def parser():
    p = Parser(prog=PROG, description=__doc__.split("\n\n")[0], epilog="exercises, in order: " + ", ".join(EXERCISES),
               formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    p.add_argument("exercise", nargs="?", default="", metavar="NAME",
                   help="the exercise to judge; with no NAME, the exercises in the order to do them")
    p.add_argument("--track", choices=TRACKS, default="guided",
                   help="guided (exercises/guided/) or derive (exercises/derive/)")
    p.add_argument("--exercises-dir", type=Path, metavar="DIR", help="read your files from DIR instead of the track's")
    return p


def main(argv):
    try:
        args = parser().parse_args(argv)
    except SystemExit as stop:  # --help (0) or a mistake in the options (2), said already
        return stop.code
    folder = TRACKS[args.track] if args.exercises_dir is None else args.exercises_dir
    if not args.exercise:
        list_exercises(folder)
        return 0
    if args.exercise not in EXERCISES:
        return complain(f"no exercise {args.exercise!r}; the exercises are: {', '.join(EXERCISES)}", PROG)
    return judge_exercise(args.exercise, folder, args.track)
