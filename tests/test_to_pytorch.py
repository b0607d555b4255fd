"""examples/to_pytorch.py: a saved checkpoint, loaded into its PyTorch module, gives our logits."""

import importlib.util

import numpy as np
import pytest

from conftest import REPO, torch_or_skip

torch = torch_or_skip()

from engineering.checkpoint import save_model, shape_record  # noqa: E402
from tokenizer import BPETokenizer  # noqa: E402
from transformer import ModelConfig, forward, init_params, param_shapes  # noqa: E402

EXAMPLE = REPO / "examples" / "to_pytorch.py"
ATOL = {np.float32: 1e-4, np.float64: 1e-10}


def load_example():
    spec = importlib.util.spec_from_file_location("to_pytorch", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


to_pytorch = load_example()


def saved_model(folder, dtype):
    """A random model saved as a checkpoint: every gain and bias off 1 and 0, C != F != V."""
    tokenizer = BPETokenizer.train(["some text"], 5)
    cfg = ModelConfig(vocab_size=tokenizer.vocab_size, context_len=8, emb_dim=8, num_heads=2, num_layers=2,
                      ff_dim=12, ln_eps=1e-5)
    rng = np.random.default_rng(7)
    params = init_params(cfg, rng, dtype)
    for tensor in params.values():
        tensor += rng.normal(0.0, 0.2, tensor.shape)
    save_model(folder, params, cfg, tokenizer, {})
    return cfg, params


def logits_gap(model, params, ids, cfg):
    ours, _ = forward(params, ids, cfg)
    with torch.no_grad():
        theirs = model(torch.from_numpy(ids)).numpy()
    assert theirs.shape == ours.shape
    return float(np.max(np.abs(theirs - ours)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_loaded_module_gives_our_logits(tmp_path, dtype):
    cfg, params = saved_model(tmp_path, dtype)
    model = to_pytorch.load_gpt(tmp_path, dtype=torch.float32 if dtype == np.float32 else torch.float64)
    rng = np.random.default_rng(8)
    batch = rng.integers(0, cfg.vocab_size, size=(3, cfg.context_len))  # (B, T), the full context
    sequence = np.array([3, 1, 4, 1, 5])  # (T,), shorter than context_len
    assert logits_gap(model, params, batch, cfg) < ATOL[dtype]
    assert logits_gap(model, params, sequence, cfg) < ATOL[dtype]


def test_the_comparison_catches_an_untransposed_weight(tmp_path):
    # Wq is square, so a missed transpose loads without a shape error: only the logits can tell
    cfg, params = saved_model(tmp_path, np.float32)
    model = to_pytorch.load_gpt(tmp_path)
    with torch.no_grad():
        model.blocks[0].query.weight.copy_(model.blocks[0].query.weight.T.clone())
    assert logits_gap(model, params, np.array([[3, 1, 4, 1, 5]]), cfg) > 1e-2


def test_torch_names_cover_every_parameter_once():
    cfg = ModelConfig(vocab_size=5, context_len=4, emb_dim=4, num_heads=2, num_layers=3, ff_dim=6, ln_eps=1e-5)
    model = to_pytorch.GPT(**shape_record(cfg))  # as load_gpt builds it from model.json
    names = [to_pytorch.torch_name(name) for name in param_shapes(cfg)]
    assert sorted(names) == sorted(model.state_dict())
    assert to_pytorch.torch_name("block2.W1") == "blocks.2.mlp.0.weight"
