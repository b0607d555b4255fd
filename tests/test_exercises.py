"""The exercises in exercises/: a learner writes the project's functions in files of their own, forward and
backward, then training, sampling and the plain BPE, and `python exercises/judge.py NAME` judges each the way its
kind is judged (engineering/judge.py), on either track: the guided stubs (exercises/guided/NN_NAME.py: equations
and hints) or the derive stubs (exercises/derive/NN_NAME.py, `--track derive`: the signature, the shapes and the
page to read).

Each stub has its function's def line in the project and says it is not written yet; the project's own
functions in a scratch copy of the stubs pass, with no hint; a wrong one of each kind fails on the rows it gets
wrong, with a hint only where the numbers show the mistake; an error in the learner's code shows the learner's
own lines.
"""

import inspect
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gradcheck
from engineering import judge

REPO = Path(__file__).resolve().parent.parent
STUBS = {"guided": REPO / "exercises" / "guided", "derive": REPO / "exercises" / "derive"}
ORDER = ["embedding", "linear", "layernorm", "softmax", "attention", "gelu", "mlp", "block", "cross_entropy", "model",
         "lr_schedule", "clip_grad_norm", "adamw", "sampling", "bpe"]


def project_source(name):
    """The project's own functions of exercise `name`, as a learner's whole file would hold them: their source,
    dedented (Adam.step inside `class Adam:`), after the imports they use."""
    imports = ("import math\nfrom collections import Counter\n\nimport numpy as np\n\n"
               "from tokenizer import split_pieces\n"
               "from transformer import *\nfrom transformer import CHUNK, ROUNDING, decay_group, flat_buffer\n")
    functions = []
    for qualified in judge.EXERCISES[name].functions:
        source = textwrap.dedent(inspect.getsource(judge.projects_function(qualified)))
        in_its_class = "class Adam:\n" + textwrap.indent(source, "    ")
        functions.append(in_its_class if qualified == "transformer.Adam.step" else source)
    return imports + "\n\n" + "\n\n".join(functions)


def judged_file(name, source, folder, capsys):
    """Run `exercises/judge.py name` on a learner's file holding `source`: (status, stdout, stderr)."""
    judge.exercise_file(folder, name).write_text(source, encoding="utf-8")
    status = judge.main([name, "--exercises-dir", str(folder)])
    out, err = capsys.readouterr()
    return status, out, err


def table_rows(out):
    """{(function, row): result} of the table the judge printed, the function carried down to the rows below its
    first. Example: {("layernorm_backward", "x"): "FAIL"}"""
    lines = out.splitlines()
    header = next(line for line in lines if line.split()[1:3] == ["function", "tensor"])
    width = header.index("function")  # the first column is as wide as the exercise's name, at least 10
    rows, function = {}, ""
    for line in lines[lines.index(header) + 1:]:
        if not line.endswith(("pass", "FAIL")) and "FAIL:" not in line:
            continue
        function = line[width:width + 23].strip() or function
        rows[function, line[width + 24:width + 41].strip()] = line[width + 41:].split()[-1].rstrip(":") \
            if "FAIL:" not in line else "FAIL"
    return rows


def failing(out):
    return {key for key, result in table_rows(out).items() if result == "FAIL"}


def hints(out):
    return [line.strip().removeprefix("hint: ") for line in out.splitlines() if line.lstrip().startswith("hint: ")]


def test_the_exercises_are_the_whole_model_then_training_sampling_and_bpe_in_order():
    assert list(judge.EXERCISES) == ORDER
    for folder in STUBS.values():  # numbered in the order to do them
        assert sorted(path.stem for path in folder.glob("*.py")) == [f"{n:02d}_{name}" for n, name in
                                                                       enumerate(ORDER, 1)], folder
    assert judge.TRACKS == STUBS


def test_the_folders_readme_lists_every_exercise_in_order_with_its_functions_and_page():
    text = (REPO / "exercises" / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d\d) \| `(\w+)` \| (.*?) \| \[.*?\]\(\.\./(docs/[\w-]+\.md)\) \|$", text, re.M)
    assert [(int(number), name) for number, name, _, _ in rows] == list(enumerate(judge.EXERCISES, 1))
    for _, name, functions, page in rows:
        written = ", ".join(f"`{judge.function_name(qualified)}`" for qualified in judge.EXERCISES[name].functions)
        assert (functions, page) == (written, judge.EXERCISES[name].page), name


@pytest.mark.parametrize("track", STUBS)
@pytest.mark.parametrize("name", ORDER)
def test_each_stub_is_the_projects_def_line_with_a_body_still_to_write(name, track):
    path = judge.exercise_file(STUBS[track], name)
    for qualified in judge.EXERCISES[name].functions:
        stub = judge.learners_function(path, judge.function_name(qualified))
        project = judge.projects_function(qualified)
        assert stub.__qualname__ == project.__qualname__
        assert inspect.signature(stub) == inspect.signature(project)
        # the def line whole, its comment of shapes included: the stub follows the project when that changes
        assert inspect.getsourcelines(stub)[0][0] == inspect.getsourcelines(project)[0][0], \
            f"{path}: copy the def line of {qualified}"
        assert not judge.written(stub), f"{path}: {qualified}'s body must be the stub's line"
        assert inspect.getsource(stub).rstrip().endswith(
            "raise NotImplementedError  # your code, in place of this line")


@pytest.mark.parametrize("name", ORDER)
def test_a_guided_stub_gives_equations_and_hints_and_a_derive_stub_only_the_shapes_and_the_page(name):
    guided_path, derive_path = (judge.exercise_file(STUBS[track], name) for track in ("guided", "derive"))
    for qualified in judge.EXERCISES[name].functions:
        function = judge.function_name(qualified)
        guided = judge.learners_function(guided_path, function).__doc__
        derive = judge.learners_function(derive_path, function).__doc__
        assert "Hints:" in guided and len(derive) < len(guided), f"{guided_path.name}: {function} gives no hint"
        assert "Hints:" not in derive and "=" not in derive, f"derive/{derive_path.name} gives an equation away"
    for path, command in ((guided_path, f"python exercises/judge.py {name}\n"),
                          (derive_path, f"python exercises/judge.py {name} --track derive\n")):
        text = path.read_text(encoding="utf-8")
        assert command in text and judge.EXERCISES[name].page in text
        assert (REPO / judge.EXERCISES[name].page).is_file()
        assert text.startswith(f'"""Exercise {ORDER.index(name) + 1}' + ("," if path == derive_path else ":"))


@pytest.mark.parametrize("track", STUBS)
@pytest.mark.parametrize("name", ORDER)
def test_an_untouched_stub_is_not_written_yet(name, track, capsys):
    assert judge.main([name, "--track", track]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    path = judge.exercise_file(STUBS[track], name).relative_to(REPO).as_posix()
    functions = [judge.function_name(qualified) for qualified in judge.EXERCISES[name].functions]
    if len(functions) == 1:
        assert err == (f"{path}: {functions[0]} is not written yet (it raises NotImplementedError): write its body, "
                       f"then run this again\n")
    else:
        assert err.startswith(f"{path}: {functions[0]} and {functions[1]} are not written yet")


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """A scratch copy of the stubs, every one filled with the project's own functions."""
    folder = tmp_path_factory.mktemp("filled")
    for name in ORDER:
        judge.exercise_file(folder, name).write_text(project_source(name), encoding="utf-8")
    return folder


@pytest.mark.parametrize("name", ORDER)
def test_every_stub_filled_with_the_projects_own_functions_passes_with_no_hint(name, filled, capsys):
    assert judge.main([name, "--exercises-dir", str(filled)]) == 0
    out, err = capsys.readouterr()
    rows = table_rows(out)
    functions = {judge.function_name(qualified).split(".")[-1] for qualified in judge.EXERCISES[name].functions}
    assert {function.split(".")[-1] for function, _ in rows} == functions, out
    assert rows and all(result == "pass" for result in rows.values()), out
    assert hints(out) == [] and err == ""
    assert out.rstrip().endswith("right; compare with the project's own in "
                                 f"{judge.EXERCISES[name].functions[0].split('.')[0]}.py")


# --- wrong functions, each a learner's whole file -----------------------------------------------------------

LAYERNORM_DOUT_FOR_DXHAT = '''
from transformer import layernorm_forward


def layernorm_backward(dout, cache):
    xhat, rstd, gain = cache
    C = xhat.shape[-1]
    dxhat = dout * gain
    dx = rstd * (dxhat - dxhat.mean(axis=-1, keepdims=True) - xhat * (dout * xhat).mean(axis=-1, keepdims=True))
    return dx, (dout * xhat).reshape(-1, C).sum(axis=0), dout.reshape(-1, C).sum(axis=0)
'''
SOFTMAX_SUM_OVER_THE_BATCH = '''
from transformer import softmax


def softmax_backward(dout, probs):
    return probs * (dout - (dout * probs).sum(axis=0, keepdims=True))  # the batch's axis, not the row's
'''
SOFTMAX_WITHOUT_THE_SUM = '''
from transformer import softmax


def softmax_backward(dout, probs):
    return probs * dout  # the diagonal of the Jacobian alone
'''
SOFTMAX_WITHOUT_KEEPDIMS = '''
from transformer import softmax


def softmax_backward(dout, probs):
    return probs * (dout - (dout * probs).sum(axis=-1))
'''
SOFTMAX_SHIFTED_BY_THE_LARGEST_OF_ALL = '''
import numpy as np

from transformer import softmax_backward


def softmax(x):
    exps = np.exp(x - x.max())
    return exps / exps.sum(axis=-1, keepdims=True)
'''
LAYERNORM_EPS_OUTSIDE_THE_ROOT = '''
import numpy as np

from transformer import layernorm_backward


def layernorm_forward(x, gain, shift, eps):
    centred = x - x.mean(axis=-1, keepdims=True)
    rstd = 1.0 / (np.sqrt((centred * centred).mean(axis=-1, keepdims=True)) + eps)
    xhat = centred * rstd
    return xhat * gain + shift, (xhat, rstd, gain)
'''
LINEAR_CACHE_TURNED_ROUND = '''
from transformer import linear_backward


def linear_forward(x, W, b):
    return x @ W + b, (W, x)
'''
ATTENTION_CACHE_AS_A_TUPLE = '''
from transformer import attention_backward, attention_forward as projects


def attention_forward(x, p, num_heads, past=None):
    out, cache = projects(x, p, num_heads, past)
    return out, tuple(cache)
'''
EMBEDDING_WITH_FANCY_INDEXING = '''
from transformer import embed_forward


def embed_backward(dX0, ids, grads):
    T, C = dX0.shape[-2:]
    grads["tok_emb"][ids.reshape(-1)] += dX0.reshape(-1, C)  # a repeated id keeps one row of dX0
    grads["pos_emb"][:T] += dX0.reshape(-1, T, C).sum(axis=0)
'''
LINEAR_DB_OVER_ONE_AXIS = '''
from transformer import linear_forward


def linear_backward(dout, cache):
    x, W = cache
    n_in, n_out = W.shape
    return dout @ W.T, x.reshape(-1, n_in).T @ dout.reshape(-1, n_out), dout.sum(axis=0)  # db: the first axis only
'''
GELU_WITHOUT_THE_HALF = '''
from transformer import GELU_CUBIC, GELU_SCALE, gelu_forward


def gelu_backward(dout, cache):
    x, tanh_u = cache
    du_dx = GELU_SCALE * (1.0 + 3.0 * GELU_CUBIC * x * x)
    return dout * ((1.0 + tanh_u) + x * (1.0 - tanh_u * tanh_u) * du_dx)  # the forward's 0.5 forgotten
'''
CROSS_ENTROPY_INTO_ITS_CACHE = '''
import numpy as np

from transformer import cross_entropy_forward


def cross_entropy_backward(cache):
    probs, targets = cache
    N = len(targets)
    probs[np.arange(N), targets] -= 1.0  # writes into the cache
    return probs / N
'''
BLOCK_WITHOUT_THE_SECOND_RESIDUAL = '''
from transformer import attention_backward, block_forward, layernorm_backward, mlp_backward


def block_backward(dout, cache):
    ln1_cache, attn_cache, ln2_cache, mlp_cache = cache
    dh2, grads = mlp_backward(dout, mlp_cache)
    dx_mid, grads["ln2_gain"], grads["ln2_shift"] = layernorm_backward(dh2, ln2_cache)
    dx_mid = dx_mid + dout
    dh1, attn_grads = attention_backward(dx_mid, attn_cache)
    grads.update(attn_grads)
    dx, grads["ln1_gain"], grads["ln1_shift"] = layernorm_backward(dh1, ln1_cache)
    return dx, grads  # + dx_mid forgotten: the residual's path to x
'''
SCHEDULE_WITHOUT_THE_SHORT_RUN = '''
import math


def lr_schedule(step, total_steps, lr_max, lr_min, warmup_steps):
    if step <= warmup_steps:
        return lr_max * step / warmup_steps
    progress = (step - warmup_steps) / (total_steps - warmup_steps)
    return lr_min + (lr_max - lr_min) * 0.5 * (1.0 + math.cos(math.pi * progress))
'''
CLIPPING_AT_TWICE_MAX_NORM = '''
import math

import numpy as np

from transformer import flat_buffer


def clip_grad_norm(grads, max_norm):
    flat = flat_buffer(grads)
    norm = math.sqrt(float(np.dot(flat, flat)))
    if norm > 2 * max_norm:
        flat *= max_norm / norm
    return norm
'''
CLIPPING_INTO_NEW_ARRAYS = '''
import math


def clip_grad_norm(grads, max_norm):
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads.values()))
    if norm > max_norm:
        for name in grads:
            grads[name] = grads[name] * (max_norm / norm)
    return norm
'''
ADAMW_DECAYING_THE_BIASES = '''
import numpy as np

from transformer import flat_buffer


class Adam:
    def step(self, params, grads, lr):
        self.t += 1
        p, g = flat_buffer(params), flat_buffer(grads)
        p -= lr * self.weight_decay * p  # every parameter, the biases and gains too
        self.m[...] = self.beta1 * self.m + (1 - self.beta1) * g
        self.v[...] = self.beta2 * self.v + (1 - self.beta2) * g * g
        m_hat, v_hat = self.m / (1 - self.beta1 ** self.t), self.v / (1 - self.beta2 ** self.t)
        p -= lr * m_hat / (np.sqrt(v_hat) + self.eps)
'''
ADAMW_NOT_IN_PLACE = '''
import numpy as np

from transformer import flat_buffer


class Adam:
    def step(self, params, grads, lr):
        self.t += 1
        p, g = flat_buffer(params), flat_buffer(grads)
        self.m = self.beta1 * self.m + (1 - self.beta1) * g
        self.v = self.beta2 * self.v + (1 - self.beta2) * g * g
        p = p - lr * (self.m / (1 - self.beta1 ** self.t)) / (np.sqrt(self.v / (1 - self.beta2 ** self.t)) + self.eps)
'''
LAYERNORM_FOR_3D_ROWS_ONLY = '''
from transformer import layernorm_forward


def layernorm_backward(dout, cache):
    xhat, rstd, gain = cache
    B, T, C = dout.shape
    dxhat = dout * gain
    dx = rstd * (dxhat - dxhat.mean(axis=-1, keepdims=True) - xhat * (dout * xhat).mean(axis=-1, keepdims=True))
    return dx, (dout * xhat).reshape(-1, C).sum(axis=0), dout.reshape(-1, C).sum(axis=0)
'''
MODEL_FORWARD_WITHOUT_ITS_CACHE = '''
from transformer import forward as projects, loss_and_grads


def forward(params, ids, cfg):
    return projects(params, ids, cfg)[0]  # the logits alone
'''
SAMPLING_TOP_P_BEFORE_TOP_K = '''
import numpy as np


def filtered_probs(logits, sampling):
    logits = np.asarray(logits, dtype=np.float64)
    if sampling.temperature == 0:
        probs = (np.arange(len(logits)) == np.argmax(logits)).astype(np.float64)
    else:
        probs = np.exp((logits - logits.max()) / sampling.temperature)
        probs /= probs.sum()
    order = np.argsort(-probs, kind="stable")
    keep = int(np.searchsorted(np.cumsum(probs[order]), sampling.top_p - 1e-9)) + 1  # top-p on all of them first
    if sampling.top_k:
        keep = min(keep, sampling.top_k)
    filtered = np.zeros_like(probs)
    filtered[order[:keep]] = probs[order[:keep]]
    return filtered / filtered.sum()
'''
BPE_MERGING_OVERLAPS_TWICE = '''
from tokenizer import train_plain


def merge_pair(tokens, pair, new):
    return [new if tuple(tokens[i:i + 2]) == pair else token for i, token in enumerate(tokens)
            if i == 0 or tuple(tokens[i - 1:i + 1]) != pair]
'''

# (exercise, source, the (function, row)s that fail, the start of each hint printed)
MISTAKES = {
    "layernorm, dout * xhat for dxhat * xhat": ("layernorm", LAYERNORM_DOUT_FOR_DXHAT, {("layernorm_backward", "x")},
                                                []),
    "softmax, a sum over the batch's axis": ("softmax", SOFTMAX_SUM_OVER_THE_BATCH, {("softmax_backward", "x")},
                                             ["row 0 of yours changes when other rows are there: a sum or a mean runs "
                                              "over another axis than the row's"]),
    "softmax without the row's sum": ("softmax", SOFTMAX_WITHOUT_THE_SUM, {("softmax_backward", "x")},
                                      ["each row of the measured gradient sums to 0, yours do not"]),
    "softmax shifted by the largest of all": ("softmax", SOFTMAX_SHIFTED_BY_THE_LARGEST_OF_ALL,
                                              {("softmax", "1000 apart"), ("softmax", "page example")},
                                              ["a number is nan or inf where the expected one is not"] * 2),
    "layernorm, eps outside the root": ("layernorm", LAYERNORM_EPS_OUTSIDE_THE_ROOT,
                                        {("layernorm_forward", "out"), ("layernorm_forward", "cache"),
                                         ("layernorm_forward", "page example")},
                                        []),
    "linear, its cache turned round": ("linear", LINEAR_CACHE_TURNED_ROUND, {("linear_forward", "cache")},
                                       ["the project's linear_backward cannot read your cache"]),
    "attention, its cache a tuple": ("attention", ATTENTION_CACHE_AS_A_TUPLE, {("attention_forward", "cache")},
                                     ["return the cache as transformer.AttentionCache(...), by name"]),
    "embedding with += on repeated ids": ("embedding", EMBEDDING_WITH_FANCY_INDEXING, {("embed_backward", "tok_emb")},
                                          ["only rows 0, 2, 3 are wrong, the other rows agree"]),
    "linear, db over one axis": ("linear", LINEAR_DB_OVER_ONE_AXIS, {("linear_backward", "b")},
                                 ["(3, 5) keeps the leading axes (3,): sum over every row"]),
    "gelu without the forward's 0.5": ("gelu", GELU_WITHOUT_THE_HALF, {("gelu_backward", "x")},
                                       ["yours is 2 times the measured gradient in every entry"]),
    "cross-entropy into its cache": ("cross_entropy", CROSS_ENTROPY_INTO_ITS_CACHE,
                                     {("cross_entropy_backward", "(cache)"), ("cross_entropy_backward", "(repeat)")},
                                     []),
    "block without the second residual": ("block", BLOCK_WITHOUT_THE_SECOND_RESIDUAL, {("block_backward", "x")}, []),
    "schedule without the short run": ("lr_schedule", SCHEDULE_WITHOUT_THE_SHORT_RUN,
                                       {("lr_schedule", "step 10 of 10"), ("lr_schedule", "every step")}, []),
    "clipping at twice max_norm": ("clip_grad_norm", CLIPPING_AT_TWICE_MAX_NORM,
                                   {("clip_grad_norm", "norm 1.5 (max 1)"), ("clip_grad_norm", "norm 2 (max 1)"),
                                    ("clip_grad_norm", "9 random numbers")},
                                   ["a norm of 1.5 is above max_norm 1, yet yours left the gradients as they were",
                                    "a norm of 2 is above max_norm 1", "with max_norm 0.9 times their norm"]),
    "clipping into new arrays": ("clip_grad_norm", CLIPPING_INTO_NEW_ARRAYS,
                                 {("clip_grad_norm", "norm 5 (max 1)"), ("clip_grad_norm", "norm 1.5 (max 1)"),
                                  ("clip_grad_norm", "norm 2 (max 1)"), ("clip_grad_norm", "in place"),
                                  ("clip_grad_norm", "9 random numbers")},
                                 ["scale the gradients in place", "with max_norm 0.3 times their norm"]),
    "AdamW decaying the biases": ("adamw", ADAMW_DECAYING_THE_BIASES,
                                  {("Adam.step", "page, step 1"), ("Adam.step", "page, step 2"),
                                   ("Adam.step", "3 steps, a model")},
                                  ["b, a bias with a gradient of 0, moved: weight decay is for the matrices"] * 2),
    "AdamW not in place": ("adamw", ADAMW_NOT_IN_PLACE,
                           {("Adam.step", "page, step 1"), ("Adam.step", "page, step 2"), ("Adam.step", "lr times sign"),
                            ("Adam.step", "3 steps, a model")},
                           ["yours left the parameters as they were: update them in place"]),
    "model forward without its cache": ("model", MODEL_FORWARD_WITHOUT_ITS_CACHE, {("forward", "logits")},
                                        ["return (out, cache), a pair, as the stub says; yours returns ndarray"]),
    "top-p before top-k": ("sampling", SAMPLING_TOP_P_BEFORE_TOP_K,
                           {("filtered_probs", "top-k, then top-p"), ("filtered_probs", "50 random logits")},
                           ["with Sampling("]),
    "merge_pair merging overlaps twice": ("bpe", BPE_MERGING_OVERLAPS_TWICE,
                                          {("merge_pair", "[0, 0, 0]"), ("merge_pair", "[0, 0, 0, 0]")}, []),
}


def mistakes(names):
    """The mistakes as test cases: the softmax shifted by the largest of all divides 0 by 0 on purpose, so NumPy's
    warning of it, from the learner's file, is expected there rather than let into the run's summary."""
    nan_on_purpose = pytest.mark.filterwarnings("ignore:invalid value encountered in divide:RuntimeWarning")
    return [pytest.param(name, marks=nan_on_purpose) if name == "softmax shifted by the largest of all" else name
            for name in names]


@pytest.mark.parametrize("mistake", mistakes(MISTAKES))
def test_a_wrong_function_fails_on_the_rows_it_gets_wrong_with_a_hint_only_where_the_numbers_show_it(
        mistake, tmp_path, capsys):
    name, source, wrong, hinted = MISTAKES[mistake]
    status, out, err = judged_file(name, source, tmp_path, capsys)
    assert status == 1, err
    assert failing(out) == wrong, out
    assert len(hints(out)) == len(hinted), out
    assert all(hint.startswith(start) for hint, start in zip(hints(out), hinted)), out
    assert f"fix {judge.exercise_file(tmp_path, name)}, then run this again" in err


def test_a_wrong_backward_gets_the_pages_worked_example_beside_yours(tmp_path, capsys):
    # the learner who found this mistake by running page 2's example through their function: row 1 is wrong
    _, out, _ = judged_file("layernorm", LAYERNORM_DOUT_FOR_DXHAT, tmp_path, capsys)
    lines = out.splitlines()
    at = lines.index("  the page's worked example (docs/02-layernorm.md), yours beside the page's:")
    assert lines[at + 1].startswith("  dx row 0         yours [ 0.0185 -0.0370 -0.0370  0.0556]   the page's [ 0.0185")
    assert not lines[at + 1].endswith("<- differs")
    assert lines[at + 2].startswith("  dx row 1         yours [-0.3750  0.6250 -0.1250 -0.1250]   the page's [-0.5000")
    assert lines[at + 2].endswith("<- differs")


def test_a_backward_that_fails_on_the_pages_shapes_says_where(tmp_path, capsys):
    # written for (B, T, C) only: the page's example, rows of shape (2, 4), raises in it; the table stays
    status, out, _ = judged_file("layernorm", LAYERNORM_FOR_3D_ROWS_ONLY, tmp_path, capsys)
    assert status == 1 and failing(out) == {("layernorm_backward", "x")}
    assert (f"the page's worked example (docs/02-layernorm.md) raised ValueError: not enough values to unpack "
            f"(expected 3, got 2), in yours at {tmp_path / '03_layernorm.py'}, line 7: B, T, C = dout.shape") in out


def test_a_wrong_forward_sets_the_pages_numbers_beside_yours(tmp_path, capsys):
    _, out, _ = judged_file("layernorm", LAYERNORM_EPS_OUTSIDE_THE_ROOT, tmp_path, capsys)
    assert "the page's worked example (docs/02-layernorm.md), yours beside the page's:" in out
    # the two differ by 4e-6, hidden at 4 decimals: the rows that differ are shown to 10
    assert re.search(r"out row 1 +yours \[-0\.99999\d+ .*\]   the page's \[-0\.99999\d+ .*\]   <- differs", out)


def test_clipping_is_caught_between_max_norm_and_twice_it(tmp_path, capsys):
    _, out, _ = judged_file("clip_grad_norm", CLIPPING_AT_TWICE_MAX_NORM, tmp_path, capsys)
    assert "yours [0.9, 1.2], the project's [0.6, 0.8]" in out
    assert table_rows(out)["clip_grad_norm", "norm 5 (max 1)"] == "pass"  # the page's example alone misses it


def test_a_broadcasting_mistake_shows_the_learners_line_first_and_no_frame_of_the_judge(tmp_path, capsys):
    status, out, err = judged_file("softmax", SOFTMAX_WITHOUT_KEEPDIMS, tmp_path, capsys)
    assert status == 1 and out == ""
    lines = err.splitlines()
    assert lines[0] == "Traceback (most recent call last), your lines:"
    assert lines[1] == f'  File "{judge.exercise_file(tmp_path, "softmax")}", line 6, in softmax_backward'
    assert "gradcheck.py" not in err and "judge.py" not in err
    assert lines[-1].startswith("ValueError: operands could not be broadcast together with shapes (2,3,5) (2,3)")


def test_a_forward_written_before_its_backward_is_judged_alone(tmp_path, capsys):
    source = project_source("gelu").replace("def gelu_backward(dout, cache):  # (...) -> (...)\n",
                                            "def gelu_backward(dout, cache):  # (...) -> (...)\n"
                                            "    raise NotImplementedError  # your code, in place of this line\n\n\n"
                                            "def unused(dout, cache):\n")
    status, out, err = judged_file("gelu", source, tmp_path, capsys)
    assert status == 1
    assert {function for function, _ in table_rows(out)} == {"gelu_forward"} and not failing(out)
    assert err.strip() == (f"{judge.exercise_file(tmp_path, 'gelu')}: gelu_backward is not written yet (it raises "
                           f"NotImplementedError): write its body, then run this again")


def test_written_tells_a_stub_from_a_body():
    def stub(x):
        """A docstring."""
        raise NotImplementedError  # your code, in place of this line

    def body(x):
        raise NotImplementedError if x else ValueError

    def stub_with_a_message(x):
        raise NotImplementedError("later")

    assert not judge.written(stub) and not judge.written(stub_with_a_message)
    assert judge.written(body) and judge.written(judge.written)


def test_a_missing_file_or_function_is_one_line(tmp_path, capsys):
    assert judge.main(["gelu", "--exercises-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"judge.py: there is no {tmp_path / '06_gelu.py'}; "
                                       f"`git checkout exercises/guided/06_gelu.py` brings back its stub\n")
    assert judge.main(["gelu", "--track", "derive", "--exercises-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err.endswith("`git checkout exercises/derive/06_gelu.py` brings back its stub\n")
    status, _, err = judged_file("gelu", "def gelu_forward(x):\n    return x\n", tmp_path, capsys)
    assert status == 2
    assert err == (f"judge.py: {tmp_path / '06_gelu.py'} defines no gelu_backward: write `def gelu_backward` "
                   f"with the stub's signature\n")
    status, _, err = judged_file("adamw", "def step(self, params, grads, lr):\n    pass\n", tmp_path, capsys)
    assert status == 2 and "write `class Adam:` with `def step`" in err


def test_a_copy_of_the_files_from_before_they_were_numbered_is_read_too(tmp_path, capsys):
    (tmp_path / "gelu.py").write_text(project_source("gelu"), encoding="utf-8")
    assert judge.exercise_file(tmp_path, "gelu") == tmp_path / "gelu.py"
    assert judge.main(["gelu", "--exercises-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("right; compare with the project's own in transformer.py")


def run_command(command, *args, cwd=REPO):
    """(exit status, stdout, stderr) of `python command args` in a fresh interpreter, run from cwd."""
    result = subprocess.run([sys.executable, command, *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    return result.returncode, result.stdout, result.stderr


def test_the_command_line():
    status, out, _ = run_command("exercises/judge.py", "--track", "derive")
    listed = [line.split() for line in out.splitlines() if re.match(r"^ +\d+  ", line)]
    assert status == 0 and [row[1] for row in listed] == ORDER
    assert [row[2] for row in listed] == [f"exercises/derive/{n:02d}_{name}.py" for n, name in enumerate(ORDER, 1)]
    assert listed[2][3:] == ["docs/02-layernorm.md", "layernorm_forward,", "layernorm_backward"]
    assert run_command("exercises/judge.py", "gelu", "--track", "guess")[0] == 2
    for args, message in ((["mlps"], "judge.py: no exercise 'mlps'; the exercises are: embedding, "),
                          (["--bogus"], "judge.py: unrecognized arguments: --bogus (see --help)")):
        status, out, err = run_command("exercises/judge.py", *args)
        assert (status, out, err.count("\n")) == (2, "", 1) and err.startswith(message), err


def test_the_judge_runs_from_inside_exercises_too_without_an_install():
    status, _, err = run_command("judge.py", "gelu", "--track", "derive", cwd=REPO / "exercises")
    assert (status, err) == (1, "exercises/derive/06_gelu.py: gelu_forward and gelu_backward are not written yet "
                                "(each raises NotImplementedError): write their bodies, gelu_forward first, then run "
                                "this again\n")


def test_gradchecks_old_exercise_option_says_the_new_command_in_one_line():
    status, out, err = run_command("gradcheck.py", "--exercise", "gelu", "--track", "derive")
    assert (status, out) == (2, "")
    assert err == ("gradcheck.py: the exercises have a command of their own: python exercises/judge.py gelu "
                   "--track derive\n")


# --- the page, docs/exercises.md ----------------------------------------------------------------------------

PAGE = REPO / "docs" / "exercises.md"
PASSING = re.compile(r"\d\.\de[-+]\d\d(?=  pass$)", re.M)  # a passing row's error: rounding, which varies by CPU


def rounding_masked(text):
    """A table with each passing row's error, rounding noise below 1e-6, as `~`: the rest compares exactly."""
    return PASSING.sub("~", text)


def page_table(out):
    """What the page shows of the judge's output: every line after the table's column header."""
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[1:3] == ["function", "tensor"])
    return "\n".join(lines[at + 1:]).strip("\n")


# the mistakes the page shows, each in a fold of its own
ON_THE_PAGE = ["embedding with += on repeated ids", "linear, db over one axis",
               "layernorm, dout * xhat for dxhat * xhat", "softmax without the row's sum",
               "softmax, a sum over the batch's axis", "softmax shifted by the largest of all",
               "attention, its cache a tuple", "gelu without the forward's 0.5",
               "block without the second residual", "cross-entropy into its cache", "schedule without the short run",
               "clipping at twice max_norm", "AdamW decaying the biases", "top-p before top-k",
               "merge_pair merging overlaps twice"]


@pytest.mark.parametrize("mistake", mistakes(ON_THE_PAGE))
def test_the_page_shows_the_table_each_mistake_gives(mistake, tmp_path, capsys):
    name, source, *_ = MISTAKES[mistake]
    _, out, _ = judged_file(name, source, tmp_path, capsys)
    table = rounding_masked(page_table(out))
    assert table in rounding_masked(PAGE.read_text(encoding="utf-8")), \
        f"docs/exercises.md should show, for {mistake}:\n{table}"


def test_the_page_shows_the_table_a_right_layer_norm_gets(filled, capsys):
    assert judge.main(["layernorm", "--exercises-dir", str(filled)]) == 0
    table = rounding_masked(page_table(capsys.readouterr().out).split("\n\n")[0])
    assert table in rounding_masked(PAGE.read_text(encoding="utf-8"))


def test_the_pages_mistakes_are_folded_away():
    text = PAGE.read_text(encoding="utf-8")
    assert text.count('<details markdown="1">') == text.count("</details>") == len(ON_THE_PAGE)
    assert "<details open" not in text  # closed: a learner opens one only when stuck
    assert text.index("<details") > text.index("## When you are stuck")


def test_the_page_lists_the_exercises_in_order_with_their_times_and_pages():
    text = PAGE.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| `(\w+)` \| (.*?) \| (.*?) \| (\d+) min \| (\d+) min \|$", text, re.M)
    assert [row[1] for row in rows] == ORDER and [int(row[0]) for row in rows] == list(range(1, 16))
    for number, name, _, read_first, _, _ in rows:
        page = Path(judge.EXERCISES[name].page).name
        assert f"]({page})" in read_first, f"exercise {number} should name {page}"
    guided, derive = (sum(int(row[column]) for row in rows) for column in (4, 5))
    total = re.search(r"\| all fifteen \| (\d+) h (\d+) min \| (\d+) h (\d+) min \|", text)
    assert (60 * int(total[1]) + int(total[2]), 60 * int(total[3]) + int(total[4])) == (guided, derive)


def test_the_page_says_what_a_right_backward_gets():
    exercises_layers = {judge.CHECKED_BY[judge.function_name(qualified)] for exercise in judge.EXERCISES.values()
                        for qualified in exercise.functions if judge.function_name(qualified) in judge.CHECKED_BY}
    errors = {layer: gradcheck.check(layer) for layer in exercises_layers}
    # every tensor but the key biases, whose true gradient is 0 and is judged by its size
    measured = lambda layers: [error for layer in layers for tensor, error in errors[layer].items()
                               if not tensor.endswith("bk")]
    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    # the page states bounds, not the digits, which are rounding and vary from one CPU to another
    assert "below 1e-9 on every layer, below 1e-8 on the block, and below 5e-7 on the whole model" in text
    assert max(measured(set(errors) - {"block", "model"})) < 1e-9
    assert max(measured(["block"])) < 1e-8 and max(measured(["model"])) < 5e-7
    assert max(errors[layer][tensor] for layer in errors for tensor in errors[layer] if tensor.endswith("bk")) < 1e-15


@pytest.mark.parametrize("function", judge.PAGE_EXAMPLES)
def test_each_worked_example_the_judge_runs_is_a_test_and_a_page_of_the_project(function):
    page, test, run = judge.PAGE_EXAMPLES[function]
    path, name = test.split("::")
    assert f"def {name}(" in (REPO / path).read_text(encoding="utf-8")
    assert f"Example: {test}" in (REPO / page).read_text(encoding="utf-8"), f"{page} shows no example of {test}"
    assert run(getattr(judge.tf, function))  # the project's own numbers, the ones the page shows


def test_the_judge_refuses_to_judge_once_a_learners_function_has_taken_the_projects_place(filled, monkeypatch):
    # it would compare the learner's function with itself: train.py --exercises judges first, then replaces
    learners = judge.learners_function(judge.exercise_file(filled, "layernorm"), "layernorm_forward")
    monkeypatch.setattr(judge.tf, "layernorm_forward", learners)
    with pytest.raises(AssertionError, match="before putting them in the project's place: transformer.layernorm_forward"):
        judge.judge_exercise("gelu", filled)
