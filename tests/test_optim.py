"""AdamW, gradient clipping and the learning-rate schedule."""

import numpy as np
import pytest

from conftest import torch_or_skip
import config
from transformer import CHUNK, Adam, clip_grad_norm, lr_schedule
from transformer import flat_buffer, loss_and_grads, pack, zeros_like


def test_schedule_warms_up_linearly_from_zero_to_lr_max():
    lrs = [lr_schedule(s, 1000, 1e-3, 1e-4, 50) for s in range(1, 51)]
    assert np.allclose(lrs, 1e-3 * np.arange(1, 51) / 50, rtol=0, atol=1e-18)  # a line through 0
    assert lrs[-1] == 1e-3
    assert lr_schedule(25, 1000, 1e-3, 1e-4, 50) == 5e-4


def test_schedule_decays_monotonically_to_lr_min_at_the_last_step():
    lrs = [lr_schedule(s, 1000, 1e-3, 1e-4, 50) for s in range(50, 1001)]
    assert max(lrs) == 1e-3 and lrs[0] == 1e-3
    assert all(a >= b for a, b in zip(lrs, lrs[1:]))
    assert lrs[-1] == pytest.approx(1e-4, abs=1e-18)
    # half way through the cosine, the rate is half way between the two
    assert lr_schedule(525, 1000, 1e-3, 1e-4, 50) == pytest.approx(5.5e-4, rel=1e-12)


def test_schedule_shorter_than_warmup_still_ends_at_lr_min():
    assert lr_schedule(10, 10, 1e-3, 1e-4, 50) == pytest.approx(1e-4)
    assert lr_schedule(1, 10, 1e-3, 1e-4, 50) == pytest.approx(1e-3 / 9)


def test_clip_scales_to_max_norm_when_larger():
    grads = pack({"a": np.array([3.0]), "b": np.array([[4.0]])})  # global norm 5
    assert clip_grad_norm(grads, 1.0) == 5.0
    assert np.allclose(flat_buffer(grads), [0.6, 0.8], rtol=0, atol=1e-15)
    assert np.isclose(np.linalg.norm(flat_buffer(grads)), 1.0, rtol=0, atol=1e-15)


def test_clip_scales_a_norm_just_above_max_norm():
    # a norm between max_norm and twice it: `norm > 2 * max_norm` would leave these as they are
    grads = pack({"a": np.array([0.9]), "b": np.array([[1.2]])})  # global norm 1.5
    assert clip_grad_norm(grads, 1.0) == pytest.approx(1.5)
    assert np.allclose(flat_buffer(grads), [0.6, 0.8], rtol=0, atol=1e-15)


def test_clip_leaves_small_gradients_untouched():
    grads = pack({"a": np.array([0.3]), "b": np.array([[0.4]])})
    assert clip_grad_norm(grads, 1.0) == pytest.approx(0.5)
    assert np.array_equal(flat_buffer(grads), [0.3, 0.4])


def one_step(params, grads, weight_decay):
    opt = Adam(params, weight_decay=weight_decay)
    opt.step(params, grads, lr=1e-2)


def test_adamw_decays_unused_pos_rows_only_with_weight_decay(tiny_cfg, tiny_params, tiny_batch):
    # the embeddings page's table: T = 5 on a table of 8 rows
    _, grads = loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
    gradient_rows = np.any(grads["pos_emb"] != 0, axis=1)
    assert list(gradient_rows) == [True] * 5 + [False] * 3
    for weight_decay, rows_that_change in [(0.0, [True] * 5 + [False] * 3), (0.01, [True] * 8)]:
        params = pack(tiny_params)
        one_step(params, grads, weight_decay)
        changed = np.any(params["pos_emb"] != tiny_params["pos_emb"], axis=1)
        assert list(changed) == rows_that_change, weight_decay


def test_first_adam_step_moves_each_entry_by_lr_times_sign_of_gradient():
    # after one step m_hat = g and v_hat = g^2, so the update is lr * g / (|g| + eps)
    params = pack({"b": np.array([1.0, 1.0, 1.0])})
    grads = pack({"b": np.array([0.5, -2.0, 0.0])})
    Adam(params, weight_decay=0.0).step(params, grads, lr=0.1)
    assert np.allclose(params["b"], [0.9, 1.1, 1.0], rtol=0, atol=1e-8)  # eps shifts it by ~2e-9


def test_adamw_matches_torch_over_several_steps(tiny_cfg, tiny_params, tiny_batch):
    torch = torch_or_skip()
    import torch_gpt
    params = pack(tiny_params)
    tparams = torch_gpt.to_torch(params)
    opt = Adam(params, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1)
    t_opt = torch_gpt.adamw(tparams, lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    rng = np.random.default_rng(2)
    for step, lr in enumerate([1e-2, 5e-3, 2e-2, 1e-3, 1e-2]):
        grads = zeros_like(params)
        flat_buffer(grads)[...] = rng.normal(size=flat_buffer(grads).size)
        grads["block0.b1"][...] = 0.0  # a vector with no gradient at all: no decay may reach it
        for name, t in tparams.items():
            t.grad = torch.tensor(grads[name])
        for group in t_opt.param_groups:
            group["lr"] = lr
        opt.step(params, grads, lr)
        t_opt.step()
        for name, t in tparams.items():
            assert np.max(np.abs(params[name] - t.detach().numpy())) < 1e-12, (step, name)


def test_state_round_trip(tiny_params):
    params = pack(tiny_params)
    grads = zeros_like(params)
    flat_buffer(grads)[...] = 0.1
    opt = Adam(params)
    opt.step(params, grads, 1e-3)
    other = Adam(params)
    other.load_state({k: np.copy(v) for k, v in opt.state().items()})
    assert other.t == 1 and np.array_equal(other.m, opt.m) and np.array_equal(other.v, opt.v)


@pytest.mark.parametrize("wrong", ["m", "v"])
def test_state_of_another_size_is_refused_with_its_size(tiny_params, wrong):
    params = pack(tiny_params)
    opt = Adam(params)
    state = {k: np.copy(v) for k, v in opt.state().items()}
    state[wrong] = np.zeros(7, dtype=opt.m.dtype)
    other = Adam(params)
    with pytest.raises(ValueError) as refused:
        other.load_state(state)
    assert str(refused.value) == (f"the optimizer state's {wrong} holds 7 numbers, the model has {opt.m.size}: "
                                  f"it was saved for another model")


def test_defaults_are_those_of_config_and_the_decay_group_has_the_parameters_dtype(tiny_params):
    params = pack(tiny_params, np.float32)
    opt = Adam(params)
    assert (opt.beta1, opt.beta2, opt.eps, opt.weight_decay) == (config.beta1, config.beta2, config.adam_eps,
                                                                  config.weight_decay)
    grads = pack({name: np.ones_like(p) for name, p in params.items()})
    opt.step(params, grads, 1e-3)
    assert opt.m.dtype == opt.v.dtype == np.float32  # the update stays in the parameters' dtype
    assert all(p.dtype == np.float32 for p in params.values())


def test_adamw_in_chunks_is_the_update_over_the_whole_vector():
    """Adam.step runs over CHUNK numbers at a time; over several chunks and a shorter last one it gives
    the numbers of the equations written over the whole vector at once, bit for bit."""
    rng = np.random.default_rng(0)
    shapes = {"table": (3, CHUNK // 2 + 5), "matrix": (CHUNK // 3, 2), "bias": (7,)}
    params = pack({name: rng.standard_normal(shape) for name, shape in shapes.items()})
    expected = {name: p.copy() for name, p in params.items()}
    opt, beta1, beta2, eps, decay, lr = Adam(params), 0.9, 0.999, 1e-8, 0.01, 1e-2
    m, v = np.zeros(flat_buffer(params).size), np.zeros(flat_buffer(params).size)
    for t in (1, 2, 3):
        grads = pack({name: rng.standard_normal(shape) for name, shape in shapes.items()})
        opt.step(params, grads, lr)
        g = flat_buffer(grads)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        for name in ("table", "matrix"):  # decoupled decay: matrices only
            expected[name] -= lr * decay * expected[name]
        flat = np.concatenate([expected[name].reshape(-1) for name in shapes])
        flat -= lr * (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + eps)
        expected = {name: view.copy() for name, view in zip(shapes, np.split(flat, np.cumsum(
            [np.prod(s) for s in shapes.values()])[:-1]))}
        expected = {name: expected[name].reshape(shapes[name]) for name in shapes}
    assert flat_buffer(params).size > 2 * CHUNK
    for name in shapes:
        assert np.array_equal(params[name], expected[name]), name


def test_adamw_makes_no_array_the_size_of_the_model():
    """Its temporaries are a few chunks, and the decay's one matrix: an update of a 16 MB model of four
    4 MB matrices allocates well under the model's size (at GPT-2 124M: 154 MB at most, of 650)."""
    import tracemalloc
    shapes = {f"W{i}": (1000, 500) for i in range(4)} | {"b": (500,)}
    params = pack({name: np.ones(shape) for name, shape in shapes.items()})
    opt = Adam(params)
    grads = pack({name: np.full(shape, 0.5) for name, shape in shapes.items()})
    opt.step(params, grads, 1e-3)  # m and v are touched once
    tracemalloc.start()
    try:
        opt.step(params, grads, 1e-3)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    largest, chunk_bytes = params["W0"].nbytes, CHUNK * 8  # float64
    assert peak <= largest + 6 * chunk_bytes < flat_buffer(params).nbytes / 2, (peak, largest)
