"""The worked examples of docs/05-block.md, docs/06-output.md and docs/07-model.md, number for number.

Each test holds the numbers its page shows, with the hand derivation in comments, so that a reader
can check the page with a pencil and the test fails if the code stops computing them.
"""

import math

import numpy as np

from gradcheck import numerical_grad, relative_error
from transformer import (ModelConfig, block_backward, block_forward, block_params,
                         cross_entropy_backward, cross_entropy_forward, flat_buffer, forward, init_params,
                         layernorm_forward, linear_backward, linear_forward, loss_and_grads, pack, param_shapes)

SQRT_3_2 = math.sqrt(1.5)  # 1 / sqrt(var) for the row [1, 2, 3]: var = (1 + 0 + 1) / 3 = 2/3


# --- docs/05-block.md ------------------------------------------------------------------------

def residual_block():
    """One block of width 3 with one head, whose attention branch is the layer norm alone.

    Wv = Wo = I and every other matrix and bias 0, LN gains 1. With one position, softmax over one
    key is 1, so attention returns v = LN1(x) Wv + bv = LN1(x). W2 = 0 turns the MLP branch off.
    The block is then out = x + LN1(x).
    """
    cfg = ModelConfig(vocab_size=1, context_len=1, emb_dim=3, num_heads=1, num_layers=1, ff_dim=2, ln_eps=1e-5)
    p = block_params(init_params(cfg, np.random.default_rng(0)), 0)
    p["Wv"][...] = p["Wo"][...] = np.eye(3)
    p["Wq"][...] = p["Wk"][...] = p["W1"][...] = p["W2"][...] = 0
    return cfg, p


def test_block_residual_worked_example():
    cfg, p = residual_block()
    x = np.array([[[1.0, 2.0, 3.0]]])
    # LN1(x): mean 2, centred [-1, 0, 1], variance 2/3, so xhat = [-1, 0, 1] * sqrt(3/2)
    h1, _ = layernorm_forward(x, p["ln1_gain"], p["ln1_shift"], cfg.ln_eps)
    assert np.allclose(h1, [[[-SQRT_3_2, 0.0, SQRT_3_2]]], rtol=0, atol=1e-5)
    assert np.allclose(h1, [[[-1.2247, 0.0, 1.2247]]], rtol=0, atol=5e-5)
    # out = x + LN1(x) = [1 - 1.2247, 2 + 0, 3 + 1.2247]
    out, cache = block_forward(x, p, cfg)
    assert np.allclose(out, [[[-0.2247, 2.0, 4.2247]]], rtol=0, atol=5e-5)
    dout = np.array([[[1.0, 0.0, 0.0]]])
    # Two paths from x to out. The residual hands dout over unchanged: [1, 0, 0]. The branch gives
    # the layer norm's backward of dout, rstd (g - mean(g) - xhat mean(g xhat)) with g = [1, 0, 0]:
    # mean(g) = 1/3, mean(g xhat) = -sqrt(3/2)/3, xhat mean(g xhat) = [1/2, 0, -1/2], so
    # sqrt(3/2) ([1, 0, 0] - 1/3 - [1/2, 0, -1/2]) = sqrt(3/2) [1/6, -1/3, 1/6] = [0.2041, -0.4082, 0.2041]
    dx, grads = block_backward(dout, cache)
    branch = SQRT_3_2 * np.array([1 / 6, -1 / 3, 1 / 6])
    assert np.allclose(dx - dout, [[branch]], rtol=0, atol=5e-5)
    assert np.allclose(dx - dout, [[[0.2041, -0.4082, 0.2041]]], rtol=0, atol=5e-5)
    assert np.allclose(dx, [[[1.2041, -0.4082, 0.2041]]], rtol=0, atol=5e-5)  # the two paths added
    assert abs((dx - dout).sum()) < 1e-12  # a layer norm's input gradient always sums to 0 over a row


def test_block_with_both_branches_off_is_the_identity_both_ways():
    cfg, p = residual_block()
    p["Wo"][...] = 0  # the attention branch now returns bo = 0 too
    x = np.array([[[1.0, 2.0, 3.0]]])
    out, cache = block_forward(x, p, cfg)
    assert np.array_equal(out, x)
    dx, _ = block_backward(np.array([[[1.0, 0.0, 0.0]]]), cache)
    assert np.array_equal(dx, [[[1.0, 0.0, 0.0]]])  # only the residual path carries the gradient


# --- docs/06-output.md -----------------------------------------------------------------------

def test_cross_entropy_one_row_by_hand():
    logits = np.array([[1.0, 2.0, 3.0]])
    targets = np.array([2])
    # shifted = logits - max = [-2, -1, 0]; exp = [0.1353, 0.3679, 1]; their sum 1.5032
    # probs = exp / sum = [0.0900, 0.2447, 0.6652]; loss = log 1.5032 - shifted[2] = 0.4076 - 0
    loss, cache = cross_entropy_forward(logits, targets)
    probs, _ = cache
    assert np.allclose(probs, [[0.0900, 0.2447, 0.6652]], rtol=0, atol=5e-5)
    assert np.isclose(loss, 0.4076, rtol=0, atol=5e-5)
    assert np.isclose(loss, -np.log(probs[0, 2]), rtol=0, atol=1e-15)
    # dlogits = (probs - onehot(2)) / 1 = [0.0900, 0.2447, 0.6652 - 1]
    dlogits = cross_entropy_backward(cache)
    assert np.allclose(dlogits, [[0.0900, 0.2447, -0.3348]], rtol=0, atol=5e-5)
    assert abs(dlogits.sum()) < 1e-15  # probs sum to 1 and the onehot to 1
    numeric = numerical_grad(lambda: cross_entropy_forward(logits, targets)[0], logits)
    assert relative_error(dlogits, numeric) < 1e-9


def test_cross_entropy_ignores_a_shift_of_the_logits():
    # exp(1003) overflows float64; after subtracting the max the row is [-2, -1, 0] again
    loss, cache = cross_entropy_forward(np.array([[1001.0, 1002.0, 1003.0]]), np.array([2]))
    assert np.isclose(loss, 0.4076, rtol=0, atol=5e-5)
    assert np.allclose(cross_entropy_backward(cache), [[0.0900, 0.2447, -0.3348]], rtol=0, atol=5e-5)


def test_cross_entropy_two_rows_divides_by_n():
    # row 0 as above (target 2): loss 0.4076; row 1, target 0: loss log 1.5032 - (-2) = 2.4076
    # mean loss (0.4076 + 2.4076) / 2 = 1.4076; each row of dlogits is (probs - onehot) / 2
    loss, cache = cross_entropy_forward(np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]), np.array([2, 0]))
    assert np.isclose(loss, 1.4076, rtol=0, atol=5e-5)
    dlogits = cross_entropy_backward(cache)
    # row 0: [0.0900, 0.2447, -0.3348] / 2; row 1: [0.0900 - 1, 0.2447, 0.6652] / 2
    assert np.allclose(dlogits, [[0.0450, 0.1224, -0.1674], [-0.4550, 0.1224, 0.3326]], rtol=0, atol=5e-5)


def test_cross_entropy_of_rows_that_differ_by_a_constant():
    # row 1 is row 0 lowered by 1: the same probabilities. Its loss (target 0) is log 1.5032 + 2 = 2.4076
    logits = np.array([[1.0, 2.0, 3.0], [0.0, 1.0, 2.0]])
    loss, (probs, _) = cross_entropy_forward(logits, np.array([2, 0]))
    assert np.allclose(probs, [[0.0900, 0.2447, 0.6652]] * 2, rtol=0, atol=5e-5)
    assert np.isclose(loss, (0.4076 + 2.4076) / 2, rtol=0, atol=5e-5)


def test_cross_entropy_shifts_each_row_by_its_own_largest_logit():
    # row 1 lies 1000 below row 0: shifted by the batch's 3 its exps would be exp(-1002) and less, 0 in
    # float64, and 0 / 0 would be nan. Each row is shifted by its own largest logit instead: both
    # become [-2, -1, 0], with loss 0.4076 each
    logits = np.array([[1.0, 2.0, 3.0], [-999.0, -998.0, -997.0]])
    loss, cache = cross_entropy_forward(logits, np.array([2, 2]))
    assert np.isclose(loss, 0.4076, rtol=0, atol=5e-5)
    assert np.allclose(cross_entropy_backward(cache), [[0.0450, 0.1224, -0.1674]] * 2, rtol=0, atol=5e-5)


def test_equal_logits_lose_log_v():
    # every probability 1/3, so the loss is -log(1/3) = log 3 whatever the target
    loss, _ = cross_entropy_forward(np.zeros((1, 3)), np.array([1]))
    assert np.isclose(loss, 1.0986, rtol=0, atol=5e-5)
    assert np.isclose(loss, math.log(3), rtol=0, atol=1e-15)


def test_final_layernorm_and_head_by_hand():
    X = np.array([[3.0, 1.0]])
    # mean 2, centred [1, -1], variance 1: xhat = [1, -1] (times 1 / sqrt(1 + 1e-5))
    Xf, _ = layernorm_forward(X, np.ones(2), np.zeros(2), 1e-5)
    assert np.allclose(Xf, [[1.0, -1.0]], rtol=0, atol=1e-5)
    W_out = np.array([[1.0, 0.0, 2.0], [0.0, -1.0, 1.0]])
    b_out = np.array([0.0, 1.0, 2.0])
    # logits = [1, -1] W_out + b_out = [1 - 0, 0 + 1, 2 - 1] + [0, 1, 2] = [1, 2, 3]
    logits, head_cache = linear_forward(Xf, W_out, b_out)
    assert np.allclose(logits, [[1.0, 2.0, 3.0]], rtol=0, atol=5e-5)
    # the head's backward, from dlogits = [0.0900, 0.2447, -0.3348] (target 2, as above):
    # dW_out = Xf^T dlogits: row 0 is +dlogits, row 1 is -dlogits; db_out = dlogits
    _, cache = cross_entropy_forward(logits, np.array([2]))
    dXf, dW_out, db_out = linear_backward(cross_entropy_backward(cache), head_cache)
    assert np.allclose(dW_out, [[0.0900, 0.2447, -0.3348], [-0.0900, -0.2447, 0.3348]], rtol=0, atol=5e-5)
    assert np.allclose(db_out, [0.0900, 0.2447, -0.3348], rtol=0, atol=5e-5)
    # dXf = dlogits W_out^T = [0.0900 + 2 (-0.3348), -0.2447 - 0.3348]
    assert np.allclose(dXf, [[-0.5795, -0.5795]], rtol=0, atol=5e-5)


# --- docs/07-model.md ------------------------------------------------------------------------

def test_parameter_count_by_hand():
    # a block: 4 C^2 (Wq, Wk, Wv, Wo) + 2 C F (W1, W2) + 9 C (bq, bk, bv, bo, b2, two gains, two
    # shifts) + F (b1) = 4096 + 8192 + 288 + 128 = 12,704 at C = 32, F = 128
    # the model: V C + Tmax C + L * 12,704 + 2 C + C V + V = 65 V + 1,024 + 25,408 + 64 = 65 V + 26,496
    for V, total in ((575, 63_871), (560, 62_896)):
        cfg = ModelConfig(vocab_size=V, context_len=32, emb_dim=32, num_heads=2, num_layers=2, ff_dim=128,
                          ln_eps=1e-5)
        shapes = param_shapes(cfg)
        assert sum(math.prod(s) for name, s in shapes.items() if name.startswith("block0.")) == 12_704
        assert sum(math.prod(s) for s in shapes.values()) == 65 * V + 26_496 == total


def test_pack_makes_views_of_one_buffer():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    b = np.array([5.0, 6.0, 7.0])
    params = pack({"a": a, "b": b})
    flat = flat_buffer(params)
    assert np.array_equal(flat, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])  # a row by row, then b
    assert params["a"].base is flat and params["b"].base is flat
    flat *= 2  # one operation on the vector changes every named tensor
    assert np.array_equal(params["a"], [[2.0, 4.0], [6.0, 8.0]])
    assert np.array_equal(params["b"], [10.0, 12.0, 14.0])
    assert np.array_equal(a, [[1.0, 2.0], [3.0, 4.0]])  # pack copied: the inputs are untouched


ZERO_HEAD_CFG = ModelConfig(vocab_size=3, context_len=4, emb_dim=4, num_heads=2, num_layers=1, ff_dim=8, ln_eps=1e-5)


def test_whole_model_with_a_zero_head():
    # 2 tables + 16 block tensors + 4 at the top = 22 tensors; 9 V + Tmax C + 172 + 2 C = 223 numbers
    params = init_params(ZERO_HEAD_CFG, np.random.default_rng(0))
    assert len(params) == 22 and flat_buffer(params).size == 223
    params["W_out"][...] = 0  # b_out starts at 0 already: every logit is 0 whatever the input
    ids = np.array([[0, 1, 2], [2, 2, 1]])
    targets = np.array([[1, 2, 2], [2, 1, 0]])
    logits, _ = forward(params, ids, ZERO_HEAD_CFG)
    assert logits.shape == (2, 3, 3) and np.all(logits == 0)
    assert forward(params, ids[0], ZERO_HEAD_CFG)[0].shape == (3, 3)  # (T,) in, (T, V) out
    # every probability is 1/3, so the loss is log 3 = 1.0986
    loss, grads = loss_and_grads(params, ids, targets, ZERO_HEAD_CFG)
    assert np.isclose(loss, 1.0986, rtol=0, atol=5e-5)
    # db_out = sum over the N = 6 rows of (1/3 - onehot) / 6 = 1/3 - counts / 6; targets 0, 1, 2
    # appear 1, 2 and 3 times: [1/3 - 1/6, 1/3 - 2/6, 1/3 - 3/6] = [0.1667, 0, -0.1667]
    assert np.allclose(grads["b_out"], [0.1667, 0.0, -0.1667], rtol=0, atol=5e-5)
    # dXf = dlogits W_out^T = 0: no gradient reaches anything below the head
    assert sum(np.abs(g).sum() for name, g in grads.items() if name not in ("W_out", "b_out")) == 0.0
    assert np.abs(grads["W_out"]).max() > 0.1  # dW_out = Xf^T dlogits is not 0
    assert np.allclose(grads["W_out"].sum(axis=1), 0, rtol=0, atol=1e-15)  # each dlogits row sums to 0


def test_float32_in_float32_out():
    params = init_params(ZERO_HEAD_CFG, np.random.default_rng(0))
    p32 = pack(params, np.float32)
    ids, targets = np.array([[0, 1, 2], [2, 2, 1]]), np.array([[1, 2, 2], [2, 1, 0]])
    assert forward(p32, ids, ZERO_HEAD_CFG)[0].dtype == np.float32
    loss, grads = loss_and_grads(p32, ids, targets, ZERO_HEAD_CFG)
    assert flat_buffer(grads).dtype == np.float32
    assert abs(loss - loss_and_grads(params, ids, targets, ZERO_HEAD_CFG)[0]) < 1e-5


def test_central_difference_by_hand():
    x = np.array([2.0])
    # ((2 + h)^3 - (2 - h)^3) / 2h = (12 h + 2 h^3) / 2h = 12 + h^2: exact but for 1e-10 and rounding
    grad = numerical_grad(lambda: float((x ** 3).sum()), x)
    assert abs(grad[0] - 12.0) < 1e-9
