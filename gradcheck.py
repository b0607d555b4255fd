"""Check every hand-written backward pass against central differences, in float64.

    python gradcheck.py             every layer on its own, then the whole model
    python gradcheck.py layernorm   one layer (the names: python gradcheck.py --list)

Change a backward in transformer.py, then run this: the table says, layer by layer and tensor by
tensor, whether the gradient your backward computes equals the one measured by nudging each input
up and down. A layer whose backward is wrong fails, and so does every layer built on it (the
block, the model), so the table shows how far a mistake spreads. Exit status 0 when all pass, 1
when one fails, 2 for a mistake in the command line. The tests, and the exercises' judge with your
backward in the project's place (python exercises/judge.py), call the same checks.

Why float64: with h = 1e-5 the central difference is accurate to about h^2 from the truncation
and 1e-16 / h from rounding, so float64 agrees with a right backward to 1e-9 or better on one
layer, and to about 1e-7 on the whole model, where that rounding is compared with gradients
smaller than a layer's; float32 could not tell a right gradient from a slightly wrong one.
"""

import argparse
import functools
import math
import sys

import numpy as np

import transformer as tf

TOLERANCE = 1e-6  # worst relative error allowed; a right backward gets 1e-9 or better, the whole model 1e-7
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
    """{name: tensor_error} of every parameter's gradient in grads; loss() returns the scalar loss from the current
    values of params."""
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

    forward_fn() reads the arrays in `inputs` by reference and returns (out, cache); backward_fn(dout, cache)
    returns {name: gradient} for the same names. The loss checked is f = sum(out * dout), whose gradient on
    the output is dout, so the backward handed dout must give the numerical gradient of f. It gets copies of
    dout and of the cache, so one that writes into them is blamed only in the purity rows, and is then called
    again on the copies it was handed: one that wrote into them gives other gradients the second time.
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
# The command line.

class Parser(argparse.ArgumentParser):
    """A command line whose mistakes are one line and exit status 2, as in the other scripts (the judge's too)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def parser():
    p = Parser(prog="gradcheck.py", description=__doc__.split("\n\n")[0], epilog="layers: " + ", ".join(CHECKS),
               formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    p.add_argument("layers", nargs="*", metavar="LAYER",
                   help="the layers to check (default: all of them, then the model)")
    p.add_argument("--list", action="store_true", help="list the layers")
    return p


def main(argv):
    if "--exercise" in argv:  # the exercises' judge is a command of its own
        return complain("the exercises have a command of their own: "
                        + " ".join(["python exercises/judge.py", *(arg for arg in argv if arg != "--exercise")]))
    try:
        args = parser().parse_args(argv)
    except SystemExit as stop:  # --help (0) or a mistake in the options (2), said already
        return stop.code
    if args.list:
        print("layers: " + ", ".join(CHECKS))
        return 0
    return check_layers(args.layers)


def complain(message, prog="gradcheck.py"):
    """A mistake in the command line, in one line: exit status 2."""
    print(f"{prog}: {message}", file=sys.stderr)
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
