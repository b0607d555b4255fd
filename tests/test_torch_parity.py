"""Our hand-written loss_and_grads against PyTorch autograd, in float64, to 1e-9 absolute: GPT-2's model, and
each of today's options on its own and all of them together."""

import numpy as np
import pytest

from conftest import torch_or_skip

torch = torch_or_skip()
import torch_gpt  # noqa: E402  (needs torch)

from transformer import ModelConfig, forward, init_params, loss_and_grads  # noqa: E402

ATOL = 1e-9
SIZES = {"vocab_size": 11, "context_len": 8, "emb_dim": 8, "num_heads": 2, "num_layers": 2, "ff_dim": 16,
         "ln_eps": 1e-5}
# each of today's options on its own, then all together (kv_heads < num_heads, head_dim != C / nh)
OPTIONS = {"norm": {"norm": "rmsnorm"}, "positions": {"positions": "rope", "rope_theta": 100.0},
           "mlp": {"mlp": "swiglu"}, "kv_heads": {"num_heads": 4, "kv_heads": 2}, "qk_norm": {"qk_norm": True},
           "bias": {"bias": False}, "tied_head": {"tied_head": True}, "head_dim": {"head_dim": 6}}
EVERY_OPTION = {name: value for option in OPTIONS.values() for name, value in option.items()}
CONFIGS = {"gpt2": ModelConfig(**SIZES),
           **{name: ModelConfig(**{**SIZES, **option}) for name, option in OPTIONS.items()},
           "every option": ModelConfig(**{**SIZES, **EVERY_OPTION})}


@pytest.fixture(params=CONFIGS.values(), ids=CONFIGS.keys())
def model(request):
    cfg = request.param
    rng = np.random.default_rng(5)
    params = init_params(cfg, rng)
    for tensor in params.values():  # every gain and bias off its initial value too
        tensor += rng.normal(0.0, 0.2, tensor.shape)
    return cfg, params


def test_loss_and_every_gradient_match_autograd(model):
    cfg, params = model
    rng = np.random.default_rng(6)
    ids = rng.integers(0, cfg.vocab_size, size=(3, 6))  # B = 3 sequences of T = 6 < context_len
    ids[1, :3] = 4  # a repeated id
    targets = rng.integers(0, cfg.vocab_size, size=(3, 6))
    loss, grads = loss_and_grads(params, ids, targets, cfg)
    t_loss, t_grads = torch_gpt.loss_and_grads(torch_gpt.to_torch(params), torch.tensor(ids), torch.tensor(targets), cfg)
    assert abs(loss - t_loss) < ATOL
    assert list(grads) == list(t_grads)
    gaps = {name: float(np.max(np.abs(grads[name] - t_grads[name]))) for name in grads}
    worst = max(gaps, key=gaps.get)
    assert gaps[worst] < ATOL, f"{worst}: {gaps[worst]:.2e}"


def test_logits_match(model):
    cfg, params = model
    ids = np.array([[1, 2, 3, 4, 5, 6, 7, 8], [8, 7, 6, 5, 4, 3, 2, 1]])  # the full context
    logits, _ = forward(params, ids, cfg)
    with torch.no_grad():
        t_logits = torch_gpt.forward(torch_gpt.to_torch(params, requires_grad=False), torch.tensor(ids), cfg)
    assert np.max(np.abs(logits - t_logits.numpy())) < ATOL
