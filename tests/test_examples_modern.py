"""Today's pieces on numbers a person can check by hand: a rotation (RoPE), an RMSNorm row, a SwiGLU of
three numbers, and two query heads sharing one key head (grouped keys and values)."""

import math

import numpy as np

from transformer import (attention_backward, attention_forward, gqa_attention_backward, gqa_attention_forward,
                         ModelConfig, repeat_kv_backward, repeat_kv_forward, rmsnorm_backward, rmsnorm_forward,
                         rope_angles, rope_backward, rope_forward, swiglu_forward)


def test_rope_turns_a_2_vector_by_a_known_angle():
    # a quarter turn of (3, 4): (3 cos a - 4 sin a, 3 sin a + 4 cos a) with cos a = 0, sin a = 1 is (-4, 3)
    turned, cache = rope_forward(np.array([[3.0, 4.0]]), np.array([[0.0]]), np.array([[1.0]]))
    assert np.array_equal(turned, [[-4.0, 3.0]])
    # the backward turns the gradient back, by -a: (-4, 3) -> (3, 4)
    assert np.array_equal(rope_backward(np.array([[-4.0, 3.0]]), cache), [[3.0, 4.0]])
    # a sixth of a turn, a = pi/3: cos a = 1/2, sin a = sqrt(3)/2; (2, 0) -> (1, sqrt(3))
    sixth = math.pi / 3
    turned, _ = rope_forward(np.array([[2.0, 0.0]]), np.array([[math.cos(sixth)]]), np.array([[math.sin(sixth)]]))
    assert np.allclose(turned, [[1.0, math.sqrt(3)]], rtol=0, atol=1e-15)


def test_rope_angles_by_hand():
    # position 2, a head of 4 numbers (two pairs), theta 100: pair i turns by 2 * 100^(-2i/4): 2 and 2/10
    assert np.allclose(rope_angles(2, 1, 4, 100.0), [[2.0, 0.2]], rtol=0, atol=1e-15)
    # pair i is (x_i, x_{i+2}): turning (1, 0, 0, 0) by angles (a0, a1) moves x_0 into x_2, by a0 alone
    angles = np.array([[0.5, 0.2]])
    turned, _ = rope_forward(np.array([[1.0, 0.0, 0.0, 0.0]]), np.cos(angles), np.sin(angles))
    assert np.allclose(turned, [[math.cos(0.5), 0.0, math.sin(0.5), 0.0]], rtol=0, atol=1e-15)


def test_rmsnorm_row_worked_example():
    # x = (1, 7): mean(x^2) = (1 + 49) / 2 = 25, root 5, so xhat = (0.2, 1.4); gain (1, 2) -> (0.2, 2.8)
    out, cache = rmsnorm_forward(np.array([[1.0, 7.0]]), np.array([1.0, 2.0]), 1e-12)
    assert np.allclose(out, [[0.2, 2.8]], rtol=0, atol=1e-12)
    # dout = (1, 0): dxhat = dout * gain = (1, 0), mean(dxhat * xhat) = 0.1,
    # dx = (1 / 5) * ((1, 0) - 0.1 * (0.2, 1.4)) = (0.196, -0.028); dgain = dout * xhat = (0.2, 0)
    dx, dgain = rmsnorm_backward(np.array([[1.0, 0.0]]), cache)
    assert np.allclose(dx, [[0.196, -0.028]], rtol=0, atol=1e-12)
    assert np.allclose(dgain, [0.2, 0.0], rtol=0, atol=1e-12)


def test_swiglu_of_three_numbers():
    # x = 1: gate = x W_gate = (0, 1, -1), up = x W_up = (1, 2, 3); silu(z) = z sigma(z), sigma(1) = 0.7310586
    # hidden = silu(gate) * up = (0, 2 * 0.7310586, -3 * 0.2689414) = (0, 1.4621172, -0.8068243)
    # out = hidden W_down, W_down all ones: 0.6552929
    zeros = np.zeros(3)
    p = {"W_gate": np.array([[0.0, 1.0, -1.0]]), "b_gate": zeros, "W_up": np.array([[1.0, 2.0, 3.0]]), "b_up": zeros,
         "W_down": np.ones((3, 1)), "b_down": np.zeros(1)}
    out, cache = swiglu_forward(np.array([[[1.0]]]), p)
    assert np.allclose(cache[3] * cache[4] * cache[5], [[[0.0, 1.4621172, -0.8068243]]], rtol=0, atol=1e-7)
    assert np.allclose(out, [[[0.6552929]]], rtol=0, atol=1e-7)


def test_two_query_heads_share_one_key_head_and_its_gradient_is_the_sum():
    # one key head, (1, 2) at two positions, serves both query heads; the gradients the two heads send it,
    # (0.5, 1) and (0.25, -1), add up: (0.75, 0)
    k = np.array([[[[1.0], [2.0]]]])  # (B, kvh, S, hs) = (1, 1, 2, 1)
    assert np.array_equal(repeat_kv_forward(k, 2), [[[[1.0], [2.0]], [[1.0], [2.0]]]])
    dk = repeat_kv_backward(np.array([[[[0.5], [1.0]], [[0.25], [-1.0]]]]), 2)
    assert np.array_equal(dk, [[[[0.75], [0.0]]]])


def test_a_shared_key_head_is_two_equal_heads_whose_gradients_add():
    # grouped attention with one key/value head for two query heads computes what GPT-2's attention computes with
    # that head written twice; the shared head's gradient is the sum of the two copies' gradients
    rng = np.random.default_rng(0)
    cfg = ModelConfig(vocab_size=5, context_len=8, emb_dim=4, num_heads=2, num_layers=1, ff_dim=8, ln_eps=1e-5,
                      kv_heads=1)
    shared = {"Wq": rng.normal(size=(4, 4)), "bq": rng.normal(size=4), "Wk": rng.normal(size=(4, 2)),
              "bk": rng.normal(size=2), "Wv": rng.normal(size=(4, 2)), "bv": rng.normal(size=2),
              "Wo": rng.normal(size=(4, 4)), "bo": rng.normal(size=4)}
    twice = {**shared, **{name: np.concatenate([shared[name]] * 2, axis=-1) for name in ("Wk", "bk", "Wv", "bv")}}
    x, dout = rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 4))
    out, cache = gqa_attention_forward(x, shared, cfg)
    out_twice, cache_twice = attention_forward(x, twice, 2)
    assert np.allclose(out, out_twice, rtol=0, atol=1e-12)
    dx, grads = gqa_attention_backward(dout, cache)
    dx_twice, grads_twice = attention_backward(dout, cache_twice)
    assert np.allclose(dx, dx_twice, rtol=0, atol=1e-12)
    for name in ("Wk", "bk", "Wv", "bv"):
        first, second = np.split(grads_twice[name], 2, axis=-1)
        assert np.allclose(grads[name], first + second, rtol=0, atol=1e-12), name
