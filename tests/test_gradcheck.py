"""Every backward pass against central differences, in float64: gradcheck.py's checks, as a learner
runs them (`python gradcheck.py`), plus the facts about particular gradients worth a test of their own.

Each layer on its own: f = sum(forward(x) * dout) has gradient dout on the layer's output, so
the layer's backward with that dout must equal the numerical gradient of f, input and parameters;
and the backward must be a pure function of its arguments. Then the whole loss_and_grads on the
tiny model, every parameter, every entry.
"""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gradcheck
import transformer
from gradcheck import TOLERANCE, block_inputs, check, check_params, numerical_grad, relative_error
from transformer import (attention_backward, attention_forward, cross_entropy_backward, cross_entropy_forward,
                         gelu_forward, loss_and_grads)

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("layer", gradcheck.CHECKS)
def test_backward_agrees_with_central_differences(layer):
    errors = check(layer)
    worst = max(errors, key=errors.get)
    assert errors[worst] < TOLERANCE, f"{gradcheck.CHECKS[layer][0]}: {worst} {errors[worst]:.2e}"


def test_the_model_check_covers_every_parameter(tiny_cfg, tiny_params):
    assert list(check("model")) == list(tiny_params)
    assert len(tiny_params) == 38


def test_attention_is_causal_in_its_gradient():
    rng = np.random.default_rng(3)
    p = block_inputs(rng)
    x = rng.normal(size=(1, 5, 4))
    out, cache = attention_forward(x, p, num_heads=2)
    dout = np.zeros_like(out)
    dout[0, 2] = 1.0  # a loss on position 2 alone
    dx, _ = attention_backward(dout, cache)
    assert np.all(dx[0, 3:] == 0)  # positions 3 and 4 were never read by position 2
    assert np.all(np.abs(dx[0, :3]).sum(axis=-1) > 0)


def test_gelu_known_values():
    y, _ = gelu_forward(np.array([0.0, 1.0, -1.0, 10.0]))
    # 0.5 * 1 * (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.8411919906...
    assert np.allclose(y, [0.0, 0.8411919906082768, -0.15880800939172324, 10.0], rtol=0, atol=1e-12)


def test_cross_entropy_by_hand():
    # two equal logits: p = 1/2 each, loss = log 2; dlogits = (p - onehot) / N = [-1/2, 1/2] / 1
    loss, cache = cross_entropy_forward(np.array([[3.0, 3.0]]), np.array([0]))
    assert np.isclose(loss, np.log(2), rtol=0, atol=1e-15)
    assert np.allclose(cross_entropy_backward(cache), [[-0.5, 0.5]], rtol=0, atol=1e-15)


def test_cross_entropy_is_stable_for_huge_logits():
    loss, cache = cross_entropy_forward(np.array([[1000.0, 0.0], [0.0, -1000.0]]), np.array([0, 1]))
    assert np.isclose(loss, 500.0)  # (0 + 1000) / 2, with no overflow to inf or nan
    assert np.all(np.isfinite(cross_entropy_backward(cache)))


def test_unread_positions_get_no_gradient(tiny_cfg, tiny_params, tiny_batch):
    ids, targets = tiny_batch
    _, grads = loss_and_grads(tiny_params, ids, targets, tiny_cfg)
    assert np.all(grads["pos_emb"][5:] == 0)  # T = 5: the last three rows are never read
    assert np.any(grads["pos_emb"][:5] != 0)


def test_key_bias_gets_no_gradient(tiny_cfg, tiny_params, tiny_batch):
    # score_ij = q_i . (k_j + bk) = q_i . k_j + q_i . bk: bk adds the same number to every score in
    # row i, and softmax ignores a constant added to a row. So dL/dbk is exactly 0, and a relative
    # error would only compare rounding noise with rounding noise. Check that both are 0 instead.
    ids, targets = tiny_batch
    _, grads = loss_and_grads(tiny_params, ids, targets, tiny_cfg)
    loss = lambda: loss_and_grads(tiny_params, ids, targets, tiny_cfg)[0]
    for name in ("block0.bk", "block1.bk"):
        assert np.max(np.abs(grads[name])) < 1e-14, name
        assert np.max(np.abs(numerical_grad(loss, tiny_params[name]))) < 1e-9, name
    assert np.max(np.abs(grads["block0.bq"])) > 1e-3  # the query bias is not so lucky


def test_whole_model_single_sequence(tiny_cfg, tiny_params):
    ids, targets = np.array([3, 3, 1, 0]), np.array([3, 1, 0, 6])
    _, grads = loss_and_grads(tiny_params, ids, targets, tiny_cfg)
    subset = {k: tiny_params[k] for k in ("tok_emb", "block1.Wk", "block0.b1", "lnf_gain", "W_out")}
    errors = check_params(lambda: loss_and_grads(tiny_params, ids, targets, tiny_cfg)[0], subset, grads)
    assert max(errors.values()) < TOLERANCE, errors


def test_numerical_grad_restores_its_input():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    grad = numerical_grad(lambda: float((x * x * x).sum()), x)
    assert np.array_equal(x, [[1.0, 2.0], [3.0, 4.0]])
    assert np.allclose(grad, 3 * x * x, rtol=1e-9)


def test_numerical_grad_refuses_float32():
    x = np.ones(3, dtype=np.float32)
    with pytest.raises(AssertionError, match="float64, got float32"):
        numerical_grad(lambda: float(x.sum()), x)


def test_relative_error_catches_a_wrong_gradient(tiny_cfg, tiny_params, tiny_batch):
    ids, targets = tiny_batch
    _, grads = loss_and_grads(tiny_params, ids, targets, tiny_cfg)
    grads["block0.Wv"][1, 2] *= 1.001  # a gradient off by 0.1% in one entry
    errors = check_params(lambda: loss_and_grads(tiny_params, ids, targets, tiny_cfg)[0],
                          {"block0.Wv": tiny_params["block0.Wv"]}, grads)
    assert errors["block0.Wv"] > TOLERANCE


def test_a_zero_gradient_must_be_zero():
    # the numerical gradient is rounding noise around 0: the backward's own entries are the error
    assert gradcheck.gradient_error(np.array([0.0, 1e-17]), np.array([3e-12, -1e-12])) == 1e-17
    assert gradcheck.gradient_error(np.array([0.0, 0.5]), np.array([3e-12, -1e-12])) == 0.5
    assert gradcheck.gradient_error(np.array([1.0, 0.0]), np.array([1.0, 1e-9])) == 1e-9


# --- the learner's tool: a backward made wrong on purpose -----------------------------------------

def layernorm_backward_without_the_mean(dout, cache):
    """layernorm_backward with one term dropped: the path through the mean, - mean(dxhat)."""
    xhat, rstd, gain = cache
    dxhat = dout * gain
    dx = rstd * (dxhat - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))
    return dx, (dout * xhat).reshape(-1, xhat.shape[-1]).sum(axis=0), dout.reshape(-1, xhat.shape[-1]).sum(axis=0)


def layernorm_backward_that_uses_up_its_cache(dout, cache):
    """The right gradient the first time; but it scales the cached xhat in place, so not the second."""
    dx, dgain, dshift = transformer_layernorm_backward(dout, cache)
    cache[0][...] *= 2.0
    return dx, dgain, dshift


def layernorm_backward_with_dgain_per_position(dout, cache):
    """The right dx and dshift, but dgain summed over the first axis only: (T, C), where it should be (C,)."""
    dx, _, dshift = transformer_layernorm_backward(dout, cache)
    return dx, (dout * cache[0]).sum(axis=0), dshift


transformer_layernorm_backward = transformer.layernorm_backward


def test_a_dropped_term_fails_its_layer_and_the_layers_built_on_it(monkeypatch, capsys):
    monkeypatch.setattr(transformer, "layernorm_backward", layernorm_backward_without_the_mean)
    assert gradcheck.main([]) == 1
    out, err = capsys.readouterr()
    results = {line.split()[0]: line for line in out.splitlines() if line.split() and line.split()[0] in gradcheck.CHECKS}
    for passing in ("embedding", "linear", "softmax", "attention", "gelu", "mlp", "loss"):
        assert results[passing].endswith("pass"), results[passing]
    assert "layernorm_backward (layernorm) gives a wrong gradient for x" in err
    assert "block_backward (block)" in err and "loss_and_grads (model)" in err
    assert f"3 of {len(gradcheck.CHECKS)} failed" in err  # the modern family has no layer norm


def test_a_backward_that_writes_into_its_cache_fails(monkeypatch, capsys):
    monkeypatch.setattr(transformer, "layernorm_backward", layernorm_backward_that_uses_up_its_cache)
    assert gradcheck.main(["layernorm"]) == 1
    out, err = capsys.readouterr()
    assert "FAIL: it wrote into its cache or its dout" in out
    assert "layernorm_backward (layernorm) is not a pure function of its arguments" in err


def layernorm_backward_into_its_dout(dout, cache):
    """The right math, but dxhat is dout itself, scaled in place: it writes into its dout."""
    xhat, rstd, gain = cache
    dgain, dshift = (dout * xhat).reshape(-1, 6).sum(axis=0), dout.reshape(-1, 6).sum(axis=0)
    dxhat = dout
    dxhat *= gain
    dx = rstd * (dxhat - dxhat.mean(axis=-1, keepdims=True) - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))
    return dx, dgain, dshift


def linear_backward_into_its_cache(dout, cache):
    """The right gradients, then the cached x, the forward's own input, scaled in place."""
    dx, dW, db = transformer.linear_backward(dout, cache)
    cache[0][...] *= 2.0
    return dx, dW, db


@pytest.mark.parametrize("layer, backward", [("layernorm", layernorm_backward_into_its_dout),
                                             ("linear", linear_backward_into_its_cache)])
def test_a_right_backward_that_writes_into_its_arguments_fails_only_the_purity_rows(layer, backward):
    # it gets copies of dout and of the cache: the loss is measured with the dout it was handed, and the
    # inputs nudged are the forward's own, so its gradients pass and only the purity rows fail
    errors = check(layer, backward=backward)
    assert {name for name, error in errors.items() if not error < TOLERANCE} == {"(cache)", "(repeat)"}, errors
    assert check(layer) == {name: error for name, error in errors.items() if not name.startswith("(")}


def test_a_right_backward_gets_no_hint():
    for layer in gradcheck.CHECKS:
        assert all(getattr(error, "hint", None) is None for error in check(layer).values()), layer


def test_a_gradient_of_the_wrong_shape_is_named_with_both_shapes(monkeypatch, capsys):
    monkeypatch.setattr(transformer, "layernorm_backward", layernorm_backward_with_dgain_per_position)
    assert gradcheck.main(["layernorm"]) == 1
    out, err = capsys.readouterr()
    rows = [" ".join(line.split()) for line in out.splitlines()]
    assert "layernorm layernorm_backward x 3.9e-11 pass" in rows
    assert "gain shape (3, 6), expected (6,) FAIL" in rows  # not a number: (3, 6) broadcasts against (6,)
    assert "layernorm_backward (layernorm) gives gain a gradient of the wrong shape: (3, 6), expected (6,)" in err
    # the whole model carries the wrong shape into each layer norm's gain, and says so for each
    errors = check("model")
    assert [name for name, error in errors.items() if not error < TOLERANCE] == [
        "block0.ln1_gain", "block0.ln2_gain", "block1.ln1_gain", "block1.ln2_gain", "lnf_gain"]
    assert str(errors["lnf_gain"]) == "shape (5, 4), expected (4,)"


def test_a_missing_gradient_is_named(capsys):
    errors = check("linear", backward=lambda dout, cache: transformer.linear_backward(dout, cache)[:2])
    assert errors["x"] < TOLERANCE and errors["W"] < TOLERANCE
    assert str(errors["b"]) == "missing, expected shape (5,)" and not errors["b"] < TOLERANCE


def test_a_backward_handed_to_check_replaces_the_projects():
    assert check("layernorm", backward=transformer.layernorm_backward) == check("layernorm")
    errors = check("layernorm", backward=layernorm_backward_without_the_mean)
    assert errors["x"] > 1e-2 and errors["gain"] < TOLERANCE and errors["shift"] < TOLERANCE


def test_the_command_line(tmp_path):
    result = subprocess.run([sys.executable, "gradcheck.py"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"all {len(gradcheck.CHECKS)} checked: every gradient agrees" in result.stdout
    assert "FAIL" not in result.stdout
    one = subprocess.run([sys.executable, "gradcheck.py", "gelu"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert one.returncode == 0 and "gelu_backward" in one.stdout and "attention" not in one.stdout
    bad = subprocess.run([sys.executable, "gradcheck.py", "nosuchlayer"], cwd=REPO, capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr == ("gradcheck.py: no layer 'nosuchlayer'; the layers are: embedding, linear, layernorm, "
                          "softmax, attention, gelu, mlp, block, loss, model, rmsnorm, rope, repeat_kv, gqa, swiglu, "
                          "mod_block, mod_model\n")


def test_pytest_runs_the_math_first_and_the_docs_last():
    # so that `pytest -x` after an edit to a backward stops here, not at a page quoting the changed line
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    files = [line.split("::")[0] for line in result.stdout.splitlines() if "::" in line]
    order = list(dict.fromkeys(files))
    assert order[0] == "tests/test_gradcheck.py", order
    assert order.index("tests/test_docs.py") > order.index("tests/test_train.py")
    assert all(name.rsplit("/", 1)[-1] in ("test_docs.py", "test_figures.py", "test_widgets.py", "test_site.py")
               for name in order[order.index("tests/test_docs.py"):]), order


def test_an_unknown_option_is_named_as_an_option(capsys):
    assert gradcheck.main(["--bogus"]) == 2
    assert capsys.readouterr().err == "gradcheck.py: unrecognized arguments: --bogus (see --help)\n"
