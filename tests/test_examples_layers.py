"""The worked examples of the layer pages (docs/02-layernorm.md, 03-attention.md, 04-mlp.md), number
for number.

Every input is small enough to follow by hand, and the comments carry that hand derivation. The
pages show the same inputs and the same results, rounded to 4 decimals where they are not exact,
so each assertion here allows what that rounding allows (ROUNDED) and no more.
"""

import math

import numpy as np

from transformer import (attention_backward, attention_forward, causal_mask, gelu_backward, gelu_forward,
                         layernorm_backward, layernorm_forward, linear_backward, linear_forward, mlp_backward, mlp_forward,
                         softmax, softmax_backward)

EPS = 1e-5  # ln_eps in config.py
ROUNDED = 5e-5  # the pages show 4 decimals


def close(actual, expected):
    return np.allclose(actual, expected, rtol=0, atol=ROUNDED)


# --- layer normalization (02-layernorm.md) ---

def layernorm_example():
    x = np.array([[1.0, 7.0, 7.0, 9.0], [2.0, 2.0, 6.0, 6.0]])
    gain = np.array([1.0, 2.0, 0.5, 1.0])
    shift = np.array([0.0, 0.0, 1.0, -1.0])
    return x, gain, shift


def test_layernorm_forward_worked_example():
    x, gain, shift = layernorm_example()
    # row 0: mean (1 + 7 + 7 + 9) / 4 = 6, deviations [-5, 1, 1, 3], variance (25 + 1 + 1 + 9) / 4 = 9
    # row 1: mean (2 + 2 + 6 + 6) / 4 = 4, deviations [-2, -2, 2, 2], variance (4 + 4 + 4 + 4) / 4 = 4
    out, (xhat, rstd, _) = layernorm_forward(x, gain, shift, EPS)
    # rstd = 1 / sqrt(variance + eps): 1 / sqrt(9.00001) = 0.3333331..., 1 / sqrt(4.00001) = 0.4999993...
    assert close(rstd, [[0.3333], [0.5000]])
    assert np.allclose(rstd, [[1 / math.sqrt(9 + EPS)], [1 / math.sqrt(4 + EPS)]], rtol=0, atol=1e-15)
    # xhat = deviations * rstd: [-5/3, 1/3, 1/3, 1] and [-1, -1, 1, 1]
    assert close(xhat, [[-1.6667, 0.3333, 0.3333, 1.0], [-1.0, -1.0, 1.0, 1.0]])
    # out = xhat * gain + shift: [-5/3 * 1 + 0, 1/3 * 2 + 0, 1/3 * 0.5 + 1, 1 * 1 - 1] and [-1, -2, 1.5, 0]
    assert close(out, [[-1.6667, 0.6667, 1.1667, 0.0], [-1.0, -2.0, 1.5, 0.0]])
    # each row of xhat has mean 0 and mean square var / (var + eps), just under 1
    assert np.allclose(xhat.mean(axis=-1), 0, atol=1e-15)
    assert np.allclose((xhat * xhat).mean(axis=-1), [9 / (9 + EPS), 4 / (4 + EPS)], rtol=0, atol=1e-15)


def test_layernorm_eps_keeps_a_constant_row_finite():
    _, gain, shift = layernorm_example()
    constant = np.full((1, 4), 5.0)  # variance 0
    out, (xhat, rstd, _) = layernorm_forward(constant, gain, shift, EPS)
    assert close(rstd, [[316.2278]])  # 1 / sqrt(0 + 1e-5)
    assert np.array_equal(xhat, [[0.0, 0.0, 0.0, 0.0]])  # deviations 0, times a finite rstd
    assert np.array_equal(out, [[0.0, 0.0, 1.0, -1.0]])  # = shift


def test_layernorm_backward_worked_example():
    x, gain, shift = layernorm_example()
    _, cache = layernorm_forward(x, gain, shift, EPS)
    xhat = cache[0].copy()
    dout = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
    # dxhat = dout * gain = [1, 0, 0, 0] and [0, 2, 0, 0]; mean(dxhat) = 1/4 and 2/4
    # mean(dxhat * xhat) = (1 * -5/3) / 4 = -5/12 = -0.41667 and (2 * -1) / 4 = -0.5
    dx, dgain, dshift = layernorm_backward(dout, cache)
    # row 0: (1/3) ([1, 0, 0, 0] - 1/4 + 5/12 [-5/3, 1/3, 1/3, 1])
    #      = (1/3) [3/4 - 25/36, -1/4 + 5/36, -1/4 + 5/36, -1/4 + 15/36] = (1/3) [2, -4, -4, 6] / 36
    #      = [1/54, -1/27, -1/27, 1/18]
    # row 1: (1/2) ([0, 2, 0, 0] - 1/2 + 1/2 [-1, -1, 1, 1]) = (1/2) [-1, 1, 0, 0] = [-1/2, 1/2, 0, 0]
    assert close(dx, [[0.0185, -0.0370, -0.0370, 0.0556], [-0.5, 0.5, 0.0, 0.0]])
    # the fractions are exact when eps = 0 (these rows have a variance, so nothing divides by 0)
    exact_dx, _, _ = layernorm_backward(dout, layernorm_forward(x, gain, shift, 0.0)[1])
    assert np.allclose(exact_dx, [[1 / 54, -1 / 27, -1 / 27, 1 / 18], [-0.5, 0.5, 0, 0]], rtol=0, atol=1e-15)
    # dgain = sum over rows of dout * xhat = [-5/3, 0, 0, 0] + [0, -1, 0, 0]; dshift = sum over rows of dout
    assert close(dgain, [-1.6667, -1.0, 0.0, 0.0])
    assert np.array_equal(dshift, [1.0, 1.0, 0.0, 0.0])
    # adding a constant to a row leaves xhat unchanged, so dx has zero row sums; scaling a row leaves
    # xhat unchanged only when eps = 0, so only then is dx orthogonal to the row's deviations
    assert np.allclose(dx.sum(axis=-1), 0, atol=1e-15)
    assert np.array_equal(cache[0], xhat)  # the backward only read its cache
    assert np.allclose((exact_dx * (x - x.mean(axis=-1, keepdims=True))).sum(axis=-1), 0, atol=1e-15)
    # with eps: sum_i dx_i xhat_i = rstd C mean(dxhat xhat) eps / (variance + eps) = -6.2e-7 and -2.5e-6
    assert close((dx * xhat).sum(axis=-1) * 1e6, [-0.6173, -2.5000])


# --- attention (03-attention.md) ---

def test_projections_worked_example():
    # C = 2, one head, one position: Q = x Wq + bq, K = x Wk + bk, V = x Wv + bv
    x = np.array([[[1.0, 2.0]]])
    p = {"Wq": np.array([[1.0, 0.0], [0.0, 1.0]]), "bq": np.array([0.5, 0.5]),
         "Wk": np.array([[0.0, 1.0], [1.0, 0.0]]), "bk": np.zeros(2),
         "Wv": np.array([[2.0, 0.0], [0.0, -1.0]]), "bv": np.zeros(2), "Wo": np.eye(2), "bo": np.zeros(2)}
    _, (_, q, k, v, _, _) = attention_forward(x, p, num_heads=1)
    # q = [1, 2] + [0.5, 0.5]; k = [1, 2] with its columns swapped = [2, 1]; v = [2 * 1, -1 * 2]
    assert np.array_equal(q[0, 0], [[1.5, 2.5]])  # (B, nh, T, hs) = (1, 1, 1, 2)
    assert np.array_equal(k[0, 0], [[2.0, 1.0]])
    assert np.array_equal(v[0, 0], [[2.0, -2.0]])


def test_softmax_worked_example():
    scores = np.array([1.0, 0.0, 1.0])
    # [e, 1, e] / (2e + 1) = [2.71828, 1, 2.71828] / 6.43656
    assert close(softmax(scores.copy()), [0.4223, 0.1554, 0.4223])
    # adding 1000 to every score changes nothing, and exp(1001) (inf in float64) is never computed
    assert np.allclose(softmax(scores + 1000.0), softmax(scores.copy()), rtol=0, atol=1e-15)
    # masked: exp(-inf) = 0 exactly
    assert np.array_equal(softmax(np.array([0.0, -np.inf])), [1.0, 0.0])
    # softmax leaves its input as it was
    kept = scores.copy()
    softmax(kept)
    assert np.array_equal(kept, scores)


def test_softmax_shifts_each_row_by_its_own_largest_score():
    # row 1 lies 1000 below row 0: shifted by the largest score of all, its exps would be exp(-1000) = 0
    # and its weights 0 / 0; shifted by its own largest, both rows are [-1, 0]: e / (1 + e) = 0.7311
    scores = np.array([[0.0, 1.0], [-1000.0, -999.0]])
    assert close(softmax(scores), [[0.2689, 0.7311], [0.2689, 0.7311]])


def test_split_into_heads_worked_example():
    # B = 1, T = 2, C = 4, nh = 2, hs = 2: each row of Q, K and V is [head 0 | head 1]. x is the first
    # two rows of the identity, so Q = x Wq is the first two rows of Wq: columns 0-3 of the numbers 0 to 23
    # laid out below, K columns 4-7 and V columns 8-11
    W_side_by_side = np.zeros((4, 12))
    W_side_by_side[:2] = np.arange(24.0).reshape(2, 12)
    p = {"Wq": W_side_by_side[:, :4], "Wk": W_side_by_side[:, 4:8], "Wv": W_side_by_side[:, 8:], "Wo": np.eye(4),
         **{name: np.zeros(4) for name in ("bq", "bk", "bv", "bo")}}
    _, (_, q, k, v, _, _) = attention_forward(np.eye(4)[None, :2], p, num_heads=2)
    assert q.shape == (1, 2, 2, 2)  # (B, nh, T, hs)
    assert np.array_equal(q[0, 0], [[0, 1], [12, 13]])  # columns 0-1: head 0 of the queries, both positions
    assert np.array_equal(q[0, 1], [[2, 3], [14, 15]])  # columns 2-3: head 1 of the queries
    assert np.array_equal(k[0, 0], [[4, 5], [16, 17]])  # columns 4-5: head 0 of the keys
    assert np.array_equal(v[0, 1], [[10, 11], [22, 23]])  # columns 10-11: head 1 of the values


def test_causal_mask_worked_example():
    assert np.array_equal(causal_mask(3, 3, np.float64) == 0, [[True, False, False], [True, True, False],
                                                               [True, True, True]])
    # with a key/value cache: 2 new queries at positions 2 and 3 of S = 4; the first may not see position 3
    assert np.array_equal(causal_mask(2, 4, np.float64) == 0, [[True, True, True, False], [True, True, True, True]])


def identity_attention_params():
    """Wq = Wk = Wv = Wo = I and every bias 0, so q = k = v = x and out = the merged heads."""
    return {name: np.eye(2) if name[0] == "W" else np.zeros(2)
            for name in ("Wq", "bq", "Wk", "bk", "Wv", "bv", "Wo", "bo")}


def test_attention_worked_example():
    # C = 2, nh = 2, hs = 1: head 0 reads column 0 of x, head 1 column 1, and sqrt(hs) = 1
    x = np.array([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])
    p = identity_attention_params()
    out, cache = attention_forward(x, p, 2)
    attn = cache[4]
    e = math.e
    # head 0: q = k = v = [1, 0, 1]; scores q_t k_s = [[1, 0, 1], [0, 0, 0], [1, 0, 1]], masked above the diagonal
    # row 0: softmax([1]) = [1]; row 1: softmax([0, 0]) = [1/2, 1/2]; row 2: softmax([1, 0, 1]) = [e, 1, e] / (2e + 1)
    assert close(attn[0, 0], [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.4223, 0.1554, 0.4223]])
    assert np.allclose(attn[0, 0, 2], np.array([e, 1, e]) / (2 * e + 1), rtol=0, atol=1e-15)
    # head 1: q = k = v = [0, 1, 1]; scores [[0, 0, 0], [0, 1, 1], [0, 1, 1]]
    # row 1: softmax([0, 1]) = [1, e] / (1 + e); row 2: softmax([0, 1, 1]) = [1, e, e] / (1 + 2e)
    assert close(attn[0, 1], [[1.0, 0.0, 0.0], [0.2689, 0.7311, 0.0], [0.1554, 0.4223, 0.4223]])
    # out = attn @ v per head, heads side by side: head 0 [1, 1/2, 2e / (2e + 1)], head 1 [0, e / (1 + e), 2e / (1 + 2e)]
    assert close(out[0], [[1.0, 0.0], [0.5, 0.7311], [0.8446, 0.8446]])
    # a key bias adds q_t . bk to every score of row t: softmax does not see it
    p["bk"] = np.array([3.0, -2.0])
    assert np.allclose(attention_forward(x, p, 2)[0], out, rtol=0, atol=1e-15)
    # a query bias is not like that: it changes q_t . k_s differently for each s
    p["bq"] = np.array([3.0, -2.0])
    assert not np.allclose(attention_forward(x, p, 2)[0], out, atol=1e-3)


def test_softmax_backward_worked_example():
    dp = np.array([1.0, 2.0, 5.0])
    probs = np.array([0.5, 0.5, 0.0])  # the last entry masked: its probability is 0
    # sum_j dp_j p_j = 0.5 + 1 + 0 = 1.5; ds = p * (dp - 1.5) = [0.5 * -0.5, 0.5 * 0.5, 0 * 3.5]
    assert (dp * probs).sum() == 1.5
    ds = softmax_backward(dp, probs)
    assert np.array_equal(ds, [-0.25, 0.25, 0.0])
    assert ds.sum() == 0  # a softmax input's gradient always sums to 0 over the row


def test_attention_backward_worked_example():
    x = np.array([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])
    _, cache = attention_forward(x, identity_attention_params(), 2)
    dx, grads = attention_backward(np.ones((1, 3, 2)), cache)
    # Wo = I, so dheads = dout = 1 everywhere. dv_s = sum_t attn_ts: the attention paid to position s.
    # dbv is the sum of dv over positions: all the attention of a head, T rows of 1 each = 3
    assert np.allclose(grads["bv"], [3.0, 3.0], rtol=0, atol=1e-15)
    # dk_s = sum_t dscores_ts q_t, and each row of dscores sums to 0, so sum_s dk_s = 0: dbk = 0
    assert np.allclose(grads["bk"], [0.0, 0.0], rtol=0, atol=1e-15)
    # dq_t = sum_s dscores_ts k_s with dscores = attn * (dattn - sum_s dattn attn), dattn_ts = v_s:
    # head 0 (v = k = [1, 0, 1]): row 1 [1/4, -1/4, 0], row 2 a (1 - 2a) [1, 0, 1] - [0, 2ab, 0] with
    #   a = e / (2e + 1), b = 1 / (2e + 1); dq = [0, 1/4, 2a (1 - 2a)], sum 1/4 + 2ab = 0.38122
    # head 1 (v = k = [0, 1, 1]): row 1 [-cd, cd, 0] with c = 1 / (1 + e), d = e / (1 + e); row 2
    #   [-2ab, ab, ab]; dq = [0, cd, 2ab], sum cd + 2ab = 0.19661 + 0.13122 = 0.32784
    a, b = math.e / (2 * math.e + 1), 1 / (2 * math.e + 1)
    c, d = 1 / (1 + math.e), math.e / (1 + math.e)
    assert np.allclose(grads["bq"], [0.25 + 2 * a * b, c * d + 2 * a * b], rtol=0, atol=1e-15)
    assert close(grads["bq"], [0.3812, 0.3278])


# --- linear layer, GELU and the MLP (04-mlp.md) ---

def test_linear_worked_example():
    x = np.array([[1.0, 2.0], [3.0, -1.0]])
    W = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]])
    b = np.array([0.5, 0.0, -0.5])
    out, cache = linear_forward(x, W, b)
    # row 0: [1*1 + 2*0, 1*0 + 2*1, 1*2 + 2*(-1)] + b = [1, 2, 0] + b; row 1: [3, -1, 6 + 1] + b
    assert np.array_equal(out, [[1.5, 2.0, -0.5], [3.5, -1.0, 6.5]])
    dout = np.array([[1.0, 0.0, 1.0], [0.0, 2.0, 0.0]])
    dx, dW, db = linear_backward(dout, cache)
    # dW = x^T dout: dW_ij = x_0i dout_0j + x_1i dout_1j; row i = 0: [1, 0, 1] + 3 [0, 2, 0] = [1, 6, 1]
    #                                                      row i = 1: 2 [1, 0, 1] - [0, 2, 0] = [2, -2, 2]
    assert np.array_equal(dW, [[1.0, 6.0, 1.0], [2.0, -2.0, 2.0]])
    assert np.array_equal(db, [1.0, 2.0, 1.0])  # the column sums of dout
    # dx = dout W^T: row 0 = 1 [1, 0] + 1 [2, -1] = [3, -1]; row 1 = 2 [0, 1] = [0, 2]
    assert np.array_equal(dx, [[3.0, -1.0], [0.0, 2.0]])


def test_gelu_worked_example():
    x = np.array([0.0, 1.0, -1.0])
    # u = sqrt(2/pi) (x + 0.044715 x^3): 0.7978846 * 1.044715 = 0.8335620 at x = 1, odd in x; tanh u = 0.6823840
    y, cache = gelu_forward(x)
    # y = 0.5 x (1 + tanh u): 0.5 * 1.6823840 = 0.8411920 and -0.5 * (1 - 0.6823840) = -0.1588080
    assert close(y, [0.0, 0.8412, -0.1588])
    # dy/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx, du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2) = 0.9049163
    # x = 0: 0.5; x = 1: 0.8411920 + 0.5 * 0.5343520 * 0.9049163 = 1.0829640; x = -1: 0.1588080 - 0.2417720
    dy_dx = gelu_backward(np.ones(3), cache)
    assert close(dy_dx, [0.5, 1.0830, -0.0830])
    assert np.allclose(dy_dx[1] + dy_dx[2], 1.0, rtol=0, atol=1e-15)  # y(x) - y(-x) = x, so y'(x) + y'(-x) = 1
    assert close(gelu_backward(np.full(3, 2.0), cache), [1.0, 2.1659, -0.1659])  # dout times dy/dx


def test_gelu_and_its_derivative_at_their_extremes():
    x = np.linspace(-4.0, 4.0, 80001)
    y, cache = gelu_forward(x)
    dy_dx = gelu_backward(np.ones_like(x), cache)
    assert close(y.min(), -0.1700) and abs(x[np.argmin(y)] - (-0.7525)) < 1e-3  # the lowest GELU gets
    assert close(dy_dx.min(), -0.1290) and close(dy_dx.max(), 1.1290)  # the derivative's range


def test_mlp_worked_example():
    # C = 1, F = 2: one input number, two hidden units with weights 1 and -1, summed back with b2 = 0.5
    x = np.array([[1.0]])
    W1 = np.array([[1.0, -1.0]])
    b1 = np.array([0.0, 0.0])
    W2 = np.array([[1.0], [1.0]])
    b2 = np.array([0.5])
    p = {"W1": W1, "b1": b1, "W2": W2, "b2": b2}
    hidden, _ = linear_forward(x, W1, b1)
    assert np.array_equal(hidden, [[1.0, -1.0]])
    out, cache = mlp_forward(x, p)
    # GELU(1) + GELU(-1) + 0.5 = 0.8411920 - 0.1588080 + 0.5 = 1.1823840
    assert close(out, [[1.1824]])
    dx, grads = mlp_backward(np.array([[1.0]]), cache)
    # dactivated = dout W2^T = [1, 1]; dW2 = activated^T dout = [[0.8412], [-0.1588]]; db2 = [1]
    assert close(grads["W2"], [[0.8412], [-0.1588]])
    assert np.array_equal(grads["b2"], [1.0])
    # dhidden = dactivated * GELU'(hidden) = [1.0830, -0.0830] = db1 = dW1 (x = 1)
    assert close(grads["b1"], [1.0830, -0.0830])
    assert close(grads["W1"], [[1.0830, -0.0830]])
    # dx = dhidden W1^T = 1.0830 * 1 + (-0.0830) * (-1) = 1.1659
    assert close(dx, [[1.1659]])
