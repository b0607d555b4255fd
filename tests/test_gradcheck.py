"""Every backward pass against central differences, in float64.

Each layer on its own: f = sum(forward(x) * dout) has gradient dout on the layer's output, so
the layer's backward with that dout must equal the numerical gradient of f, input and parameters.
Then the whole loss_and_grads on the tiny model, every parameter, every entry.
"""

import numpy as np
import pytest

from gradcheck import check_params, numerical_grad, relative_error
from transformer import (attention_forward, attention_backward, block_backward, block_forward,
                         cross_entropy_backward, cross_entropy_forward, gelu_backward, gelu_forward,
                         layernorm_backward, layernorm_forward, linear_backward, linear_forward, loss_and_grads,
                         mlp_backward, mlp_forward, softmax, softmax_backward)

TOLERANCE = 1e-6  # worst relative error allowed; a right backward gets about 1e-9 or better


@pytest.fixture
def rng():
    return np.random.default_rng(3)


def check_layer(forward_fn, backward_fn, inputs, rng):
    """Check a layer's backward for every array in `inputs` (a dict); returns the worst relative error.

    forward_fn() reads the arrays in `inputs` by reference and returns (out, cache);
    backward_fn(dout, cache) returns a dict {name: gradient} for the same names.
    """
    out, cache = forward_fn()
    dout = rng.normal(size=out.shape)
    analytic = backward_fn(dout, cache)
    f = lambda: float((forward_fn()[0] * dout).sum())
    errors = {name: relative_error(analytic[name], numerical_grad(f, x)) for name, x in inputs.items()}
    assert max(errors.values()) < TOLERANCE, errors
    return max(errors.values())


def test_linear(rng):
    x, W, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 5)), rng.normal(size=5)
    check_layer(lambda: linear_forward(x, W, b),
                lambda d, c: dict(zip("xWb", linear_backward(d, c))), {"x": x, "W": W, "b": b}, rng)


def test_layernorm(rng):
    x, gain, shift = rng.normal(size=(2, 3, 6)), rng.normal(size=6), rng.normal(size=6)
    check_layer(lambda: layernorm_forward(x, gain, shift, 1e-5),
                lambda d, c: dict(zip(("x", "gain", "shift"), layernorm_backward(d, c))),
                {"x": x, "gain": gain, "shift": shift}, rng)


def test_softmax(rng):
    x = rng.normal(size=(2, 3, 5))
    # both overwrite their first argument, so each gets a copy
    check_layer(lambda: (softmax(x.copy()),) * 2, lambda d, probs: {"x": softmax_backward(d.copy(), probs)}, {"x": x},
                rng)


def test_gelu(rng):
    x = rng.normal(scale=2.0, size=(3, 7))
    check_layer(lambda: gelu_forward(x), lambda d, c: {"x": gelu_backward(d, c)}, {"x": x}, rng)


def test_gelu_known_values():
    y, _ = gelu_forward(np.array([0.0, 1.0, -1.0, 10.0]))
    # 0.5 * 1 * (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.8411919906...
    assert np.allclose(y, [0.0, 0.8411919906082768, -0.15880800939172324, 10.0], rtol=0, atol=1e-12)


def block_inputs(rng, C=4, F=8):
    shapes = {"ln1_gain": (C,), "ln1_shift": (C,), "Wq": (C, C), "bq": (C,), "Wk": (C, C), "bk": (C,),
              "Wv": (C, C), "bv": (C,), "Wo": (C, C), "bo": (C,), "ln2_gain": (C,), "ln2_shift": (C,),
              "W1": (C, F), "b1": (F,), "W2": (F, C), "b2": (C,)}
    return {name: rng.normal(scale=0.5, size=shape) for name, shape in shapes.items()}


def test_attention(rng):
    p = block_inputs(rng)
    x = rng.normal(size=(2, 5, 4))
    used = {k: p[k] for k in ("Wq", "bq", "Wk", "Wv", "bv", "Wo", "bo")}  # bk: see test_key_bias_gets_no_gradient

    def backward(dout, cache):
        dx, grads = attention_backward(dout, cache)
        return {"x": dx, **grads}
    check_layer(lambda: attention_forward(x, p, num_heads=2), backward, {"x": x, **used}, rng)


def test_attention_is_causal_in_its_gradient(rng):
    p = block_inputs(rng)
    x = rng.normal(size=(1, 5, 4))
    out, cache = attention_forward(x, p, num_heads=2)
    dout = np.zeros_like(out)
    dout[0, 2] = 1.0  # a loss on position 2 alone
    dx, _ = attention_backward(dout, cache)
    assert np.all(dx[0, 3:] == 0)  # positions 3 and 4 were never read by position 2
    assert np.all(np.abs(dx[0, :3]).sum(axis=-1) > 0)


def test_mlp(rng):
    p = block_inputs(rng)
    x = rng.normal(size=(2, 3, 4))

    def backward(dout, cache):
        dx, grads = mlp_backward(dout, cache)
        return {"x": dx, **grads}
    check_layer(lambda: mlp_forward(x, p), backward, {"x": x, **{k: p[k] for k in ("W1", "b1", "W2", "b2")}}, rng)


def test_block(tiny_cfg, rng):
    p = block_inputs(rng)
    x = rng.normal(size=(2, 5, 4))

    def backward(dout, cache):
        dx, grads = block_backward(dout, cache)
        return {"x": dx, **grads}
    checked = {k: v for k, v in p.items() if k != "bk"}  # see test_key_bias_gets_no_gradient
    check_layer(lambda: block_forward(x, p, tiny_cfg), backward, {"x": x, **checked}, rng)


def test_cross_entropy(rng):
    logits, targets = rng.normal(size=(6, 5)), np.array([0, 4, 4, 1, 2, 3])
    loss, cache = cross_entropy_forward(logits, targets)
    numeric = numerical_grad(lambda: cross_entropy_forward(logits, targets)[0], logits)
    assert relative_error(cross_entropy_backward(cache), numeric) < TOLERANCE


def test_cross_entropy_by_hand():
    # two equal logits: p = 1/2 each, loss = log 2; dlogits = (p - onehot) / N = [-1/2, 1/2] / 1
    loss, cache = cross_entropy_forward(np.array([[3.0, 3.0]]), np.array([0]))
    assert np.isclose(loss, np.log(2), rtol=0, atol=1e-15)
    assert np.allclose(cross_entropy_backward(cache), [[-0.5, 0.5]], rtol=0, atol=1e-15)


def test_cross_entropy_is_stable_for_huge_logits():
    loss, cache = cross_entropy_forward(np.array([[1000.0, 0.0], [0.0, -1000.0]]), np.array([0, 1]))
    assert np.isclose(loss, 500.0)  # (0 + 1000) / 2, with no overflow to inf or nan
    assert np.all(np.isfinite(cross_entropy_backward(cache)))


def test_whole_model_every_parameter_every_entry(tiny_cfg, tiny_params, tiny_batch):
    ids, targets = tiny_batch
    loss, grads = loss_and_grads(tiny_params, ids, targets, tiny_cfg)
    checked = {k: v for k, v in tiny_params.items() if not k.endswith(".bk")}  # see test_key_bias_gets_no_gradient
    errors = check_params(lambda: loss_and_grads(tiny_params, ids, targets, tiny_cfg)[0], checked, grads)
    assert len(errors) == 36
    worst = max(errors, key=errors.get)
    assert errors[worst] < TOLERANCE, f"{worst}: {errors[worst]:.2e}"
    assert np.all(grads["pos_emb"][5:] == 0)  # T = 5: the last three rows are never read


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


def test_relative_error_catches_a_wrong_gradient(tiny_cfg, tiny_params, tiny_batch):
    ids, targets = tiny_batch
    _, grads = loss_and_grads(tiny_params, ids, targets, tiny_cfg)
    grads["block0.Wv"][1, 2] *= 1.001  # a gradient off by 0.1% in one entry
    errors = check_params(lambda: loss_and_grads(tiny_params, ids, targets, tiny_cfg)[0],
                          {"block0.Wv": tiny_params["block0.Wv"]}, grads)
    assert errors["block0.Wv"] > TOLERANCE
