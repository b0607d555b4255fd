"""The embeddings page's worked examples, number for number, and properties of the whole model."""

import numpy as np
import pytest

from gradcheck import numerical_grad
from transformer import (ModelConfig, embed_backward, embed_forward, flat_buffer, forward, forward_cached, init_params,
                         loss_and_grads, pack, zeros_like)

# The hand-picked tables of the embeddings page
TOK_EMB = [[0.1, 0.2], [0.3, -0.1], [0.5, 0.4], [-0.2, 0.6]]
POS_EMB = [[0.0, 0.1], [0.1, 0.0], [0.2, 0.1]]
DX0 = [[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]]


@pytest.fixture
def page_params():
    return pack({"tok_emb": np.array(TOK_EMB), "pos_emb": np.array(POS_EMB)})


def test_embedding_worked_example(page_params):
    params = page_params
    X0 = embed_forward(params, np.array([2, 0, 2]))  # rows 2, 0, 2 of the token table plus rows 0, 1, 2 of positions
    assert np.allclose(X0, [[0.5, 0.5], [0.2, 0.2], [0.7, 0.5]], atol=1e-15)
    assert not np.array_equal(X0[0], X0[2])  # same id, different positions, different vectors


def test_embedding_backward_sums_repeated_ids(page_params):
    ids, dX0 = np.array([2, 0, 2]), np.array(DX0)
    grads = zeros_like(page_params)
    embed_backward(dX0, ids, grads)
    assert np.array_equal(grads["tok_emb"], [[0, 1], [0, 0], [3, 2], [0, 0]])
    assert np.allclose(grads["tok_emb"][2], [3, 2])  # rows 0 and 2 both landed here
    assert np.allclose(grads["pos_emb"], dX0)


def test_embedding_backward_leaves_unused_positions_at_zero(page_params):
    grads = zeros_like(page_params)
    embed_backward(np.array(DX0[:2]), np.array([2, 0]), grads)  # T = 2 on a table of 3 rows
    assert np.array_equal(grads["pos_emb"], [[1, 0], [0, 1], [0, 0]])


def test_embedding_backward_matches_central_differences(page_params):
    params, ids, dX0 = page_params, np.array([2, 0, 2]), np.array(DX0)
    grads = zeros_like(params)
    embed_backward(dX0, ids, grads)
    f = lambda: float((embed_forward(params, ids) * dX0).sum())  # its gradient on X0 is exactly dX0
    for name in ("tok_emb", "pos_emb"):
        numeric = numerical_grad(f, params[name])
        assert np.max(np.abs(numeric - grads[name])) < 1e-9, name


def test_embedding_batch_sums_over_sequences(page_params):
    ids = np.array([[2, 0], [2, 3]])
    dX0 = np.arange(8.0).reshape(2, 2, 2)
    grads = zeros_like(page_params)
    embed_backward(dX0, ids, grads)
    assert np.array_equal(grads["tok_emb"][2], dX0[0, 0] + dX0[1, 0])
    assert np.array_equal(grads["pos_emb"][:2], dX0[0] + dX0[1])


REFERENCE_CFG = ModelConfig(vocab_size=575, context_len=32, emb_dim=32, num_heads=2, num_layers=2,
                            ff_dim=128, ln_eps=1e-5)


def test_reference_model_has_38_tensors_and_63871_parameters():
    params = init_params(REFERENCE_CFG, np.random.default_rng(42))
    assert len(params) == 38
    assert sum(t.size for t in params.values()) == 63_871
    assert list(params)[:4] == ["tok_emb", "pos_emb", "block0.ln1_gain", "block0.ln1_shift"]
    assert list(params)[2:18] == [f"block0.{k}" for k in ("ln1_gain", "ln1_shift", "Wq", "bq", "Wk", "bk", "Wv",
                                                         "bv", "Wo", "bo", "ln2_gain", "ln2_shift", "W1", "b1",
                                                         "W2", "b2")]
    assert list(params)[-4:] == ["lnf_gain", "lnf_shift", "W_out", "b_out"]
    assert params["tok_emb"].shape == (575, 32) and params["pos_emb"].shape == (32, 32)
    assert params["W_out"].shape == (32, 575) and params["b_out"].shape == (575,)
    assert flat_buffer(params).size == 63_871


def test_init_is_xavier_uniform_with_unit_gains_and_zero_biases():
    params = init_params(REFERENCE_CFG, np.random.default_rng(42))
    for name, tensor in params.items():
        if tensor.ndim == 2:
            a = np.sqrt(6 / sum(tensor.shape))
            assert np.abs(tensor).max() <= a and np.abs(tensor).max() > 0.9 * a, name
            assert abs(tensor.std() - a / np.sqrt(3)) < 0.1 * a, name  # the std of U(-a, a) is a / sqrt(3)
        elif name.endswith("_gain"):
            assert np.all(tensor == 1), name
        else:
            assert np.all(tensor == 0), name


def test_same_seed_same_parameters_and_float32_is_float64_rounded():
    p64 = init_params(REFERENCE_CFG, np.random.default_rng(7))
    again = init_params(REFERENCE_CFG, np.random.default_rng(7))
    p32 = init_params(REFERENCE_CFG, np.random.default_rng(7), dtype=np.float32)
    assert all(np.array_equal(p64[k], again[k]) for k in p64)
    assert all(p32[k].dtype == np.float32 and np.array_equal(p32[k], p64[k].astype(np.float32)) for k in p64)


def test_causal_changing_a_later_token_leaves_earlier_logits_unchanged(tiny_cfg, tiny_params):
    ids = np.array([1, 4, 2, 6, 0])
    logits, _ = forward(tiny_params, ids, tiny_cfg)
    for t in range(4):
        changed = ids.copy()
        changed[t + 1] = (changed[t + 1] + 3) % tiny_cfg.vocab_size
        new_logits, _ = forward(tiny_params, changed, tiny_cfg)
        assert np.allclose(new_logits[: t + 1], logits[: t + 1], rtol=0, atol=1e-13)
        assert not np.allclose(new_logits[t + 1], logits[t + 1])


def test_batch_equals_its_sequences_one_at_a_time(tiny_cfg, tiny_params, tiny_batch):
    ids, targets = tiny_batch
    logits, _ = forward(tiny_params, ids, tiny_cfg)
    loss, grads = loss_and_grads(tiny_params, ids, targets, tiny_cfg)
    one_at_a_time = [loss_and_grads(tiny_params, i, t, tiny_cfg) for i, t in zip(ids, targets)]
    for b in range(len(ids)):
        assert np.allclose(logits[b], forward(tiny_params, ids[b], tiny_cfg)[0], rtol=0, atol=1e-13)
    assert np.isclose(loss, np.mean([l for l, _ in one_at_a_time]), rtol=0, atol=1e-13)
    for name in grads:
        mean_grad = np.mean([g[name] for _, g in one_at_a_time], axis=0)  # equal-length sequences
        assert np.allclose(grads[name], mean_grad, rtol=0, atol=1e-13), name


def test_grads_match_params_in_keys_order_shapes_and_dtype(tiny_cfg, tiny_params, tiny_batch):
    _, grads = loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
    assert list(grads) == list(tiny_params)
    assert all(grads[k].shape == tiny_params[k].shape and grads[k].dtype == np.float64 for k in grads)
    assert flat_buffer(grads).size == flat_buffer(tiny_params).size


def test_initial_loss_is_near_log_vocab_size():
    params = init_params(REFERENCE_CFG, np.random.default_rng(0))
    ids = np.random.default_rng(1).integers(0, 575, size=(4, 16))
    loss, _ = loss_and_grads(params, ids, np.roll(ids, -1, axis=1), REFERENCE_CFG)
    assert abs(loss - np.log(575)) < 0.3  # a fresh model spreads its bets over all V tokens


@pytest.mark.parametrize("ids, targets, message", [
    (np.zeros(9, dtype=int), np.zeros(9, dtype=int), "context_len is only 8"),
    (np.array([0, 7]), np.array([0, 1]), "holds 7, outside the vocabulary"),
    (np.array([0, -1]), np.array([0, 1]), "holds -1, outside the vocabulary"),
    (np.array([0, 1]), np.array([0, 7]), "targets holds 7"),
    (np.array([0, 1, 2]), np.array([0, 1]), "targets must have the shape of ids"),
    (np.array([], dtype=int), np.array([], dtype=int), "empty"),
    (np.zeros((2, 0), dtype=int), np.zeros((2, 0), dtype=int), "empty"),
    (np.array([0.0, 1.0]), np.array([0, 1]), "must be integers"),
    (np.zeros((1, 2, 3), dtype=int), np.zeros((1, 2, 3), dtype=int), "shape (T,) or (B, T)"),
])
def test_bad_input_is_a_clear_value_error(tiny_cfg, tiny_params, ids, targets, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        loss_and_grads(tiny_params, ids, targets, tiny_cfg)


@pytest.mark.parametrize("field, value", [("vocab_size", 0), ("num_heads", 3), ("ln_eps", 0.0), ("ff_dim", 1.5)])
def test_bad_model_config_is_a_value_error(field, value):
    fields = dict(vocab_size=7, context_len=8, emb_dim=4, num_heads=2, num_layers=2, ff_dim=8, ln_eps=1e-5)
    with pytest.raises(ValueError, match=field if field != "num_heads" else "divisible"):
        ModelConfig(**{**fields, field: value})


def test_forward_cached_refuses_to_run_past_the_position_table(tiny_cfg, tiny_params):
    _, past = forward_cached(tiny_params, np.arange(7) % 7, tiny_cfg)
    with pytest.raises(ValueError, match="sequence of length 9: context_len is only 8"):
        forward_cached(tiny_params, np.array([1, 2]), tiny_cfg, past)


def test_flat_buffer_refuses_tensors_of_different_buffers_and_a_part_of_one():
    first = pack({"a": np.ones(2), "b": np.zeros(3)})
    second = pack({"a": np.ones(2), "b": np.zeros(3)})
    with pytest.raises(AssertionError, match="these tensors do not share one buffer"):
        flat_buffer({"a": first["a"], "b": second["b"]})
    with pytest.raises(AssertionError, match="the buffer holds more than these tensors"):
        flat_buffer({"a": first["a"]})  # b's 3 numbers are in the buffer too: a step on this would miss them


def test_zeros_like_keeps_the_dtype_names_and_shapes():
    params = pack({"W": np.ones((2, 3)), "b": np.ones(3)}, np.float32)
    zeros = zeros_like(params)
    assert list(zeros) == ["W", "b"] and zeros["W"].shape == (2, 3) and zeros["b"].shape == (3,)
    assert flat_buffer(zeros).dtype == np.float32 and not flat_buffer(zeros).any()


def test_the_backward_holds_one_copy_of_the_gradients_at_a_time():
    """loss_and_grads writes each gradient into its place as it goes: at a shape where the two token
    tables are nearly all of the model, its peak is the gradients' buffer and the head's gradient before
    it is written in (half the model here), where gathering the gradients and packing them at the end
    held two buffers (at GPT-2 124M, 650 MB each)."""
    import tracemalloc
    cfg = ModelConfig(vocab_size=20_000, context_len=4, emb_dim=32, num_heads=2, num_layers=1, ff_dim=64, ln_eps=1e-5)
    params = init_params(cfg, np.random.default_rng(0))
    ids = np.array([[1, 2, 3, 4]])
    grad_bytes = flat_buffer(params).nbytes
    tracemalloc.start()
    try:
        _, grads = loss_and_grads(params, ids, ids, cfg)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert grad_bytes < peak < 1.7 * grad_bytes, (peak, grad_bytes)
    assert flat_buffer(grads).nbytes == grad_bytes
