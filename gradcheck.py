"""Check every hand-written backward pass against central differences, in float64.

    python gradcheck.py                       every layer on its own, then the whole model
    python gradcheck.py layernorm             one layer (the names: python gradcheck.py --list)
    python gradcheck.py --exercise layernorm  your layernorm_backward, in exercises/layernorm.py
    python gradcheck.py --exercise layernorm --track derive   the same, in exercises/derive/layernorm.py
    python gradcheck.py --exercise            the exercises, in the order to do them

Change a backward in transformer.py, then run this: the table says, layer by layer and tensor by
tensor, whether the gradient your backward computes equals the one measured by nudging each input
up and down. A layer whose backward is wrong fails, and so does every layer built on it (the
block, the model), so the table shows how far a mistake spreads. Exit status 0 when all pass, 1
when one fails. The tests call the same checks.

Or write a backward of your own without touching transformer.py, on one of two tracks
(docs/exercises.md): exercises/NAME.py, the guided track, holds the function's signature, its
equations and hints; exercises/derive/NAME.py, the derive track (--track derive), only the
signature, the shapes and the page to read. --exercise NAME runs that layer's check with your
function in place of the project's (--exercises-dir DIR reads DIR/NAME.py instead). Where the
numbers show a likely mistake (rows that should sum to 0, a constant factor, a shape turned
round), the table adds a hint under the row.

Why float64: with h = 1e-5 the central difference is accurate to about h^2 from the truncation
and 1e-16 / h from rounding, so float64 agrees with a right backward to 1e-9 or better on one
layer, and to about 1e-7 on the whole model, where that rounding is compared with gradients
smaller than a layer's; float32 could not tell a right gradient from a slightly wrong one.
"""

import importlib.util
import math
import sys
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
    """A tensor's error, with what its numbers show of the likely mistake: `hint`, a sentence, or None.

    Example: Error(0.83, "a constant factor") < TOLERANCE -> False; Error(1e-11).hint -> None
    """

    def __new__(cls, error, hint=None):
        measured = super().__new__(cls, error)
        measured.hint = hint
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


def tiny_model():
    """A model small enough to nudge every entry of every parameter: (cfg, params, ids, targets).

    float64 parameters with every tensor random, gains and biases too, so no path hides at 0 or 1;
    ids and targets of shape (B, T) = (3, 5), with id 3 repeated so np.add.at has work to do.
    """
    cfg = TINY
    rng = np.random.default_rng(0)
    params = tf.init_params(cfg, rng)
    for tensor in params.values():
        tensor += rng.normal(0.0, 0.3, tensor.shape)
    rng = np.random.default_rng(1)
    ids = rng.integers(0, cfg.vocab_size, size=(3, 5))
    ids[0, :2] = 3
    targets = rng.integers(0, cfg.vocab_size, size=(3, 5))
    return cfg, params, ids, targets


def check_model(rng, loss_and_grads):
    cfg, params, ids, targets = tiny_model()
    _, grads = loss_and_grads(params, ids, targets, cfg)
    return check_params(lambda: loss_and_grads(params, ids, targets, cfg)[0], params, grads)


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
}


def check(layer, seed=3, backward=None):
    """{tensor: error} for one layer of CHECKS, on inputs drawn from `seed`: the project's backward,
    looked up when called, or `backward` in its place (a learner's, from exercises/)."""
    name, check_fn = CHECKS[layer]
    return check_fn(np.random.default_rng(seed), getattr(tf, name) if backward is None else backward)


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


# exercise -> the layer of CHECKS that judges it; in the order to do them (docs/exercises.md)
EXERCISES = {"linear": "linear", "gelu": "gelu", "softmax": "softmax", "cross_entropy": "loss",
             "embedding": "embedding", "layernorm": "layernorm", "attention": "attention"}


def report(layer, errors):
    """The table's rows for one layer: layer, backward, tensor, error, pass or FAIL."""
    backward = CHECKS[layer][0]
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
        rows.append(f"{layer:<10} {backward:<23} {tensor:<17} {shown:>8}  {outcome}")
        if not error < TOLERANCE and getattr(error, "hint", None):
            rows.append(f"{'':<10} hint: {error.hint}")
        layer = backward = ""
    return rows


def table(results):
    """Print the table, a layer's rows as soon as its (layer, errors) comes; return the layers that
    failed, {layer: errors}."""
    print(f"each backward against central differences, float64, h = 1e-5: pass below {TOLERANCE:.0e}\n")
    print(f"{'layer':<10} {'backward':<23} {'tensor':<17} {'error':>8}  result")
    failed = {}
    for layer, errors in results:
        print("\n".join(report(layer, errors)), flush=True)
        if not all(error < TOLERANCE for error in errors.values()):
            failed[layer] = errors
    return failed


def what_failed(layer, errors):
    """The lines that say what one layer's backward got wrong, tensor by tensor."""
    backward = f"{CHECKS[layer][0]} ({layer})"
    lines = []
    for tensor, error in errors.items():
        if isinstance(error, WrongShape) and error.shape is None:
            lines.append(f"  {backward} gives no gradient for {tensor}")
        elif isinstance(error, WrongShape):
            lines.append(f"  {backward} gives {tensor} a gradient of the wrong shape: {error.shape}, "
                         f"expected {error.expected}")
    wrong = [tensor for tensor, error in errors.items()
             if not tensor.startswith("(") and not isinstance(error, WrongShape) and not error < TOLERANCE]
    if wrong:
        lines.append(f"  {backward} gives a wrong gradient for {', '.join(wrong)}")
    if "(cache)" in errors or "(repeat)" in errors:
        lines.append(f"  {backward} is not a pure function of its arguments: it writes into its cache or its "
                     f"dout, so a second call gives other gradients")
    return lines


def shown(path):
    """A file's name as the learner knows it: relative to the repository when it lies inside it."""
    return path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else str(path)


def learners_function(path, name):
    """The function `name` of the Python file at path, run afresh (None if it defines none)."""
    spec = importlib.util.spec_from_file_location(f"exercise_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # a mistake in the learner's file keeps its traceback
    return getattr(module, name, None)


def judge_exercise(name, folder, track="guided"):
    """Run the check of exercise `name` with the learner's function, from folder/NAME.py, in place of
    the project's: the same table as `python gradcheck.py LAYER`. Exit status 0 right, 1 not (yet)."""
    layer = EXERCISES[name]
    function, path = CHECKS[layer][0], folder / f"{name}.py"
    if not path.is_file():
        print(f"gradcheck.py: there is no {shown(path)}; `git checkout {shown(TRACKS[track] / path.name)}` brings "
              f"back its stub", file=sys.stderr)
        return 2
    learners = learners_function(path, function)
    if learners is None:
        print(f"gradcheck.py: {shown(path)} defines no {function}: write `def {function}` with the stub's "
              f"signature", file=sys.stderr)
        return 2
    try:
        errors = check(layer, backward=learners)
    except NotImplementedError:
        print(f"{shown(path)}: {function} is not written yet (it raises NotImplementedError): write its body, "
              f"then run this again", file=sys.stderr)
        return 1
    print(f"{function} of {shown(path)}, in place of the project's\n")
    if not table([(layer, errors)]):
        print(f"\n{shown(path)}: {function} is right: every gradient agrees with central differences; "
              f"compare it with the project's {function} in transformer.py")
        return 0
    print("\n" + "\n".join(what_failed(layer, errors)), file=sys.stderr)
    print(f"fix {function} in {shown(path)}, then run this again", file=sys.stderr)
    return 1


# the two tracks of exercises: the guided stubs (signature, equations, hints) and the derive stubs (signature,
# shapes and the page to read, for a learner who derives the backward); --track picks one, guided by default
TRACKS = {"guided": REPO / "exercises", "derive": REPO / "exercises" / "derive"}


def take_option(args, flag):
    """(the value after flag, or None, the other args); ValueError when flag ends the args."""
    if flag not in args:
        return None, args
    at = args.index(flag)
    if at + 1 == len(args):
        raise ValueError(flag)
    return args[at + 1], args[:at] + args[at + 2:]


def exercise_command(args):
    """`--exercise [NAME] [--track guided|derive] [--exercises-dir DIR]`: the list of exercises, or one judged."""
    try:
        track, args = take_option(args, "--track")
        folder, args = take_option(args, "--exercises-dir")
    except ValueError as flag:
        print(f"gradcheck.py: {flag} needs {'a folder' if str(flag) == '--exercises-dir' else 'guided or derive'}",
              file=sys.stderr)
        return 2
    track = track or "guided"
    if track not in TRACKS:
        print(f"gradcheck.py: no track {track!r}; the tracks are: {', '.join(TRACKS)}", file=sys.stderr)
        return 2
    folder = TRACKS[track] if folder is None else Path(folder)
    if not args:
        print("the exercises, in the order to do them (docs/exercises.md): write the body of the function in\n"
              "its file, then run python gradcheck.py --exercise NAME. Two tracks, the same seven functions:\n"
              f"guided (the default): {shown(TRACKS['guided'])}/NAME.py gives the equations and hints\n"
              f"derive (--track derive): {shown(TRACKS['derive'])}/NAME.py gives only the shapes and the page "
              f"to read\n")
        for name, layer in EXERCISES.items():
            print(f"  {name:<14} {CHECKS[layer][0]:<23} {shown(folder / f'{name}.py')}")
        return 0
    if len(args) > 1 or args[0] not in EXERCISES:
        what = "one exercise at a time" if len(args) > 1 else f"no exercise {args[0]!r}"
        print(f"gradcheck.py: {what}; the exercises are: {', '.join(EXERCISES)}", file=sys.stderr)
        return 2
    return judge_exercise(args[0], folder, track)


def main(argv):
    if argv in (["--list"], ["-h"], ["--help"]):
        print(__doc__.strip() + "\n\nlayers: " + ", ".join(CHECKS) + "\nexercises: " + ", ".join(EXERCISES)
              + "\ntracks of the exercises: " + ", ".join(TRACKS))
        return 0
    if argv[:1] == ["--exercise"]:
        return exercise_command(argv[1:])
    unknown = [name for name in argv if name not in CHECKS]
    if unknown and unknown[0].startswith("-"):
        print(f"gradcheck.py: no option {unknown[0]}; it takes a layer's name, --exercise NAME or --help "
              f"(python gradcheck.py --help)", file=sys.stderr)
        return 2
    if unknown:
        print(f"gradcheck.py: no layer {unknown[0]!r}; the layers are: {', '.join(CHECKS)}", file=sys.stderr)
        return 2
    layers = argv or list(CHECKS)
    failed = table((layer, check(layer)) for layer in layers)
    if not failed:
        print(f"\nall {len(layers)} checked: every gradient agrees with central differences")
        return 0
    print(f"\n{len(failed)} of {len(layers)} failed:", file=sys.stderr)
    for layer, errors in failed.items():
        print("\n".join(what_failed(layer, errors)), file=sys.stderr)
    print("a layer built on a wrong one fails too: fix the first that fails, then run this again", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
