"""The exercises in exercises/: a learner writes a backward in a file of their own, and
`python gradcheck.py --exercise NAME` judges it with the layer's own check, on either track: the
guided stubs (exercises/NAME.py: equations and hints) or the derive stubs (exercises/derive/NAME.py,
`--track derive`: the signature, the shapes and the page to read).

Each stub has its function's signature in transformer.py and says it is not written yet; the
project's own function in the learner's place passes, with no hint; a wrong one fails with the
table and, where its numbers show the mistake, a hint; and the tables docs/exercises.md shows for
the common mistakes are the ones gradcheck prints for them.
"""

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import gradcheck
import transformer

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "exercises.md"
STUBS = {"guided": REPO / "exercises", "derive": REPO / "exercises" / "derive"}


def function_of(name):
    """The name of the function exercise `name` asks for. Example: "embedding" -> "embed_backward" """
    return gradcheck.CHECKS[gradcheck.EXERCISES[name]][0]


def judge(name, source, folder, capsys):
    """Run `gradcheck.py --exercise name` on a learner's file holding `source`: (status, stdout, stderr)."""
    (folder / f"{name}.py").write_text(source, encoding="utf-8")
    status = gradcheck.main(["--exercise", name, "--exercises-dir", str(folder)])
    out, err = capsys.readouterr()
    return status, out, err


def table_rows(out):
    """{tensor: the rest of its row} of the table gradcheck printed. Example: {"x": "1.1e-01  FAIL"}"""
    start = len(f"{'layer':<10} {'backward':<23} ")  # the tensor column
    rows = [line for line in out.splitlines() if line.endswith(("pass", "FAIL")) or "FAIL:" in line]
    return {row[start:start + 17].strip(): row[start + 17:].strip() for row in rows}


def hints(out):
    """{tensor: the hint printed under its row} of the table gradcheck printed."""
    found, tensor = {}, None
    start = len(f"{'layer':<10} {'backward':<23} ")
    for line in out.splitlines():
        if line.endswith(("pass", "FAIL")) or "FAIL:" in line:
            tensor = line[start:start + 17].strip()
        elif line.lstrip().startswith("hint: "):
            found[tensor] = line.lstrip().removeprefix("hint: ")
    return found


def test_the_exercises_are_the_seven_backwards_in_the_order_of_the_page():
    assert list(gradcheck.EXERCISES) == ["linear", "gelu", "softmax", "cross_entropy", "embedding", "layernorm",
                                         "attention"]
    for folder in STUBS.values():
        assert sorted(path.stem for path in folder.glob("*.py")) == sorted(gradcheck.EXERCISES), folder
    assert {track: folder for track, folder in gradcheck.TRACKS.items()} == STUBS


@pytest.mark.parametrize("track", STUBS)
@pytest.mark.parametrize("name", gradcheck.EXERCISES)
def test_each_stub_has_the_signature_of_the_projects_function(name, track):
    function = function_of(name)
    stub = gradcheck.learners_function(STUBS[track] / f"{name}.py", function)
    project = getattr(transformer, function)
    assert inspect.signature(stub) == inspect.signature(project)
    # the def line whole, its comment of shapes included: the stub follows transformer.py when that changes
    assert inspect.getsourcelines(stub)[0][0] == inspect.getsourcelines(project)[0][0], \
        f"{STUBS[track] / name}.py: copy the def line of {function} from transformer.py"


@pytest.mark.parametrize("name", gradcheck.EXERCISES)
def test_a_guided_stub_gives_the_equations_and_a_derive_stub_only_the_shapes_and_the_page(name):
    function = function_of(name)
    guided = gradcheck.learners_function(STUBS["guided"] / f"{name}.py", function).__doc__
    derive_file = (STUBS["derive"] / f"{name}.py").read_text(encoding="utf-8")
    derive = gradcheck.learners_function(STUBS["derive"] / f"{name}.py", function).__doc__
    assert "Hints:" in guided and "The gradient" in guided
    assert "Hints:" not in derive and "=" not in derive, f"exercises/derive/{name}.py gives an equation away"
    pages = re.findall(r"docs/[\w-]+\.md", derive_file)
    assert pages and all((REPO / page).is_file() for page in pages), f"exercises/derive/{name}.py: {pages}"
    assert f"python gradcheck.py --exercise {name} --track derive" in derive_file


@pytest.mark.parametrize("track", STUBS)
@pytest.mark.parametrize("name", gradcheck.EXERCISES)
def test_a_stub_is_not_written_yet(name, track, capsys):
    assert gradcheck.main(["--exercise", name, "--track", track]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    path = (STUBS[track] / f"{name}.py").relative_to(REPO).as_posix()
    assert err == (f"{path}: {function_of(name)} is not written yet (it raises NotImplementedError): "
                   f"write its body, then run this again\n")


@pytest.mark.parametrize("name", gradcheck.EXERCISES)
def test_the_projects_own_function_in_the_learners_place_passes_with_no_hint(name, tmp_path, capsys):
    status, out, err = judge(name, f"from transformer import {function_of(name)}\n", tmp_path, capsys)
    assert status == 0, err
    assert set(table_rows(out)) == set(gradcheck.check(gradcheck.EXERCISES[name]))
    assert all(result.endswith("pass") for result in table_rows(out).values()), out
    assert "hint:" not in out and hints(out) == {}
    assert out.endswith(f"{function_of(name)} is right: every gradient agrees with central differences; "
                        f"compare it with the project's {function_of(name)} in transformer.py\n") and err == ""


# Common mistakes, each a learner's whole file: (exercise, source, the tensors whose rows fail).
LAYERNORM_WITHOUT_THE_MEAN = '''
def layernorm_backward(dout, cache):
    xhat, rstd, gain = cache
    C = xhat.shape[-1]
    dxhat = dout * gain
    dx = rstd * (dxhat - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))  # - mean(dxhat) left out
    return dx, (dout * xhat).reshape(-1, C).sum(axis=0), dout.reshape(-1, C).sum(axis=0)
'''
LAYERNORM_DGAIN_OVER_ONE_AXIS = '''
def layernorm_backward(dout, cache):
    xhat, rstd, gain = cache
    C = xhat.shape[-1]
    dxhat = dout * gain
    dx = rstd * (dxhat - dxhat.mean(axis=-1, keepdims=True) - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))
    return dx, (dout * xhat).sum(axis=0), dout.reshape(-1, C).sum(axis=0)  # dgain summed over the first axis only
'''
ATTENTION_WITHOUT_THE_SCALE = '''
from transformer import linear_backward, softmax_backward


def attention_backward(dout, cache):
    (q_cache, k_cache, v_cache), q, k, v, attn, out_cache = cache
    B, nh, T, hs = q.shape
    dmerged, dWo, dbo = linear_backward(dout, out_cache)
    dheads = dmerged.reshape(B, T, nh, hs).transpose(0, 2, 1, 3)
    dv = attn.swapaxes(-1, -2) @ dheads
    dscores = softmax_backward(dheads @ v.swapaxes(-1, -2), attn)  # not divided by sqrt(hs)
    dq, dk = dscores @ k, dscores.swapaxes(-1, -2) @ q
    rows = lambda d: d.transpose(0, 2, 1, 3).reshape(B, T, nh * hs)
    dx_q, dWq, dbq = linear_backward(rows(dq), q_cache)
    dx_k, dWk, dbk = linear_backward(rows(dk), k_cache)
    dx_v, dWv, dbv = linear_backward(rows(dv), v_cache)
    return dx_q + dx_k + dx_v, {"Wq": dWq, "bq": dbq, "Wk": dWk, "bk": dbk, "Wv": dWv, "bv": dbv,
                                "Wo": dWo, "bo": dbo}
'''
SOFTMAX_WITHOUT_THE_SUM = '''
def softmax_backward(dout, probs):
    return probs * dout  # the diagonal of the Jacobian alone
'''
CROSS_ENTROPY_INTO_ITS_CACHE = '''
import numpy as np


def cross_entropy_backward(cache):
    probs, targets = cache
    N = len(targets)
    probs[np.arange(N), targets] -= 1.0  # writes into the cache
    return probs / N
'''
EMBEDDING_WITH_FANCY_INDEXING = '''
def embed_backward(dX0, ids, grads):
    T, C = dX0.shape[-2:]
    grads["tok_emb"][ids.reshape(-1)] += dX0.reshape(-1, C)  # a repeated id keeps one row of dX0
    grads["pos_emb"][:T] += dX0.reshape(-1, T, C).sum(axis=0)
'''
LINEAR_DB_OVER_ONE_AXIS = '''
def linear_backward(dout, cache):
    x, W = cache
    n_in, n_out = W.shape
    return dout @ W.T, x.reshape(-1, n_in).T @ dout.reshape(-1, n_out), dout.sum(axis=0)  # db: the first axis only
'''
GELU_WITHOUT_THE_FIRST_TERM = '''
from transformer import GELU_CUBIC, GELU_SCALE


def gelu_backward(dout, cache):
    x, tanh_u = cache
    du_dx = GELU_SCALE * (1.0 + 3.0 * GELU_CUBIC * x * x)
    return dout * 0.5 * x * (1.0 - tanh_u * tanh_u) * du_dx  # 0.5 (1 + tanh u) left out
'''
CROSS_ENTROPY_WITHOUT_THE_MEAN = '''
import numpy as np


def cross_entropy_backward(cache):
    probs, targets = cache
    dlogits = probs.copy()
    dlogits[np.arange(len(targets)), targets] -= 1.0  # not divided by N
    return dlogits
'''
ATTENTION_WITH_THE_SOFTMAX_DIAGONAL = '''
import math

from transformer import linear_backward


def attention_backward(dout, cache):
    (q_cache, k_cache, v_cache), q, k, v, attn, out_cache = cache
    B, nh, T, hs = q.shape
    dmerged, dWo, dbo = linear_backward(dout, out_cache)
    dheads = dmerged.reshape(B, T, nh, hs).transpose(0, 2, 1, 3)
    dv = attn.swapaxes(-1, -2) @ dheads
    dscores = attn * (dheads @ v.swapaxes(-1, -2)) / math.sqrt(hs)  # the softmax's diagonal alone
    dq, dk = dscores @ k, dscores.swapaxes(-1, -2) @ q
    rows = lambda d: d.transpose(0, 2, 1, 3).reshape(B, T, nh * hs)
    dx_q, dWq, dbq = linear_backward(rows(dq), q_cache)
    dx_k, dWk, dbk = linear_backward(rows(dk), k_cache)
    dx_v, dWv, dbv = linear_backward(rows(dv), v_cache)
    return dx_q + dx_k + dx_v, {"Wq": dWq, "bq": dbq, "Wk": dWk, "bk": dbk, "Wv": dWv, "bv": dbv,
                                "Wo": dWo, "bo": dbo}
'''
LAYERNORM_INTO_ITS_DOUT = '''
def layernorm_backward(dout, cache):
    xhat, rstd, gain = cache
    C = xhat.shape[-1]
    dgain = (dout * xhat).reshape(-1, C).sum(axis=0)
    dshift = dout.reshape(-1, C).sum(axis=0)
    dxhat = dout
    dxhat *= gain  # the right math, but written into dout
    dx = dxhat - dxhat.mean(axis=-1, keepdims=True)
    dx -= xhat * (dxhat * xhat).mean(axis=-1, keepdims=True)
    dx *= rstd
    return dx, dgain, dshift
'''
LINEAR_DW_TURNED_ROUND = '''
def linear_backward(dout, cache):
    x, W = cache
    n_in, n_out = W.shape
    dW = dout.reshape(-1, n_out).T @ x.reshape(-1, n_in)  # the product's operands swapped: (n_out, n_in)
    return dout @ W.T, dW, dout.reshape(-1, n_out).sum(axis=0)
'''
GELU_WITHOUT_THE_HALF = '''
from transformer import GELU_CUBIC, GELU_SCALE


def gelu_backward(dout, cache):
    x, tanh_u = cache
    du_dx = GELU_SCALE * (1.0 + 3.0 * GELU_CUBIC * x * x)
    return dout * ((1.0 + tanh_u) + x * (1.0 - tanh_u * tanh_u) * du_dx)  # the forward's 0.5 forgotten
'''
# Common mistakes, each a learner's whole file: (exercise, source, the tensors whose rows fail, and the
# start of the hint gradcheck prints under a row, for the rows that get one).
MISTAKES = {
    "linear, db over one axis": ("linear", LINEAR_DB_OVER_ONE_AXIS, {"b"},
                                 {"b": "(3, 5) keeps the leading axes (3,): sum over every row"}),
    "linear, dW turned round": ("linear", LINEAR_DW_TURNED_ROUND, {"W"},
                                {"W": "(5, 4) is (4, 5) turned round: a transpose missing"}),
    "gelu without 0.5 (1 + tanh u)": ("gelu", GELU_WITHOUT_THE_FIRST_TERM, {"x"}, {}),
    "gelu without the forward's 0.5": ("gelu", GELU_WITHOUT_THE_HALF, {"x"},
                                       {"x": "yours is 2 times the measured gradient in every entry"}),
    "cross-entropy without / N": ("cross_entropy", CROSS_ENTROPY_WITHOUT_THE_MEAN, {"logits"},
                                  {"logits": "yours is 6 times the measured gradient in every entry"}),
    "layernorm without - mean(dxhat)": ("layernorm", LAYERNORM_WITHOUT_THE_MEAN, {"x"},
                                        {"x": "each row of the measured gradient sums to 0, yours do not"}),
    "layernorm, dgain over one axis": ("layernorm", LAYERNORM_DGAIN_OVER_ONE_AXIS, {"gain"},
                                       {"gain": "(3, 6) keeps the leading axes (3,)"}),
    "layernorm, right but into its dout": ("layernorm", LAYERNORM_INTO_ITS_DOUT, {"(cache)", "(repeat)"}, {}),
    "attention without / sqrt(hs)": ("attention", ATTENTION_WITHOUT_THE_SCALE, {"x", "Wq", "bq", "Wk"},
                                     dict.fromkeys(("Wq", "bq", "Wk"), "yours is √2 times the measured gradient")),
    "attention with the softmax's diagonal alone": ("attention", ATTENTION_WITH_THE_SOFTMAX_DIAGONAL,
                                                    {"x", "Wq", "bq", "Wk", "bk"},
                                                    {"bk": "the measured gradient is 0 in every entry"}),
    "softmax without the row's sum": ("softmax", SOFTMAX_WITHOUT_THE_SUM, {"x"},
                                      {"x": "each row of the measured gradient sums to 0, yours do not"}),
    "cross-entropy into its cache": ("cross_entropy", CROSS_ENTROPY_INTO_ITS_CACHE, {"(cache)", "(repeat)"}, {}),
    "embedding with += on repeated ids": ("embedding", EMBEDDING_WITH_FANCY_INDEXING, {"tok_emb"},
                                          {"tok_emb": "only rows 0, 2, 3 are wrong, the other rows agree"}),
}


@pytest.mark.parametrize("mistake", MISTAKES)
def test_a_wrong_backward_fails_on_the_rows_of_the_tensors_it_gets_wrong_with_its_hint(mistake, tmp_path, capsys):
    name, source, wrong, hinted = MISTAKES[mistake]
    status, out, err = judge(name, source, tmp_path, capsys)
    assert status == 1
    rows = table_rows(out)
    assert {tensor for tensor, result in rows.items() if "FAIL" in result} == wrong, out
    assert set(hints(out)) == set(hinted), out
    assert all(hints(out)[tensor].startswith(start) for tensor, start in hinted.items()), out
    assert f"fix {function_of(name)} in {tmp_path / name}.py, then run this again" in err


PASSING = re.compile(r"\d\.\de-\d\d(?=  pass$)", re.M)  # a passing row's error: rounding, which varies by CPU


def rounding_masked(text):
    """A table with each passing row's error, rounding noise below 1e-6, as `~`: the rest compares exactly."""
    return PASSING.sub("~", text)


@pytest.mark.parametrize("mistake", MISTAKES)
def test_the_page_shows_the_table_each_mistake_gives(mistake, tmp_path, capsys):
    name, source, *_ = MISTAKES[mistake]
    _, out, _ = judge(name, source, tmp_path, capsys)
    table = "\n".join(line for line in out.splitlines()
                      if line.endswith(("pass", "FAIL")) or "FAIL:" in line or line.lstrip().startswith("hint:"))
    page = PAGE.read_text(encoding="utf-8")
    assert rounding_masked(table) in rounding_masked(page), f"docs/exercises.md should show, for {mistake}:\n{table}"
    assert all(float(error) < gradcheck.TOLERANCE for error in PASSING.findall(page))


def test_the_page_says_what_a_right_backward_gets():
    errors = {layer: gradcheck.check(layer) for layer in gradcheck.CHECKS}
    # every tensor but the key biases, whose true gradient is 0 and is judged by its size
    measured = lambda layers: [error for layer in layers for tensor, error in errors[layer].items()
                               if not tensor.endswith("bk")]
    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    # the page states bounds, not the digits, which are rounding and vary from one CPU to another
    assert "below 1e-9 on each of the seven layers of the exercises, below 1e-8 on the block, and below 5e-7" in text
    assert max(measured(gradcheck.EXERCISES.values())) < 1e-9
    assert max(measured(["block"])) < 1e-8 and max(measured(["model"])) < 5e-7
    assert max(errors[layer][tensor] for layer in errors for tensor in errors[layer] if tensor.endswith("bk")) < 1e-15


def test_a_wrong_shape_is_named_with_both_shapes(tmp_path, capsys):
    _, out, err = judge("layernorm", LAYERNORM_DGAIN_OVER_ONE_AXIS, tmp_path, capsys)
    assert table_rows(out)["gain"] == "shape (3, 6), expected (6,)  FAIL"
    assert "layernorm_backward (layernorm) gives gain a gradient of the wrong shape: (3, 6), expected (6,)" in err


def test_a_shape_error_in_the_learners_code_keeps_its_traceback(tmp_path):
    # the row's sum without keepdims=True: (2, 3) against (2, 3, 5), NumPy's error, at the learner's line
    (tmp_path / "softmax.py").write_text("def softmax_backward(dout, probs):\n"
                                         "    return probs * (dout - (dout * probs).sum(axis=-1))\n")
    result = subprocess.run([sys.executable, "gradcheck.py", "--exercise", "softmax", "--exercises-dir", str(tmp_path)],
                            cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert [line for line in lines if line.startswith("  File ")][-1] == \
        f'  File "{tmp_path / "softmax.py"}", line 2, in softmax_backward'
    assert lines[-1].startswith("ValueError: operands could not be broadcast together with shapes (2,3,5) (2,3)")


def test_the_command_line(tmp_path):
    stub = subprocess.run([sys.executable, "gradcheck.py", "--exercise", "layernorm"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert (stub.returncode, stub.stdout) == (1, "")
    assert stub.stderr.count("\n") == 1 and "layernorm_backward is not written yet" in stub.stderr
    listed = subprocess.run([sys.executable, "gradcheck.py", "--exercise"], cwd=REPO, capture_output=True, text=True,
                            timeout=60)
    assert listed.returncode == 0
    assert [line.split()[0] for line in listed.stdout.splitlines() if line.startswith("  ")] == list(gradcheck.EXERCISES)
    assert "  layernorm      layernorm_backward      exercises/layernorm.py" in listed.stdout
    assert ("derive (--track derive): exercises/derive/NAME.py gives only the shapes and the page to read"
            in listed.stdout)
    derive = subprocess.run([sys.executable, "gradcheck.py", "--exercise", "--track", "derive"], cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    assert "  layernorm      layernorm_backward      exercises/derive/layernorm.py" in derive.stdout
    no_track = subprocess.run([sys.executable, "gradcheck.py", "--exercise", "gelu", "--track", "guess"], cwd=REPO,
                              capture_output=True, text=True, timeout=60)
    assert (no_track.returncode, no_track.stdout) == (2, "")
    assert no_track.stderr == "gradcheck.py: no track 'guess'; the tracks are: guided, derive\n"
    unknown = subprocess.run([sys.executable, "gradcheck.py", "--exercise", "mlp"], cwd=REPO, capture_output=True,
                             text=True, timeout=60)
    assert (unknown.returncode, unknown.stdout) == (2, "")
    assert unknown.stderr == ("gradcheck.py: no exercise 'mlp'; the exercises are: linear, gelu, softmax, "
                              "cross_entropy, embedding, layernorm, attention\n")


def test_a_missing_file_or_function_is_one_line(tmp_path, capsys):
    assert gradcheck.main(["--exercise", "gelu", "--exercises-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"gradcheck.py: there is no {tmp_path / 'gelu.py'}; "
                                       f"`git checkout exercises/gelu.py` brings back its stub\n")
    assert gradcheck.main(["--exercise", "gelu", "--track", "derive", "--exercises-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"gradcheck.py: there is no {tmp_path / 'gelu.py'}; "
                                       f"`git checkout exercises/derive/gelu.py` brings back its stub\n")
    status, _, err = judge("gelu", "def gelu(dout, cache):\n    return dout\n", tmp_path, capsys)
    assert status == 2
    assert err == (f"gradcheck.py: {tmp_path / 'gelu.py'} defines no gelu_backward: write `def gelu_backward` "
                   f"with the stub's signature\n")
