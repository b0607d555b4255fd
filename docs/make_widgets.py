"""Write docs/widgets/*.json: every number the pages' interactive examples show, computed here.

    python docs/make_widgets.py                          # from the logits stored in sampling.json
    python docs/make_widgets.py --checkpoint FOLDER      # the sampling example's logits read afresh

Each example lets a learner change one input at a time. This script runs the project's own
functions (transformer.py) on every choice the example offers and writes the results,
so docs/widgets/widgets.js only looks values up and lays them out. The inputs are the hand-picked
ones of the tests that the pages' worked examples use, so a page's table and its example agree.
The sampling example works on the next-token logits of a real checkpoint, stored in its file
with their provenance; without --checkpoint they are read back from that file. The inputs are
imported from the tests, so pytest must be installed (pip install -e ".[test]").

A widget's file:
    title, try          what the example is, and what to try in it and notice
    caption             where its numbers come from (folded at the bottom of the example)
    controls            [{name, label, options: [[value, label], ...], initial, slider, needs}]
    tables              {name: {by: [control names], cases: {"v1|v2": {field: value}}}}
    panels              [{field, title, kind, wrong, compare, row, bars, group}]: what the page shows, in
                        order; consecutive panels of one group ("forward", "backward", ...) are boxed together
Non-finite numbers are written as the strings "inf", "-inf" and "nan", which JSON cannot hold.
"""

import argparse
import json
import math
import subprocess
import sys
from itertools import product
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
WIDGETS = REPO / "docs" / "widgets"
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "docs")]
from engineering import checkpoint  # noqa: E402
import config  # noqa: E402
from engineering.errors import InputError, run_script  # noqa: E402
from test_examples_layers import EPS, identity_attention_params, layernorm_example  # noqa: E402
from test_examples_model import residual_block  # noqa: E402
from test_transformer import DX0, POS_EMB, TOK_EMB  # noqa: E402
from transformer import (GELU_CUBIC, GELU_SCALE, Sampling, attention_backward, attention_forward,  # noqa: E402
                         block_backward, block_forward, block_params, causal_mask, cross_entropy_backward,
                         cross_entropy_forward, embed_backward, embed_forward, filtered_probs, forward, gelu_backward,
                         gelu_forward, init_params, layernorm_backward, layernorm_forward, linear_backward,
                         mlp_backward, mlp_forward, pack, softmax_backward, zeros_like)

DECIMALS = 6  # the pages show 4; two more keep a shown number's last digit right


def number(x):
    """A float as the JSON holds it: rounded to DECIMALS places, or to 7 significant digits beyond
    1e6 and 4 below 1e-3, which the page shows as exponents."""
    x = float(x)
    if not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if abs(x) >= 1e6 or abs(x) < 1e-3:
        return float(f"{x:.{7 if abs(x) >= 1e6 else 4}g}")
    rounded = round(x, DECIMALS)
    return 0 if rounded == 0 else rounded  # no -0.0, and 0 is the shortest


def jsonable(value):
    """Arrays and numbers as nested lists of rounded floats; strings, ints, bools and None as they are."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (str, bool, int)) and not isinstance(value, np.generic):
        return value
    if isinstance(value, np.integer):
        return int(value)
    array = np.asarray(value, dtype=np.float64)
    return number(array) if array.ndim == 0 else [jsonable(v) for v in array]


def control(name, label, values, labels=None, initial=None, slider=False, needs=None):
    """A choice of the example: a select, or a slider over a list of values. needs: [control, n],
    this control counts only while that control's value is above n (ids[2] needs T above 2)."""
    labels = labels or [str(v) for v in values]
    return {"name": name, "label": label, "options": [[str(v), text] for v, text in zip(values, labels)],
            "initial": str(values[0] if initial is None else initial), "slider": slider, "needs": needs}


def key(*values):
    return "|".join(str(v) for v in values)


def panel(field, title, kind="matrix", wrong=False, compare=None, row=None, bars=(), group=""):
    """kind: matrix (a number, a vector or a matrix), heatmap (a matrix of weights in [0, 1], each
    cell shaded by its value), columns (a table of the fields listed in `field`, under the labels
    listed in `title`), note (a sentence), or draw (a button that draws tokens from the columns'
    `bars[-1]` probabilities and `field`, the probability of the tokens not listed). wrong: a naive
    step, drawn in red; compare: a field whose differing entries this panel marks (for columns,
    {naive column: the right one}); row: the control whose value is the row to mark; bars: the
    columns whose probabilities are drawn as bars too; group: the box the panel is shown in."""
    return {"field": field, "title": title, "kind": kind, "wrong": wrong, "compare": compare, "row": row,
            "bars": list(bars), "group": group}


FORWARD, BACKWARD = "forward", "backward"


# --- 01 embeddings ----------------------------------------------------------------------------

def embedding_case(params, ids):
    T = len(ids)
    dX0 = np.array(DX0)[:T]
    grads = zeros_like(params)
    embed_backward(dX0, ids, grads)
    wrong = np.zeros_like(params["tok_emb"])
    wrong[ids] += dX0  # the naive form: NumPy writes each selected row once, so a repeated id keeps its last
    at = [[t for t in range(T) if ids[t] == v] for v in range(len(TOK_EMB))]  # the positions of each id
    return {"selected": [", ".join(f"t = {t}" for t in ts) or "not used" for ts in at],
            "tok_rows": params["tok_emb"][ids], "pos_rows": params["pos_emb"][:T], "X0": embed_forward(params, ids),
            "dX0": dX0, "grad_tok": grads["tok_emb"], "grad_pos": grads["pos_emb"], "wrong": wrong,
            "note": repeated_ids_note(at)}


def repeated_ids_note(at):
    """A sentence for each id at more than one position: what np.add.at sums, and what += keeps.

    Example: at = [[1], [], [0, 2], []] -> "Id 2 is at positions 0 and 2, so row 2 of the token
    gradient is dX0[0] + dX0[2]; the += keeps only dX0[2]."
    """
    notes = [f"Id {v} is at positions {' and '.join(map(str, ts))}, so row {v} of the token gradient is "
             f"{' + '.join(f'dX0[{t}]' for t in ts)}; the += keeps only dX0[{ts[-1]}]."
             for v, ts in enumerate(at) if len(ts) > 1]
    return " ".join(notes) or "No id repeats, so np.add.at and the += agree."


def embeddings():
    params = pack({"tok_emb": np.array(TOK_EMB), "pos_emb": np.array(POS_EMB)})
    V, Tmax = len(TOK_EMB), len(POS_EMB)
    cases = {}
    for T in range(1, Tmax + 1):
        for ids in product(range(V), repeat=T):
            cases[key(T, *ids, *["-"] * (Tmax - T))] = embedding_case(params, np.array(ids))
    return {
        "title": "Pick ids, and follow them both ways",
        "try": "The page starts with id 2 at positions 0 and 2: notice row 2 of grads[\"tok_emb\"] is dX0[0] + dX0[2], "
               "while the naive += (in red) keeps only dX0[2]. Set ids[2] to 1 and the two agree again, since no id "
               "repeats.",
        "caption": "The tables and dX0 are the hand-picked numbers of test_embedding_worked_example and "
                   "test_embedding_backward_sums_repeated_ids, and dX0 is chosen by hand, not computed from a "
                   "loss. Every other number is embed_forward and embed_backward run on your choice. The "
                   "page starts with id 2 repeated, as those tests do.",
        "controls": [control("T", "T", range(1, Tmax + 1), initial=Tmax)] + [
            control(f"id{t}", f"ids[{t}]", range(V), initial=[2, 0, 2][t], needs=["T", t]) for t in range(Tmax)],
        "tables": {"static": {"by": [], "cases": {"": {"ids": list(range(V)), "tok_emb": params["tok_emb"]}}},
                   "choice": {"by": ["T"] + [f"id{t}" for t in range(Tmax)], "cases": cases}},
        "panels": [panel(["ids", "tok_emb", "selected"], ["Id", "Row of tok_emb", "Selected at"], "columns",
                         group=FORWARD),
                   panel("tok_rows", "tok_emb[ids]", group=FORWARD), panel("pos_rows", "pos_emb[:T]", group=FORWARD),
                   panel("X0", "X0 = embed_forward(params, ids), their sum", group=FORWARD),
                   panel("note", "", "note", group=BACKWARD), panel("dX0", "dX0, chosen by hand", group=BACKWARD),
                   panel("grad_tok", 'grads["tok_emb"], np.add.at', group=BACKWARD),
                   panel("grad_pos", 'grads["pos_emb"], rows from T on stay 0', group=BACKWARD),
                   panel("wrong", 'Wrong: grads["tok_emb"][ids] += dX0', wrong=True, compare="grad_tok",
                         group=BACKWARD)],
    }


# --- 02 layer norm ----------------------------------------------------------------------------

LN_ROWS = ("row 0 of the page", "row 1 of the page", "a constant row")
LN_MOVES = range(-6, 7)  # what is added to x[0]


def layernorm_inputs(row, move, gain_choice):
    """(x (1, C), gain, shift, dout (1, C)): the page's rows and dout, or the constant row of the eps
    example with the dout of row 0; x[0] moved by `move`."""
    x, gain, shift = layernorm_example()
    constant = np.full((1, x.shape[1]), 5.0)  # test_layernorm_eps_keeps_a_constant_row_finite
    dout = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])  # test_layernorm_backward_worked_example
    x = (x[row: row + 1] if row < 2 else constant).copy()
    x[0, 0] += move
    return x, gain if gain_choice == "page" else np.ones_like(gain), shift, dout[row % 2: row % 2 + 1]


def layernorm_case(row, move, gain_choice):
    x, gain, shift, dout = layernorm_inputs(row, move, gain_choice)
    out, cache = layernorm_forward(x, gain, shift, EPS)
    xhat, rstd, _ = cache
    dx, dgain, dshift = layernorm_backward(dout, cache)
    with np.errstate(divide="ignore", invalid="ignore"):  # eps = 0 on a constant row divides 0 by 0
        naive_out, (_, naive_rstd, _) = layernorm_forward(x, gain, shift, 0.0)
    return {"x": x[0], "gain": gain, "mean": x[0].mean(), "variance": 1 / rstd[0, 0] ** 2 - EPS,
            "rstd": rstd[0, 0], "xhat": xhat[0], "out": out[0], "dout": dout[0], "dx": dx[0], "dgain": dgain,
            "dshift": dshift, "naive_rstd": naive_rstd[0, 0], "naive_out": naive_out[0],
            "why": dx_note(rstd[0, 0], dx[0])}


def dx_note(rstd, dx):
    """Why dx is as large as it is: rstd multiplies the whole backward.

    Example: a constant row (variance 0) -> "... rstd = 1 / sqrt(0 + eps) = 316.2 ..."
    """
    spread = "This row has no spread: its variance is 0, so rstd = 1 / sqrt(0 + eps)" if rstd > 100 else "rstd"
    large = (" A change of 0.01 in one entry moves xhat by about {:.1f}: layer norm blows the smallest difference "
             "of a flat row up to unit size, so dx is large.".format(0.01 * rstd) if rstd > 100 else "")
    return (f"{spread} = {rstd:.4g}, and dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)) is scaled by it: its "
            f"largest entry is {np.abs(dx).max():.4g}.{large} dx sums to {abs(round(dx.sum(), 4)):g}: adding the same number "
            f"to every entry of x changes nothing.")


def layernorm():
    _, _, shift = layernorm_example()
    cases = {key(r, m, g): layernorm_case(r, m, g) for r in range(3) for m in LN_MOVES for g in ("page", "ones")}
    return {
        "title": "Pick a row, move one number, and follow it both ways",
        "try": "Drag \"add to x[0]\": the mean and variance move, yet xhat keeps mean 0 and variance 1, and dx "
               "always sums to 0. Then pick the constant row and notice dx jump into the hundreds: a row with no "
               f"spread has rstd = 1 / sqrt(eps) = {1 / math.sqrt(EPS):.0f}, and rstd multiplies the whole backward.",
        "caption": "The rows, gain, shift and dout are the hand-picked numbers of "
                   "test_layernorm_forward_worked_example and test_layernorm_backward_worked_example; the "
                   "constant row is test_layernorm_eps_keeps_a_constant_row_finite's, with row 0's dout. Every "
                   "other number is layernorm_forward and layernorm_backward (eps = 1e-5) run on your choice; "
                   "the variance is 1 / rstd^2 - eps.",
        "controls": [control("row", "row", range(3), LN_ROWS),
                     control("move", "add to x[0]", LN_MOVES, [f"{m:+d}" for m in LN_MOVES], initial=0, slider=True),
                     control("gain", "gain", ("page", "ones"), ("the page's [1, 2, 0.5, 1]", "1 everywhere"))],
        "tables": {"static": {"by": [], "cases": {"": {"shift": shift}}},
                   "choice": {"by": ["row", "move", "gain"], "cases": cases}},
        "panels": [panel("x", "x, one row (C = 4)", group=FORWARD), panel("mean", "mean", group=FORWARD),
                   panel("variance", "variance", group=FORWARD),
                   panel("rstd", "rstd = 1 / sqrt(variance + eps)", group=FORWARD),
                   panel("xhat", "xhat = (x - mean) * rstd", group=FORWARD), panel("gain", "gain", group=FORWARD),
                   panel("shift", "shift", group=FORWARD), panel("out", "out = xhat * gain + shift", group=FORWARD),
                   panel("dout", "dout, chosen by hand", group=BACKWARD), panel("dx", "dx", group=BACKWARD),
                   panel("dgain", "dgain, this row", group=BACKWARD), panel("dshift", "dshift, this row", group=BACKWARD),
                   panel("why", "", "note", group=BACKWARD),
                   panel("naive_rstd", "Without eps: rstd = 1 / sqrt(variance)", wrong=True, compare="rstd",
                         group="without eps"),
                   panel("naive_out", "Without eps: out", wrong=True, compare="out", group="without eps")],
    }


# --- 03 attention ----------------------------------------------------------------------------

ATTENTION_SCALES = (0, 0.5, 1, 2, 5, 10, 100, 1000)  # Wq = s I


def attention_rows(x, scale):
    """Each head's and query position's row of the page's example, with Wq = scale * I and dout = 1,
    and each head's whole T x T map of attention weights."""
    p = identity_attention_params()
    p["Wq"] = scale * p["Wq"]
    out, cache = attention_forward(x, p, 2)
    _, q, k, v, attn, out_cache = cache
    B, nh, T, hs = q.shape
    # the first steps of attention_backward, as it writes them, for the dscores it keeps to itself
    dmerged, _, _ = linear_backward(np.ones_like(out), out_cache)
    dheads = dmerged.reshape(B, T, nh, hs).transpose(0, 2, 1, 3)  # (B, T, C) -> (B, nh, T, hs)
    dattn = dheads @ v.swapaxes(-1, -2)
    dscores = softmax_backward(dattn, attn) / math.sqrt(hs)
    _, grads = attention_backward(np.ones_like(out), cache)
    mask = causal_mask(T, T, x.dtype)
    cases, maps = {}, {key(h, scale): {"weights": attn[0, h]} for h in range(nh)}
    for h, t in product(range(nh), range(T)):
        scores = q[0, h, t] @ k[0, h].T / math.sqrt(hs)  # the forward's scores, from its cached q and k
        masked = scores + mask[t]
        with np.errstate(over="ignore", invalid="ignore"):  # the naive softmax: exp(1000) is inf, inf / inf nan
            naive = np.exp(masked) / np.exp(masked).sum()
        cases[key(h, t, scale)] = {
            "q": q[0, h, t], "k": k[0, h, :, 0], "v": v[0, h, :, 0], "scores": scores, "mask": mask[t],
            "masked": masked, "attn": attn[0, h, t], "naive": naive, "out": out[0, t, h], "dattn": dattn[0, h, t],
            "dscores": dscores[0, h, t], "dbq": grads["bq"][h]}
    return cases, maps


def listed(names):
    """Example: ["a"] -> "a"; ["a", "b", "c"] -> "a, b and c" """
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def shown_row(weights):
    """A row of weights as the text names it. Example: [0.5, 0.0, 0.5] -> "[0.5, 0, 0.5]" """
    return "[" + ", ".join(f"{w:.2g}" for w in weights) + "]"


def sharpening(maps, cases, scales):
    """What sliding the scale up does to each row of each head's map, from the maps themselves: a row whose
    scores are all equal keeps its weights at every scale; one with a single largest score ends on it;
    one whose largest scores tie ends split between them. And the first scale at which the naive softmax
    gives nan. Row 0, which sees only itself, is left out."""
    heads, T = len({k.split("|")[0] for k in maps}), len(next(iter(maps.values()))["weights"])
    kinds = {"fixed": [], "single": [], "tied": []}
    for h, t in product(range(heads), range(1, T)):
        rows = [np.array(maps[key(h, s)]["weights"][t][: t + 1]) for s in scales]
        last = rows[-1]
        kind = ("fixed" if all(np.allclose(r, rows[0], atol=1e-9) for r in rows) else
                "single" if np.sum(last > last.max() - 1e-9) == 1 else "tied")
        kinds[kind].append(f"head {h}'s row {t}, {shown_row(last)}")
    naive_nan = min(s for s in scales if any(np.isnan(c["naive"]).any() for k, c in cases.items()
                                             if k.endswith(f"|{s}")))
    parts = [f"a row with one largest score sharpens onto it ({listed(kinds['single'])} at s = {scales[-1]:g})"
             if kinds["single"] else "",
             f"a row whose largest scores tie ends split between them ({listed(kinds['tied'])})"
             if kinds["tied"] else "",
             f"and a row whose scores are all equal keeps its weights at every s ({listed(kinds['fixed'])})"
             if kinds["fixed"] else ""]
    return (f"Slide the scale s up: {'; '.join(part for part in parts if part)}. From s = {naive_nan:g} the naive "
            f"softmax (in red) gives nan while the shifted one stays exact. Notice the map's upper right is always "
            f"0: the causal mask keeps each query from the keys after it.")


def attention():
    x = np.array([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])  # test_attention_worked_example
    cases, maps = {}, {}
    for scale in ATTENTION_SCALES:
        rows, weights = attention_rows(x, scale)
        cases.update(rows)
        maps.update(weights)
    return {
        "title": "Pick a head, a query position and a scale",
        "try": sharpening(maps, cases, ATTENTION_SCALES),
        "caption": "x = [[1, 0], [0, 1], [1, 1]], two heads of one dimension and Wk = Wv = Wo = I: the "
                   "hand-picked example of test_attention_worked_example, whose scores the scale s multiplies "
                   "through Wq = s I. dout = 1 everywhere, as in test_attention_backward_worked_example. Every "
                   "number is attention_forward, causal_mask, softmax_backward and attention_backward run on "
                   "your choice.",
        "controls": [control("head", "head", range(2)), control("t", "query position t", range(3), initial=2),
                     control("scale", "scale s", ATTENTION_SCALES, initial=1, slider=True)],
        "tables": {"choice": {"by": ["head", "t", "scale"], "cases": cases},
                   "maps": {"by": ["head", "scale"], "cases": maps}},
        "panels": [panel("weights", "this head's attention weights, queries down, keys across; row t marked",
                         "heatmap", row="t", group=FORWARD),
                   panel("q", "q_t, this head's query", group=FORWARD),
                   panel("k", "k, this head's keys (one per position)", group=FORWARD),
                   panel("scores", "scores = q_t k^T / sqrt(hs)", group=FORWARD),
                   panel("mask", "causal_mask row t", group=FORWARD), panel("masked", "scores + mask", group=FORWARD),
                   panel("attn", "attention weights: softmax, shifted by the row's largest", group=FORWARD),
                   panel("naive", "Naive: exp(scores) / sum(exp(scores)), no shift", wrong=True, compare="attn",
                         group=FORWARD),
                   panel("v", "v, this head's values", group=FORWARD),
                   panel("out", "this head's output, attn row t @ v", group=FORWARD),
                   panel("dattn", "dattn = dheads @ v^T, row t", group=BACKWARD),
                   panel("dscores", "dscores = softmax_backward(dattn, attn) / sqrt(hs), row t", group=BACKWARD),
                   panel("dbq", 'grads["bq"] of this head: dq summed over every position', group=BACKWARD)],
    }


# --- 04 GELU and the MLP ----------------------------------------------------------------------

GELU_XS = np.linspace(-4.0, 4.0, 33)  # steps of 0.25
MLP = {"W1": np.array([[1.0, -1.0]]), "b1": np.array([0.0, 0.0]), "W2": np.array([[1.0], [1.0]]),
       "b2": np.array([0.5])}  # test_mlp_worked_example


def gelu_case(x):
    y, (_, tanh_u) = gelu_forward(np.array([x]))
    dy_dx = gelu_backward(np.ones(1), (np.array([x]), tanh_u))
    u = GELU_SCALE * (x + GELU_CUBIC * x ** 3)  # the argument of tanh, from the constants gelu_forward uses
    du_dx = GELU_SCALE * (1 + 3 * GELU_CUBIC * x * x)
    through_x = 0.5 * (1 + tanh_u[0])  # y's derivative through its factor x, tanh u held fixed
    out, cache = mlp_forward(np.array([[x]]), MLP)
    (hidden, _), (activated, _) = cache[1], cache[2]  # GELU's input and output, as the forward cached them
    dmlp, grads = mlp_backward(np.array([[1.0]]), cache)
    return {"x": x, "u": u, "tanh_u": tanh_u[0], "y": y[0], "through_x": through_x, "du_dx": du_dx,
            "through_u": dy_dx[0] - through_x, "dy_dx": dy_dx[0], "wrong": through_x, "hidden": hidden[0],
            "activated": activated[0], "mlp_out": out[0, 0], "db1": grads["b1"], "mlp_dx": dmlp[0, 0]}


def gelu_tour(cases):
    """What to notice on the slider, read from its own cases: where GELU is lowest, where the wrong slope is
    off most, and from which x on the true dy/dx stays above 1, and its peak."""
    xs = [c["x"] for c in cases]
    lowest = xs[int(np.argmin([c["y"] for c in cases]))]
    turn = next(i for i in range(1, len(xs)) if cases[i - 1]["dy_dx"] < 0 <= cases[i]["dy_dx"])
    gaps = np.abs([c["dy_dx"] - c["wrong"] for c in cases])
    off_most = [x for x, gap in zip(xs, gaps) if gap > gaps.max() - 1e-9]
    above = next(i for i in range(len(xs)) if all(c["dy_dx"] > 1 for c in cases[i:]))
    peak = int(np.argmax([c["dy_dx"] for c in cases]))
    off = listed([f"{x:g}" for x in off_most])
    return (f"Slide x below 0: GELU(x) dips under 0, lowest at x = {lowest:g} of the slider's steps, and dy/dx "
            f"changes sign between x = {xs[turn - 1]:g} and {xs[turn]:g}, which ReLU's never does. Notice the red "
            f"slope, which forgets that tanh u depends on x, is off most at x = {off}; and the true dy/dx is above 1 "
            f"for every x from {xs[above]:g} on, highest at x = {xs[peak]:g} ({cases[peak]['dy_dx']:.3f}): there GELU "
            f"climbs faster than x itself.")


def mlp():
    cases = {key(f"{x:g}"): gelu_case(float(x)) for x in GELU_XS}
    labels = [f"{x:g}" for x in GELU_XS]
    return {
        "title": "Pick x, and follow GELU both ways",
        "try": gelu_tour(list(cases.values())),
        "caption": "Every number is gelu_forward, gelu_backward, mlp_forward and mlp_backward run at your x; u "
                   "and du/dx are written out from the constants GELU_SCALE and GELU_CUBIC that gelu_forward "
                   "uses. The MLP is the hand-picked one of test_mlp_worked_example (W1 = [[1, -1]], b1 = 0, "
                   "W2 = [[1], [1]], b2 = 0.5) with dout = 1; the page's table is x = 1.",
        "controls": [control("x", "x", labels, initial="1", slider=True)],
        "tables": {"choice": {"by": ["x"], "cases": cases}},
        "panels": [panel("u", "u = sqrt(2/pi) (x + 0.044715 x^3)", group=FORWARD),
                   panel("tanh_u", "tanh u", group=FORWARD), panel("y", "GELU(x) = 0.5 x (1 + tanh u)", group=FORWARD),
                   panel("through_x", "dy/dx through the factor x: 0.5 (1 + tanh u)", group=BACKWARD),
                   panel("du_dx", "du/dx", group=BACKWARD),
                   panel("through_u", "dy/dx through u: 0.5 x (1 - tanh^2 u) du/dx", group=BACKWARD),
                   panel("dy_dx", "dy/dx = gelu_backward(1, cache), the two added", group=BACKWARD),
                   panel("wrong", "Wrong: 0.5 (1 + tanh u) alone, as if tanh u did not depend on x", wrong=True,
                         compare="dy_dx", group=BACKWARD),
                   panel("hidden", "MLP: hidden = x W1 + b1", group="the MLP around it"),
                   panel("activated", "GELU(hidden)", group="the MLP around it"),
                   panel("mlp_out", "MLP output = GELU(hidden) W2 + b2", group="the MLP around it"),
                   panel("db1", "db1 = dhidden = GELU'(hidden), with dout = 1", group="the MLP around it"),
                   panel("mlp_dx", "MLP dx", group="the MLP around it")],
    }


# --- 05 the block -----------------------------------------------------------------------------

BLOCK_X = np.array([[[1.0, 2.0, 3.0], [3.0, 1.0, 2.0], [0.0, 2.0, 0.0]]])  # row 0: the page's x
BLOCK_DOUT = np.array([1.0, 0.0, 0.0])  # the page's dout, at the position the loss reads


def block_weights(mlp_on):
    """The block of the page (Wv = Wo = I, Wq = Wk = 0, so attention averages LN1 of the positions
    it sees), with its MLP off (W2 = 0, as the page) or on (W1 and W2 as init_params drew them)."""
    cfg, p = residual_block()
    if mlp_on:
        drawn = block_params(init_params(cfg, np.random.default_rng(0)), 0)  # the draw residual_block makes
        p["W1"][...], p["W2"][...] = drawn["W1"], drawn["W2"]
    return cfg, p


def block_case(mlp_on, reads):
    cfg, p = block_weights(mlp_on)
    x = BLOCK_X
    dout = np.zeros_like(x)
    dout[0, reads] = BLOCK_DOUT
    h1, ln1_cache = layernorm_forward(x, p["ln1_gain"], p["ln1_shift"], cfg.ln_eps)
    attended, attn_cache = attention_forward(h1, p, cfg.num_heads)
    x_mid = x + attended
    h2, ln2_cache = layernorm_forward(x_mid, p["ln2_gain"], p["ln2_shift"], cfg.ln_eps)
    fed, mlp_cache = mlp_forward(h2, p)
    # backward, the lines of block_backward with each branch kept apart
    mlp_branch = layernorm_backward(mlp_backward(dout, mlp_cache)[0], ln2_cache)[0]
    dx_mid = dout + mlp_branch
    attn_branch = layernorm_backward(attention_backward(dx_mid, attn_cache)[0], ln1_cache)[0]
    out, cache = block_forward(x, p, cfg)
    dx, _ = block_backward(dout, cache)
    return {"x": x[0], "attended": attended[0], "x_mid": x_mid[0], "fed": fed[0], "out": out[0], "dout": dout[0],
            "mlp_branch": mlp_branch[0], "dx_mid": dx_mid[0], "attn_branch": attn_branch[0], "dx": dx[0]}


def block():
    cases = {key(m, t): block_case(m == "on", t) for m in ("off", "on") for t in range(BLOCK_X.shape[1])}
    return {
        "title": "Pick the position the loss reads, and follow the residual stream both ways",
        "try": "Move the position the loss reads: every row of dx after it is 0, because the causal mask keeps later "
               "positions out of its output. Turn the MLP on and notice dx = dx_mid + the attention branch still "
               "holds, the residual path adding dout to each branch's share.",
        "caption": "The block of test_block_residual_worked_example (width 3, one head, Wv = Wo = I, Wq = Wk = 0, "
                   "so attention averages LN1 of the positions each one sees), on three positions whose first "
                   "is the page's x = [1, 2, 3]. The loss reads one position: dout is the page's [1, 0, 0] there "
                   "and 0 elsewhere. The MLP is off (W2 = 0) as on the page, or on with W1 and W2 as init_params "
                   "drew them (seed 0). Every number is the block's layers run on your choice; dx is "
                   "block_backward's, and equals dx_mid plus the attention branch.",
        "controls": [control("reads", "the loss reads position", range(BLOCK_X.shape[1])),
                     control("mlp", "MLP branch", ("off", "on"), ("off, W2 = 0 (the page)", "on, W1 and W2 drawn"))],
        "tables": {"choice": {"by": ["mlp", "reads"], "cases": cases}},
        "panels": [panel("x", "x, the residual stream into the block (T = 3, C = 3)", row="reads", group=FORWARD),
                   panel("attended", "attention branch: attention(LN1(x))", row="reads", group=FORWARD),
                   panel("x_mid", "x_mid = x + attention branch", row="reads", group=FORWARD),
                   panel("fed", "MLP branch: MLP(LN2(x_mid))", row="reads", group=FORWARD),
                   panel("out", "out = x_mid + MLP branch", row="reads", group=FORWARD),
                   panel("dout", "dout, from the loss", row="reads", group=BACKWARD),
                   panel("mlp_branch", "through the MLP branch: LN2's backward of the MLP's", row="reads", group=BACKWARD),
                   panel("dx_mid", "dx_mid = dout + the MLP branch", row="reads", group=BACKWARD),
                   panel("attn_branch", "through the attention branch: LN1's backward of attention's", row="reads", group=BACKWARD),
                   panel("dx", "dx = dx_mid + the attention branch (block_backward)", row="reads", group=BACKWARD)],
    }


# --- 06 the output: softmax and cross-entropy -------------------------------------------------

OUTPUT_LOGITS = np.array([1.0, 2.0, 3.0])  # test_cross_entropy_one_row_by_hand
OUTPUT_SCALES = (0, 0.5, 1, 2, 5, 10, 100, 200, 300, 1000)


def output_case(target, scale, rows):
    logits = np.tile(scale * OUTPUT_LOGITS, (rows, 1))  # N equal rows with equal targets
    loss, cache = cross_entropy_forward(logits, np.full(rows, target))
    probs = cache[0].copy()
    dlogits = cross_entropy_backward(cache)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # the naive form: exp(1000) is inf
        naive_exps = np.exp(logits[0])
        naive_probs = naive_exps / naive_exps.sum()
        naive_loss = -np.log(naive_probs[target])
    return {"logits": logits[0], "shifted": logits[0] - logits[0].max(), "probs": probs[0], "loss": loss,
            "onehot": np.arange(len(OUTPUT_LOGITS)) == target, "dlogits": dlogits[0], "naive_exps": naive_exps,
            "naive_probs": naive_probs, "naive_loss": naive_loss}


def output():
    cases = {key(t, s, n): output_case(t, s, n) for t in range(3) for s in OUTPUT_SCALES for n in (1, 2)}
    return {
        "title": "Pick the target and a scale of the logits",
        "try": "Slide the scale s to 1000: the shifted softmax still gives exact probabilities, while the naive exp "
               "overflows to inf and its loss to nan. Change the target and notice dlogits is probs with 1 taken off "
               "at the target, so it sums to 0; with N = 2 rows each row's share is halved.",
        "caption": "The logits are s times [1, 2, 3], the hand-picked row of test_cross_entropy_one_row_by_hand; "
                   "with N = 2 the row is there twice with the same target, as in "
                   "test_cross_entropy_two_rows_divides_by_n. Every number is cross_entropy_forward and "
                   "cross_entropy_backward run on your choice, except the naive form, written without the shift.",
        "controls": [control("target", "target", range(3), initial=2),
                     control("scale", "scale s", OUTPUT_SCALES, initial=1, slider=True),
                     control("rows", "rows N", (1, 2))],
        "tables": {"choice": {"by": ["target", "scale", "rows"], "cases": cases}},
        "panels": [panel("logits", "logits, one row", group=FORWARD),
                   panel("shifted", "shifted = logits - max: all <= 0", group=FORWARD),
                   panel("probs", "probs = exp(shifted) / sum", group=FORWARD),
                   panel("loss", "loss = mean of -log probs[target]", group=FORWARD),
                   panel("onehot", "onehot(target)", group=BACKWARD),
                   panel("dlogits", "dlogits = (probs - onehot) / N, one row", group=BACKWARD),
                   panel("naive_exps", "Naive: exp(logits), no shift", wrong=True, group="without the shift"),
                   panel("naive_probs", "Naive probs", wrong=True, compare="probs", group="without the shift"),
                   panel("naive_loss", "Naive loss = -log(naive probs[target])", wrong=True, compare="loss",
                         group="without the shift")],
    }


# --- 10 sampling ------------------------------------------------------------------------------

TEMPERATURES = (0, 0.01, 0.25, 0.5, 0.8, 1, 1.5, 2)
TOP_KS = (0, 1, 2, 3, 5, 10, 20)
TOP_PS = (0.5, 0.7, 0.8, 0.9, 0.95, 1)
SHOWN = 12  # the most likely tokens, listed one by one; the rest are summed


def next_token_source(folder):
    """The logits of the next token after make_figures.NEXT_PROMPT (page 10's prompt) from the
    checkpoint in folder, the texts of the SHOWN most likely tokens, and where they came from."""
    from make_figures import NEXT_PROMPT  # here, not on top: a rebuild from the stored logits needs no figures

    model = checkpoint.load(folder)
    logits, _ = forward(model.params, np.array(model.tokenizer.encode(NEXT_PROMPT)), model.cfg)
    last = [number(v) for v in logits[-1]]  # rounded as stored, so a rebuild from the file computes the same
    shown = np.argsort(-np.array(last), kind="stable")[:SHOWN]
    return {"prompt": NEXT_PROMPT, "logits": last, "ids": [int(i) for i in shown],
            "texts": [model.tokenizer.decode([int(i)]) for i in shown],
            "provenance": provenance(model)}


def provenance(model):
    """Where the sampling example's logits came from: the commit and the checkpoint, by its hashes."""
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    meta = model.meta
    return {"commit": commit, "run": meta["run"], "steps": meta["steps"], "trained_at": meta["trained_at"],
            "corpus": Path(meta["corpus"]["path"]).name, "corpus sha256": meta["corpus"]["sha256"],
            **{f"{name} sha256": checkpoint.sha256_of(model.folder / name)
               for name in ("model.npz", "model.json", "model.tok.json")}}


def sampling_case(logits, shown, temperature, top_k, top_p):
    probs = filtered_probs(logits, Sampling(temperature, top_k, top_p))
    rest = np.ones(len(logits), dtype=bool)
    rest[shown] = False
    return {"filtered": probs[shown], "filtered_rest": probs[rest].sum(), "kept": int((probs > 0).sum())}


def temperature_case(logits, shown, temperature):
    """softmax(logits / temperature) before any cut, and the same without the shift."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # exp(20 / 0.01) is inf; x / 0 too
        naive = np.exp(logits / temperature)
        naive = naive / naive.sum()
    return {"before": filtered_probs(logits, Sampling(temperature, 0, 1.0))[shown], "naive": naive[shown]}


def sampling(source):
    logits, shown = np.array(source["logits"]), np.array(source["ids"])
    temperature_only = {key(t): temperature_case(logits, shown, t) for t in TEMPERATURES}
    cases = {key(t, k, p): sampling_case(logits, shown, t, k, p) for t in TEMPERATURES for k in TOP_KS for p in TOP_PS}
    s = source["provenance"]
    return {
        "title": "Pick a temperature, a top-k and a top-p, and draw",
        "try": f"Lower the temperature and watch the bars crowd onto the likeliest token, {source['texts'][0]!r}; set top-k to 3 and every "
               f"token past the third drops to 0. Press \"draw 5 tokens\" to sample from filtered_probs as "
               f"generate.py does: only kept tokens ever come out, the likely ones most often.",
        "caption": f"The next-token logits of a real checkpoint (run {s['run']}, {s['steps']:,} steps on "
                   f"{s['corpus']}; model.npz sha256 {s['model.npz sha256'][:12]}) after the prompt "
                   f"\"{source['prompt']}\", page 10's figure. Every probability is filtered_probs run on your "
                   f"choice; the naive form divides by the temperature without the shift.",
        "source": source,
        "controls": [control("temperature", "temperature", TEMPERATURES, initial=0.8, slider=True),
                     control("top_k", "top-k", TOP_KS, ["0 (off)"] + [str(k) for k in TOP_KS[1:]]),
                     control("top_p", "top-p", TOP_PS, [str(p) for p in TOP_PS[:-1]] + ["1 (off)"], initial=0.9,
                             slider=True)],
        "tables": {"static": {"by": [], "cases": {"": {"texts": [repr(t) for t in source["texts"]], "ids": shown,
                                                       "logits": logits[shown]}}},
                   "temperature": {"by": ["temperature"], "cases": temperature_only},
                   "choice": {"by": ["temperature", "top_k", "top_p"], "cases": cases}},
        "panels": [panel(["texts", "ids", "logits", "before", "filtered", "naive"],
                         ["token", "id", "logit", "softmax(logits / temperature)", "filtered_probs",
                          "Naive: no shift"], "columns",
                         compare={"naive": "before"}, bars=["before", "filtered"]),
                   panel("filtered_rest", f"filtered_probs of the other {len(logits) - SHOWN} tokens together"),
                   panel("kept", "tokens kept"),
                   panel("filtered_rest", "draw 5 tokens", "draw", bars=["texts", "filtered"])],
    }


# --- writing them -----------------------------------------------------------------------------

def stored_source():
    """The sampling example's logits and provenance, as sampling.json holds them."""
    path = WIDGETS / "sampling.json"
    if not path.is_file():
        raise InputError(f"{path} is missing, and the logits it stores with it: "
                         f"run python docs/make_widgets.py --checkpoint FOLDER (the folder of a trained model)")
    return json.loads(path.read_text(encoding="utf-8"))["source"]


def build(source):
    """Every widget's data, as JSON-ready dicts by file name; source: the sampling example's logits."""
    widgets = {"embeddings": embeddings(), "layernorm": layernorm(), "attention": attention(), "mlp": mlp(),
               "block": block(), "output": output(), "sampling": sampling(source)}
    return {name: jsonable(data) for name, data in widgets.items()}


def dumps(data):
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", help="read the sampling example's logits from this trained model's folder "
                                        "(by default they are read back from docs/widgets/sampling.json)")
    args = p.parse_args(argv)
    source = next_token_source(Path(args.checkpoint)) if args.checkpoint else stored_source()
    WIDGETS.mkdir(exist_ok=True)
    data = build(source)
    for name in data:
        (WIDGETS / f"{name}.json").write_text(dumps(data[name]), encoding="utf-8")
    print(f"wrote {len(data)} files in docs/widgets/: {', '.join(data)}")


if __name__ == "__main__":
    run_script(main)
