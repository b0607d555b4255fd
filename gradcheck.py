"""Check every hand-written backward pass against central differences, in float64; and judge the exercises.

    python gradcheck.py                       every layer on its own, then the whole model
    python gradcheck.py layernorm             one layer (the names: python gradcheck.py --list)
    python gradcheck.py --exercise            the fifteen exercises, in the order to do them
    python gradcheck.py --exercise layernorm  your layernorm_forward and layernorm_backward, in exercises/layernorm.py
    python gradcheck.py --exercise layernorm --track derive   the same, in exercises/derive/layernorm.py

Change a backward in transformer.py, then run this: the table says, layer by layer and tensor by
tensor, whether the gradient your backward computes equals the one measured by nudging each input
up and down. A layer whose backward is wrong fails, and so does every layer built on it (the
block, the model), so the table shows how far a mistake spreads. Exit status 0 when all pass, 1
when one fails, 2 for a mistake in the command line. The tests call the same checks.

Or write the project's functions yourself without touching its files (docs/exercises.md): the whole
model, forward and backward, then the learning-rate schedule, clipping, AdamW's step, sampling and the
plain BPE, on one of two tracks: exercises/NAME.py, the guided track, holds each function's signature,
its equations and hints; exercises/derive/NAME.py, the derive track (--track derive), only the
signature, the shapes and the page to read. --exercise NAME judges the functions you have written in
that file (--exercises-dir DIR reads DIR/NAME.py instead), each the way its kind is judged: a backward
by central differences; a forward against the project's on random inputs, its cache through the
project's backward, and the page's worked example, your numbers beside the page's; the others by their
pages' examples, against the project's function and by the properties a likely mistake breaks. Where
the numbers show what kind of mistake it is, the table adds a hint under the row; an error raised in
your code shows your lines.

Why float64: with h = 1e-5 the central difference is accurate to about h^2 from the truncation
and 1e-16 / h from rounding, so float64 agrees with a right backward to 1e-9 or better on one
layer, and to about 1e-7 on the whole model, where that rounding is compared with gradients
smaller than a layer's; float32 could not tell a right gradient from a slightly wrong one.
"""

import argparse
import ast
import contextlib
import functools
import importlib
import importlib.util
import inspect
import math
import sys
import textwrap
import traceback
from pathlib import Path

import numpy as np

import transformer as tf

TOLERANCE = 1e-6  # worst relative error allowed; a right backward gets 1e-9 or better, the whole model 1e-7
REPO = Path(__file__).resolve().parent  # where exercises/ is, wherever this is run from
ZERO = 1e-9  # a numerical gradient below this everywhere is 0 up to rounding; the backward's must be 0 too


def numerical_grad(f, x, h=1e-5):
    """df/dx for every entry of x: (f(x + h e_i) - f(x - h e_i)) / 2h.

    f takes no arguments and returns a scalar computed from x, which it reads by reference: each
    entry of x is perturbed in place and restored before the next one.
    Example: x = np.array([3.0]), f = lambda: (x * x).sum() -> array([6.])
    """
    assert x.dtype == np.float64, f"check gradients in float64, got {x.dtype}: float32 rounding (1e-7) " \
                                  f"divided by h hides a wrong gradient"
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        original = x[index]
        x[index] = original + h
        f_plus = f()
        x[index] = original - h
        f_minus = f()
        x[index] = original
        grad[index] = (f_plus - f_minus) / (2 * h)
    return grad


def relative_error(analytic, numeric):
    """The largest gap between two gradients of one tensor, relative to the tensor's largest entry.

    Relative to the largest entry, not entry by entry, because an entry that is almost 0 would
    turn the rounding noise of the central difference into a huge relative error.
    Example: analytic = [1.0, 0.0], numeric = [1.0, 1e-9] -> 1e-9
    """
    scale = max(np.max(np.abs(analytic)), np.max(np.abs(numeric)))
    return 0.0 if scale == 0 else float(np.max(np.abs(analytic - numeric)) / scale)


def gradient_error(analytic, numeric):
    """relative_error, except where the true gradient is 0: then any non-zero entry is the error.

    A gradient that is exactly 0 (the key bias: softmax ignores a constant added to a row) measures
    as rounding noise of about 1e-11, and noise relative to noise says nothing; so where the
    numerical gradient is below ZERO everywhere, the error is the backward's largest entry.
    Example: analytic = [0.0, 1e-17], numeric = [3e-12, -1e-12] -> 1e-17
    """
    if np.max(np.abs(numeric)) < ZERO:
        return float(np.max(np.abs(analytic)))
    return relative_error(analytic, numeric)


class Error(float):
    """A tensor's error, with what its numbers show of the likely mistake: `hint`, a sentence, or None;
    and `beside`, lines that set the learner's numbers beside the expected ones, shown when it fails.

    Example: Error(0.83, "a constant factor") < TOLERANCE -> False; Error(1e-11).hint -> None
    """

    def __new__(cls, error, hint=None, beside=()):
        measured = super().__new__(cls, error)
        measured.hint, measured.beside = hint, list(beside)
        return measured


class WrongShape(Error):
    """The error of a gradient that is missing or not the shape of its tensor: infinite, so it fails
    wherever an error is compared, and it keeps both shapes for the table to say.

    Example: WrongShape((4, 5), (5,)) > TOLERANCE -> True, str() -> 'shape (4, 5), expected (5,)'
    """

    def __new__(cls, shape, expected):  # shape None: the backward gave no gradient for the tensor
        error = super().__new__(cls, math.inf, shape_hint(shape, expected))
        error.shape, error.expected = shape, expected
        return error

    def __str__(self):
        if self.shape is None:
            return f"missing, expected shape {self.expected}"
        return f"shape {self.shape}, expected {self.expected}"


def shape_hint(shape, expected):
    """What a wrong shape says of the mistake. Example: (5, 4) for (4, 5) -> a transpose; (3, 5) for (5,) -> a sum"""
    if shape is None or shape == expected:
        return None
    if len(shape) == len(expected) > 1 and shape == expected[::-1]:
        return f"{shape} is {expected} turned round: a transpose missing, or a product's operands swapped"
    if len(shape) > len(expected) and shape[len(shape) - len(expected):] == expected:
        leading = shape[: len(shape) - len(expected)]
        return f"{shape} keeps the leading axes {leading}: sum over every row, every leading axis"
    return None


def factor_name(c):
    """A constant factor as a learner would recognise it. Example: 1.4142 -> 'about √2', 6.0 -> '6'"""
    for k in range(2, 65):
        for value, name in ((k, f"{k}"), (1 / k, f"1/{k}"), (math.sqrt(k), f"√{k}"), (1 / math.sqrt(k), f"1/√{k}")):
            if math.isclose(abs(c), value, rel_tol=1e-6):
                return ("-" if c < 0 else "") + name
    return f"{c:.4g}"


def value_hint(analytic, numeric):
    """What a wrong gradient's numbers say of the mistake, or None: rows that should sum to 0 and do not, a
    constant factor, or a few rows wrong while the rest agree. Each rule holds for every entry, so a right
    backward, or a mistake of another kind, gets none."""
    scale = max(np.max(np.abs(analytic)), np.max(np.abs(numeric)))
    if scale == 0:
        return None
    close = lambda a, b: np.max(np.abs(a - b)) <= 1e-6 * scale  # noqa: E731  the rounding of the numerical gradient
    if close(numeric, 0):
        return "the measured gradient is 0 in every entry (the loss ignores this tensor); yours is not"
    if numeric.ndim > 1 and close(numeric.sum(axis=-1), 0) and not close(analytic.sum(axis=-1), 0):
        worst = np.max(np.abs(analytic.sum(axis=-1)))
        return (f"each row of the measured gradient sums to 0, yours do not (up to {worst:.2g}): "
                f"a term shared by the row is missing")
    c = float((analytic * numeric).sum() / (numeric * numeric).sum())
    if not math.isclose(c, 1, rel_tol=1e-4) and close(analytic, c * numeric):
        return (f"yours is {factor_name(c)} times the measured gradient in every entry: "
                f"a constant factor is missing or extra")
    if numeric.ndim == 2:
        wrong = [i for i in range(len(numeric)) if not close(analytic[i], numeric[i])]
        if 0 < len(wrong) < len(numeric):
            rows = ", ".join(map(str, wrong))
            return f"only rows {rows} are wrong, the other rows agree: what do those rows have in common?"
    return None


def tensor_error(gradient, f, x, h=1e-5):
    """The error of a backward's gradient for x: gradient_error against the numerical gradient of f,
    with a hint where it fails (value_hint), or WrongShape, before anything is compared, where it is
    missing (None) or not x's shape."""
    shape = None if gradient is None else np.shape(gradient)
    if shape != x.shape:
        return WrongShape(shape, x.shape)
    numeric = numerical_grad(f, x, h)
    error = gradient_error(gradient, numeric)
    return Error(error, None if error < TOLERANCE else value_hint(np.asarray(gradient, dtype=np.float64), numeric))


def check_params(loss, params, grads, h=1e-5):
    """The error of every parameter's gradient: {name: tensor_error}.

    loss() returns the scalar loss from the current values of params; grads are the analytic
    gradients to check, with the same keys.
    """
    return {name: tensor_error(grads.get(name), loss, params[name], h) for name in params}


def arrays_in(value):
    """Every array in a cache (nested tuples, lists and dicts), in a fixed order."""
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        return [array for item in value for array in arrays_in(item)]
    return []


def copied(value):
    """A cache (nested tuples, named tuples, lists and dicts of arrays) with every array copied."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        return {key: copied(item) for key, item in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple, such as AttentionCache
        return type(value)(*(copied(item) for item in value))
    if isinstance(value, (tuple, list)):
        return type(value)(copied(item) for item in value)
    return value


def layer_errors(forward_fn, backward_fn, inputs, rng):
    """Check one layer's backward for every array in `inputs`: {name: error}, plus "(cache)" and
    "(repeat)" where the backward is not a pure function of its arguments.

    forward_fn() reads the arrays in `inputs` by reference and returns (out, cache);
    backward_fn(dout, cache) returns {name: gradient} for the same names. The loss checked is
    f = sum(out * dout), whose gradient on the output is dout, so the backward handed dout must
    give the numerical gradient of f. The backward gets copies of dout and of the cache, so one that
    writes into them is blamed only in the purity rows: the loss is measured with the dout it was
    handed, and the inputs it nudges are the forward's own. It is then called again on the copies it
    was handed: a backward that writes into its cache or its dout gives other gradients the second time.
    """
    out, cache = forward_fn()
    dout = rng.normal(size=np.shape(out))
    handed = (copied(dout), copied(cache))
    analytic = copied(backward_fn(*handed))  # copied: a gradient that is a view of dout stays what it was
    f = lambda: float((forward_fn()[0] * dout).sum())
    errors = {name: tensor_error(analytic.get(name), f, x) for name, x in inputs.items()}
    if not all(np.array_equal(old, new) for old, new in zip(arrays_in((dout, cache)), arrays_in(handed))):
        errors["(cache)"] = math.inf  # the backward wrote into its cache or its dout
    again = backward_fn(*handed)
    if not all(np.array_equal(analytic[name], again.get(name)) for name in analytic):
        errors["(repeat)"] = math.inf  # a second call on the same cache gave other gradients
    return errors


# ---------------------------------------------------------------------------------------------
# The layers, each on small random inputs: shapes small enough to nudge every entry in a blink.
# Each check_* takes the backward it judges: the project's, which check() hands it, or another.

# the model of these checks: T = 5 on a table of 8 positions, so rows 5..7 of pos_emb are never read
TINY = tf.ModelConfig(vocab_size=7, context_len=8, emb_dim=4, num_heads=2, num_layers=2, ff_dim=8, ln_eps=1e-5)


def block_inputs(rng):
    """Random parameters of one block of TINY under their short names, gains and biases too."""
    shapes = tf.param_shapes(TINY)
    return {key: rng.normal(scale=0.5, size=shapes[f"block0.{key}"]) for key in tf.BLOCK_KEYS}


def input_and_params(backward):
    """A backward that returns (dx, {short name: gradient}), as a block's layers do, turned into one
    that returns a single dict, dx under "x": the form layer_errors compares."""
    def gradients(dout, cache):
        dx, grads = backward(dout, cache)
        return {"x": dx, **grads}
    return gradients


def check_embedding(rng, backward):
    params = {"tok_emb": rng.normal(size=(4, 3)), "pos_emb": rng.normal(size=(6, 3))}
    ids = np.array([[2, 0, 2, 1], [3, 3, 0, 2]])  # repeated ids: np.add.at must add every row

    def gradients(dX0, batch):
        grads = {name: np.zeros_like(table) for name, table in params.items()}
        backward(dX0, batch, grads)
        return grads
    return layer_errors(lambda: (tf.embed_forward(params, ids), ids), gradients, params, rng)


def check_linear(rng, backward):
    x, W, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 5)), rng.normal(size=5)
    return layer_errors(lambda: tf.linear_forward(x, W, b),
                        lambda d, c: dict(zip("xWb", backward(d, c))), {"x": x, "W": W, "b": b}, rng)


def check_layernorm(rng, backward):
    x, gain, shift = rng.normal(size=(2, 3, 6)), rng.normal(size=6), rng.normal(size=6)
    return layer_errors(lambda: tf.layernorm_forward(x, gain, shift, 1e-5),
                        lambda d, c: dict(zip(("x", "gain", "shift"), backward(d, c))),
                        {"x": x, "gain": gain, "shift": shift}, rng)


def check_softmax(rng, backward):
    x = rng.normal(size=(2, 3, 5))
    return layer_errors(lambda: (tf.softmax(x),) * 2, lambda d, probs: {"x": backward(d, probs)}, {"x": x}, rng)


def check_attention(rng, backward):
    p, x = block_inputs(rng), rng.normal(size=(2, 5, 4))
    used = {key: p[key] for key in ("Wq", "bq", "Wk", "bk", "Wv", "bv", "Wo", "bo")}
    return layer_errors(lambda: tf.attention_forward(x, p, num_heads=2), input_and_params(backward),
                        {"x": x, **used}, rng)


def check_gelu(rng, backward):
    x = rng.normal(scale=2.0, size=(3, 7))
    return layer_errors(lambda: tf.gelu_forward(x), lambda d, c: {"x": backward(d, c)}, {"x": x}, rng)


def check_mlp(rng, backward):
    p, x = block_inputs(rng), rng.normal(size=(2, 3, 4))
    return layer_errors(lambda: tf.mlp_forward(x, p), input_and_params(backward),
                        {"x": x, **{key: p[key] for key in ("W1", "b1", "W2", "b2")}}, rng)


def check_block(rng, backward):
    p, x = block_inputs(rng), rng.normal(size=(2, 5, 4))
    return layer_errors(lambda: tf.block_forward(x, p, TINY), input_and_params(backward), {"x": x, **p}, rng)


def check_loss(rng, backward):
    logits, targets = rng.normal(size=(6, 5)), np.array([0, 4, 4, 1, 2, 3])
    # the loss is a scalar: f = loss * dout with dout a number, so the backward's dlogits is scaled by it
    return layer_errors(lambda: tf.cross_entropy_forward(logits, targets),
                        lambda d, c: {"logits": backward(c) * d}, {"logits": logits}, rng)


def tiny_model(cfg=TINY):
    """A model small enough to nudge every entry of every parameter: (cfg, params, ids, targets).

    float64 parameters with every tensor random, gains and biases too, so no path hides at 0 or 1;
    ids and targets of shape (B, T) = (3, 5), with id 3 repeated so np.add.at has work to do.
    """
    rng = np.random.default_rng(0)
    params = tf.init_params(cfg, rng)
    for tensor in params.values():
        tensor += rng.normal(0.0, 0.3, tensor.shape)
    rng = np.random.default_rng(1)
    ids = rng.integers(0, cfg.vocab_size, size=(3, 5))
    ids[0, :2] = 3
    targets = rng.integers(0, cfg.vocab_size, size=(3, 5))
    return cfg, params, ids, targets


def check_model(rng, loss_and_grads, cfg=TINY):
    cfg, params, ids, targets = tiny_model(cfg)
    _, grads = loss_and_grads(params, ids, targets, cfg)
    return check_params(lambda: loss_and_grads(params, ids, targets, cfg)[0], params, grads)


# Today's pieces, each on its own, then a block and the whole model with every option on together: RMSNorm, RoPE,
# SwiGLU, kv_heads < num_heads, QK-norm, head_dim != C / nh, no bias and a tied head.
TINY_MODERN = tf.ModelConfig(vocab_size=7, context_len=8, emb_dim=4, num_heads=2, num_layers=2, ff_dim=8, ln_eps=1e-5,
                             norm="rmsnorm", positions="rope", mlp="swiglu", kv_heads=1, qk_norm=True, bias=False,
                             tied_head=True, head_dim=4)
# the pieces on their own: with biases, which are checked too, and 2 key/value heads each serving 2 query heads
GROUPED = tf.ModelConfig(**{**vars(TINY_MODERN), "num_heads": 4, "kv_heads": 2, "bias": True})


def modern_block_inputs(rng, cfg):
    """Random parameters of one block of cfg under their short names."""
    shapes = tf.param_shapes(cfg)
    return {name[len("block0."):]: rng.normal(scale=0.5, size=shape) for name, shape in shapes.items()
            if name.startswith("block0.")}


def check_rmsnorm(rng, backward):
    x, gain = rng.normal(size=(2, 3, 6)), rng.normal(size=6)
    return layer_errors(lambda: tf.rmsnorm_forward(x, gain, 1e-5),
                        lambda d, c: dict(zip(("x", "gain"), backward(d, c))), {"x": x, "gain": gain}, rng)


def check_rope(rng, backward):
    x, angles = rng.normal(size=(2, 3, 5, 4)), tf.rope_angles(2, 5, 4, 10.0)  # positions 2..6 of heads of 4
    return layer_errors(lambda: tf.rope_forward(x, np.cos(angles), np.sin(angles)), lambda d, c: {"x": backward(d, c)},
                        {"x": x}, rng)


def check_repeat_kv(rng, backward):
    kv = rng.normal(size=(2, 2, 5, 3))  # 2 key/value heads, each for 3 query heads
    return layer_errors(lambda: (tf.repeat_kv_forward(kv, 3), 3), lambda d, c: {"kv": backward(d, c)}, {"kv": kv}, rng)


def check_gqa(rng, backward):
    p, x = modern_block_inputs(rng, GROUPED), rng.normal(size=(2, 5, 4))
    used = {key: p[key] for key in ("Wq", "bq", "Wk", "bk", "Wv", "bv", "rmsq_gain", "rmsk_gain", "Wo", "bo")}
    return layer_errors(lambda: tf.gqa_attention_forward(x, p, GROUPED), input_and_params(backward),
                        {"x": x, **used}, rng)


def check_swiglu(rng, backward):
    p, x = modern_block_inputs(rng, GROUPED), rng.normal(size=(2, 3, 4))
    used = {key: p[key] for key in ("W_gate", "b_gate", "W_up", "b_up", "W_down", "b_down")}
    return layer_errors(lambda: tf.swiglu_forward(x, p), input_and_params(backward), {"x": x, **used}, rng)


def check_modern_block(rng, backward):
    p, x = modern_block_inputs(rng, TINY_MODERN), rng.normal(size=(2, 5, 4))
    return layer_errors(lambda: tf.modern_block_forward(x, {**tf.NO_BIAS, **p}, TINY_MODERN),
                        input_and_params(backward), {"x": x, **p}, rng)


# name -> (the backward it judges, the check); in the order a learner meets them, the model last
CHECKS = {
    "embedding": ("embed_backward", check_embedding),
    "linear": ("linear_backward", check_linear),
    "layernorm": ("layernorm_backward", check_layernorm),
    "softmax": ("softmax_backward", check_softmax),
    "attention": ("attention_backward", check_attention),
    "gelu": ("gelu_backward", check_gelu),
    "mlp": ("mlp_backward", check_mlp),
    "block": ("block_backward", check_block),
    "loss": ("cross_entropy_backward", check_loss),
    "model": ("loss_and_grads", check_model),
    "rmsnorm": ("rmsnorm_backward", check_rmsnorm),
    "rope": ("rope_backward", check_rope),
    "repeat_kv": ("repeat_kv_backward", check_repeat_kv),
    "gqa": ("gqa_attention_backward", check_gqa),
    "swiglu": ("swiglu_backward", check_swiglu),
    "mod_block": ("modern_block_backward", check_modern_block),
    "mod_model": ("loss_and_grads", functools.partial(check_model, cfg=TINY_MODERN)),
}


def check(layer, seed=3, backward=None):
    """{tensor: error} for one layer of CHECKS, on inputs drawn from `seed`: the project's backward,
    looked up when called, or `backward` in its place (a learner's, from exercises/)."""
    name, check_fn = CHECKS[layer]
    return check_fn(np.random.default_rng(seed), getattr(tf, name) if backward is None else backward)


# ---------------------------------------------------------------------------------------------
# The exercises: the learner writes the project's functions in files of their own, and each kind of
# function is judged its own way. A backward: by central differences, the check above. A forward: against
# the project's on random inputs, its cache handed to the project's backward, and the page's worked example.
# The schedule, clipping, AdamW, sampling and the BPE: by their pages' worked examples, against the project's
# function, and by the properties that a likely mistake breaks.

# exercise -> the project's functions the learner writes in exercises/NAME.py (and exercises/derive/NAME.py), as
# "module.name" ("module.Class.name" for a method), in the order to do them: each uses only what comes before it
EXERCISE_FUNCTIONS = {
    "embedding": ("transformer.embed_forward", "transformer.embed_backward"),
    "linear": ("transformer.linear_forward", "transformer.linear_backward"),
    "layernorm": ("transformer.layernorm_forward", "transformer.layernorm_backward"),
    "softmax": ("transformer.softmax", "transformer.softmax_backward"),
    "attention": ("transformer.attention_forward", "transformer.attention_backward"),
    "gelu": ("transformer.gelu_forward", "transformer.gelu_backward"),
    "mlp": ("transformer.mlp_forward", "transformer.mlp_backward"),
    "block": ("transformer.block_forward", "transformer.block_backward"),
    "cross_entropy": ("transformer.cross_entropy_forward", "transformer.cross_entropy_backward"),
    "model": ("transformer.forward", "transformer.loss_and_grads"),
    "lr_schedule": ("train.lr_schedule",),
    "clip_grad_norm": ("train.clip_grad_norm",),
    "adamw": ("train.Adam.step",),
    "sampling": ("generate.filtered_probs",),
    "bpe": ("tokenizer.merge_pair", "tokenizer.train_plain"),
}

# exercise -> the page that derives what it asks for; each stub names it too
EXERCISE_PAGES = {
    "embedding": "docs/01-embeddings.md", "linear": "docs/02-layernorm.md", "layernorm": "docs/02-layernorm.md",
    "softmax": "docs/03-attention.md", "attention": "docs/03-attention-backward.md", "gelu": "docs/04-mlp.md",
    "mlp": "docs/04-mlp.md", "block": "docs/05-block.md", "cross_entropy": "docs/06-output.md",
    "model": "docs/07-model.md", "lr_schedule": "docs/08-training.md", "clip_grad_norm": "docs/08-training.md",
    "adamw": "docs/08-training.md", "sampling": "docs/10-sampling.md", "bpe": "docs/09-tokenizer.md",
}

# exercise -> the layer of CHECKS that judges its backward by central differences
BACKWARD_CHECKS = {"embedding": "embedding", "linear": "linear", "layernorm": "layernorm", "softmax": "softmax",
                   "attention": "attention", "gelu": "gelu", "mlp": "mlp", "block": "block",
                   "cross_entropy": "loss", "model": "model"}


def function_name(qualified):
    """The name a learner writes. Example: "train.Adam.step" -> "Adam.step", "transformer.forward" -> "forward" """
    return qualified.split(".", 1)[1]


def projects_function(qualified):
    """The project's own function. Example: "train.Adam.step" -> train.Adam.step (a plain function)"""
    module, *names = qualified.split(".")
    value = importlib.import_module(module)
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


def backward_errors(name, function, yours):
    """({tensor: Error}, notes) of a backward by central differences: where x fails in a row-wise layer whose
    rows mix, the hint says so; where any row fails, the notes run the page's worked example through yours and
    set it beside the page's."""
    layer = BACKWARD_CHECKS[name]
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
    project = importlib.import_module("train").lr_schedule
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
    project = importlib.import_module("train").clip_grad_norm
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
    train = importlib.import_module("train")
    params = tf.pack(params)
    opt = train.Adam(params, *settings)
    for grads in grads_by_step:
        step(opt, params, tf.pack(grads), lr)
    return {"params": tf.flat_buffer(params).copy(), "m": opt.m.copy(), "v": opt.v.copy(), "t": opt.t}


def adamw_errors(yours):
    project = importlib.import_module("train").Adam.step
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
    generate = importlib.import_module("generate")
    project, Sampling = generate.filtered_probs, generate.Sampling
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
    tokenizer = importlib.import_module("tokenizer")
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
        elif qualified.startswith("transformer.") and function in PAIRED_BACKWARDS:
            parts.append((function, layer_forward_errors(function, yours), []))
        elif qualified.startswith("transformer."):
            parts.append((function, *backward_errors(name, function, yours)))
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
# The table, for the project's layers and for an exercise.

def report(label, function, errors, width=10):
    """The table's rows for one part: label (a layer or an exercise, in a column `width` wide), function, row,
    error, pass or FAIL; under a failing row, its hint and the numbers it sets side by side."""
    rows = []
    for tensor, error in errors.items():
        if tensor == "(cache)":
            shown, outcome = "-", "FAIL: it wrote into its cache or its dout"
        elif tensor == "(repeat)":
            shown, outcome = "-", "FAIL: a second call gave other gradients"
        elif isinstance(error, WrongShape):
            shown, outcome = str(error), "FAIL"
        else:
            shown, outcome = f"{error:.1e}", "pass" if error < TOLERANCE else "FAIL"
        rows.append(f"{label:<{width}} {function:<23} {tensor:<17} {shown:>8}  {outcome}")
        if not error < TOLERANCE:
            if getattr(error, "hint", None):
                rows.append(f"{'':<{width}} hint: {error.hint}")
            rows += [f"{'':<{width}} {line}" for line in getattr(error, "beside", [])]
        label = function = ""
    return rows


def table(results, header=f"each backward against central differences, float64, h = 1e-5: pass below {TOLERANCE:.0e}",
          first="layer"):
    """Print the table, a part's rows as soon as its (label, function, errors) comes; return the parts that
    failed, {(label, function): errors}. first: the first column's name, as wide as the widest label."""
    print(header + "\n")
    width = max(10, len(first))
    print(f"{first:<{width}} {'function':<23} {'tensor':<17} {'error':>8}  result")
    failed = {}
    for label, function, errors in results:
        print("\n".join(report(label, function, errors, width)), flush=True)
        if not all(error < TOLERANCE for error in errors.values()):
            failed[label, function] = errors
    return failed


def what_failed(label, function, errors):
    """The lines that say what one part got wrong, row by row."""
    part = f"{function} ({label})"
    lines = []
    for tensor, error in errors.items():
        if isinstance(error, WrongShape) and error.shape is None:
            lines.append(f"  {part} gives no gradient for {tensor}")
        elif isinstance(error, WrongShape):
            lines.append(f"  {part} gives {tensor} a gradient of the wrong shape: {error.shape}, "
                         f"expected {error.expected}")
    wrong = [tensor for tensor, error in errors.items()
             if not tensor.startswith("(") and not isinstance(error, WrongShape) and not error < TOLERANCE]
    if wrong:
        gradients = function.endswith("_backward") or function == "loss_and_grads"
        lines.append(f"  {part} {'gives a wrong gradient for' if gradients else 'is wrong on'} {', '.join(wrong)}")
    if "(cache)" in errors or "(repeat)" in errors:
        lines.append(f"  {part} is not a pure function of its arguments: it writes into its cache or its "
                     f"dout, so a second call gives other gradients")
    return lines


# ---------------------------------------------------------------------------------------------
# The learner's files.

# the two tracks of exercises: the guided stubs (signature, equations, hints) and the derive stubs (signature,
# shapes and the page to read); --track picks one, guided by default
TRACKS = {"guided": REPO / "exercises", "derive": REPO / "exercises" / "derive"}


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
    """Judge exercise `name`, the learner's functions in folder/NAME.py, each the way its kind is judged, and
    print the table. Exit status 0 right, 1 wrong or not written yet, 2 a missing file or function."""
    path = Path(folder) / f"{name}.py"
    if not path.is_file():
        stub = relative_to_repo(TRACKS[track] / path.name)
        print(f"gradcheck.py: there is no {relative_to_repo(path)}; `git checkout {stub}` brings back its stub",
              file=sys.stderr)
        return 2
    try:
        module = learners_module(path)
    except Exception as error:  # noqa: BLE001  the learner's file does not run: show its lines
        print(learners_traceback(error, folder), end="", file=sys.stderr)
        return 1
    yours = {}
    for qualified in EXERCISE_FUNCTIONS[name]:
        value = module
        for part in function_name(qualified).split("."):
            value = getattr(value, part, None)
        if value is None:
            what = function_name(qualified)
            place = f"`class {what.split('.')[0]}:` with `def {what.split('.')[1]}`" if "." in what else f"`def {what}`"
            print(f"gradcheck.py: {relative_to_repo(path)} defines no {what}: write {place} with the stub's signature",
                  file=sys.stderr)
            return 2
        yours[qualified] = value
    used = {q for functions in EXERCISE_FUNCTIONS.values() for q in functions if q.startswith("transformer.")}
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
              f"project's own in {EXERCISE_FUNCTIONS[name][0].split('.')[0]}.py")
        return 0
    print("\n" + "\n".join(line for (label, function), errors in failed.items()
                           for line in what_failed(label, function, errors)), file=sys.stderr)
    print(f"fix {relative_to_repo(path)}, then run this again", file=sys.stderr)
    return 1


# ---------------------------------------------------------------------------------------------
# The command line.

class Parser(argparse.ArgumentParser):
    """gradcheck.py's options: a mistake in them is one line and exit status 2, as in the other scripts."""

    def error(self, message):
        self.exit(2, f"gradcheck.py: {message} (see --help)\n")


def parser():
    p = Parser(prog="gradcheck.py", description=__doc__.split("\n\n")[0],
               epilog="layers: " + ", ".join(CHECKS) + "\nexercises, in order: " + ", ".join(EXERCISE_FUNCTIONS),
               formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    p.add_argument("layers", nargs="*", metavar="LAYER",
                   help="the layers to check (default: all of them, then the model)")
    p.add_argument("--list", action="store_true", help="list the layers and the exercises")
    p.add_argument("--exercise", nargs="?", const="", metavar="NAME",
                   help="judge your exercise NAME; with no NAME, list the exercises in the order to do them")
    p.add_argument("--track", choices=TRACKS, default="guided",
                   help="guided (exercises/) or derive (exercises/derive/)")
    p.add_argument("--exercises-dir", type=Path, metavar="DIR", help="read your files from DIR instead of the track's")
    return p


def list_exercises(folder):
    """Print the exercises in the order to do them, each with its file and the page it needs."""
    print("the exercises, in the order to do them (docs/exercises.md): write the body of each function in\n"
          "its file, then run python gradcheck.py --exercise NAME. Two tracks, the same fifteen exercises:\n"
          f"guided (the default): {relative_to_repo(TRACKS['guided'])}/NAME.py gives the equations and hints\n"
          f"derive (--track derive): {relative_to_repo(TRACKS['derive'])}/NAME.py gives only the shapes and the "
          f"page to read\n")
    for number, (name, functions) in enumerate(EXERCISE_FUNCTIONS.items(), 1):
        path = relative_to_repo(folder / f"{name}.py")
        print(f"  {number:>2}  {name:<15} {path:<30} {EXERCISE_PAGES[name]:<30} "
              f"{', '.join(function_name(f) for f in functions)}")


def main(argv):
    try:
        args = parser().parse_args(argv)
    except SystemExit as stop:  # --help (0) or a mistake in the options (2), said already
        return stop.code
    if args.list:
        print("layers: " + ", ".join(CHECKS) + "\nexercises: " + ", ".join(EXERCISE_FUNCTIONS)
              + "\ntracks of the exercises: " + ", ".join(TRACKS))
        return 0
    if args.exercise is None:
        if args.exercises_dir is not None or "--track" in argv:
            return complain("--track and --exercises-dir go with --exercise")
        return check_layers(args.layers)
    if args.layers:
        return complain(f"--exercise judges one exercise; it takes no layer ({', '.join(args.layers)})")
    folder = TRACKS[args.track] if args.exercises_dir is None else args.exercises_dir
    if not args.exercise:
        list_exercises(folder)
        return 0
    if args.exercise not in EXERCISE_FUNCTIONS:
        return complain(f"no exercise {args.exercise!r}; the exercises are: {', '.join(EXERCISE_FUNCTIONS)}")
    return judge_exercise(args.exercise, folder, args.track)


def complain(message):
    """A mistake in the command line, in one line: exit status 2."""
    print(f"gradcheck.py: {message}", file=sys.stderr)
    return 2


def check_layers(layers):
    """The project's own backwards, the given layers or all of them: exit status 0 when every one passes."""
    unknown = [name for name in layers if name not in CHECKS]
    if unknown:
        return complain(f"no layer {unknown[0]!r}; the layers are: {', '.join(CHECKS)}")
    layers = layers or list(CHECKS)
    failed = table((layer, CHECKS[layer][0], check(layer)) for layer in layers)
    if not failed:
        print(f"\nall {len(layers)} checked: every gradient agrees with central differences")
        return 0
    print(f"\n{len(failed)} of {len(layers)} failed:", file=sys.stderr)
    for (layer, function), errors in failed.items():
        print("\n".join(what_failed(layer, function, errors)), file=sys.stderr)
    print("a layer built on a wrong one fails too: fix the first that fails, then run this again", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
