"""Today's options of the model (ModelConfig's norm, positions, mlp, kv_heads, qk_norm, bias, tied_head, head_dim):
GPT-2's model where every one is at its default, the tensors each one makes, generation with the key/value cache,
and a model of them trained, saved, read back and talked to from the command line. Each layer's gradient is
gradcheck.py's (tests/test_gradcheck.py), the whole model's is PyTorch's (tests/test_torch_parity.py)."""

import json

import numpy as np
import pytest

import config
import train
from conftest import one_line_error, run_main, tiny_settings
from engineering import checkpoint, gpt2, settings
from gradcheck import TINY, TINY_MODERN, tiny_model
from transformer import (ModelConfig, cross_entropy_backward, cross_entropy_forward, forward, forward_cached,
                         init_params, loss_and_grads, modern_backward, modern_forward, modern_param_shapes,
                         param_shapes, rope_angles, rope_forward, zeros_like)

# every option of today's on, as a person types them on the command line
MODERN = {"norm": "rmsnorm", "positions": "rope", "mlp": "swiglu", "kv_heads": 1, "qk_norm": True, "bias": False,
          "tied_head": True}


def test_every_option_at_its_default_takes_gpt2s_path_and_the_modern_path_computes_it_bit_for_bit():
    # modern_forward and modern_backward take each piece as cfg picks it: with every default, GPT-2's pieces
    assert TINY.family == "gpt2" and TINY_MODERN.family == "modern"
    assert list(modern_param_shapes(TINY).items()) == list(param_shapes(TINY).items())
    cfg, params, ids, targets = tiny_model()
    logits, cache = forward(params, ids, cfg)
    modern_logits, modern_cache = modern_forward(params, ids, cfg)
    assert np.array_equal(logits, modern_logits)
    loss, grads = loss_and_grads(params, ids, targets, cfg)
    _, loss_cache = cross_entropy_forward(modern_logits.reshape(-1, cfg.vocab_size), targets.reshape(-1))
    modern_grads = zeros_like(params)
    modern_backward(cross_entropy_backward(loss_cache).reshape(*ids.shape, -1), modern_cache, modern_grads, cfg)
    assert all(np.array_equal(grads[name], modern_grads[name]) for name in params)


def test_the_tensors_of_every_option_in_their_canonical_order():
    cfg = ModelConfig(vocab_size=7, context_len=8, emb_dim=4, num_heads=2, num_layers=1, ff_dim=8, ln_eps=1e-5,
                      **{**MODERN, "head_dim": 6})
    assert param_shapes(cfg) == {
        "tok_emb": (7, 4), "block0.rms1_gain": (4,), "block0.Wq": (4, 12), "block0.Wk": (4, 6), "block0.Wv": (4, 6),
        "block0.rmsq_gain": (6,), "block0.rmsk_gain": (6,), "block0.Wo": (12, 4), "block0.rms2_gain": (4,),
        "block0.W_gate": (4, 8), "block0.W_up": (4, 8), "block0.W_down": (8, 4), "rmsf_gain": (4,)}
    assert list(param_shapes(cfg)) == list(param_shapes(cfg).keys())  # init_params and checkpoints keep this order
    with_biases = ModelConfig(**{**vars(cfg), "bias": True, "norm": "layernorm", "tied_head": False})
    assert [name for name in param_shapes(with_biases) if name.startswith("block0.")] == [
        "block0.ln1_gain", "block0.ln1_shift", "block0.Wq", "block0.bq", "block0.Wk", "block0.bk", "block0.Wv",
        "block0.bv", "block0.rmsq_gain", "block0.rmsk_gain", "block0.Wo", "block0.bo", "block0.ln2_gain",
        "block0.ln2_shift", "block0.W_gate", "block0.b_gate", "block0.W_up", "block0.b_up", "block0.W_down",
        "block0.b_down"]
    assert list(param_shapes(with_biases))[-4:] == ["lnf_gain", "lnf_shift", "W_out", "b_out"]


def test_init_gives_every_new_gain_1_and_draws_every_matrix():
    params = init_params(TINY_MODERN, np.random.default_rng(0))
    for name, tensor in params.items():
        if name.endswith("_gain"):
            assert np.array_equal(tensor, np.ones_like(tensor)), name
        else:
            bound = np.sqrt(6 / sum(tensor.shape))  # Xavier uniform
            assert tensor.ndim == 2 and np.all(np.abs(tensor) <= bound) and np.std(tensor) > bound / 4, name


@pytest.mark.parametrize("options", [MODERN, {"kv_heads": 2, "num_heads": 4, "positions": "rope"}],
                         ids=["every option", "two key/value heads for four query heads"])
def test_generation_with_the_key_value_cache_equals_the_whole_forward(options):
    cfg = ModelConfig(**{"vocab_size": 7, "context_len": 8, "emb_dim": 8, "num_heads": 2, "num_layers": 2, "ff_dim": 8,
                         "ln_eps": 1e-5, **options})
    rng = np.random.default_rng(3)
    params = init_params(cfg, rng)
    for tensor in params.values():
        tensor += rng.normal(0.0, 0.3, tensor.shape)
    ids = np.array([3, 1, 4, 1, 5, 6])
    whole, _ = forward(params, ids, cfg)
    first, past = forward_cached(params, ids[:3], cfg)
    second, past = forward_cached(params, ids[3:5], cfg, past)
    third, past = forward_cached(params, ids[5:], cfg, past)
    for logits, position in ((first, 2), (second, 4), (third, 5)):  # each turned at its own positions (RoPE)
        assert np.allclose(logits, whole[position], rtol=0, atol=1e-12), position
    assert all(k.shape == v.shape == (1, cfg.kv_heads, 6, cfg.head_dim) for k, v in past)  # kv_heads heads kept


def test_rope_scores_depend_on_the_distance_between_positions_only():
    rng = np.random.default_rng(1)
    q, k = rng.normal(size=(1, 8)), rng.normal(size=(1, 8))

    def turned(x, position):
        angles = rope_angles(position, 1, 8, 100.0)
        return rope_forward(x, np.cos(angles), np.sin(angles))[0]

    def score(t, s):  # q at position t turned, dotted with k at position s turned
        return (turned(q, t) @ turned(k, s).T).item()
    assert np.isclose(score(5, 2), score(12, 9), rtol=0, atol=1e-12) and not np.isclose(score(5, 2), score(5, 3))


def test_a_tied_head_sends_the_token_table_the_gradient_of_both_its_uses():
    cfg = ModelConfig(vocab_size=7, context_len=8, emb_dim=4, num_heads=2, num_layers=1, ff_dim=8, ln_eps=1e-5,
                      tied_head=True)
    params = init_params(cfg, np.random.default_rng(0))
    ids, targets = np.array([[1, 2, 1]]), np.array([[2, 1, 2]])
    _, grads = loss_and_grads(params, ids, targets, cfg)
    assert "W_out" not in grads and "b_out" not in grads
    assert np.all(np.abs(grads["tok_emb"][[0, 3, 4, 5, 6]]).sum(axis=1) > 0)  # rows of no input id: the head's alone


@pytest.mark.parametrize("field, value, message", [
    ("norm", "rms", "norm must be 'layernorm' or 'rmsnorm', got 'rms'"),
    ("positions", "sin", "positions must be 'learned' or 'rope', got 'sin'"),
    ("mlp", "relu", "mlp must be 'gelu' or 'swiglu', got 'relu'"),
    ("kv_heads", 3, "kv_heads (3) must divide num_heads (2)"),
    ("bias", 0, "bias must be True or False, got 0"),
    ("head_dim", -1, "head_dim must be 0 or a positive integer, got -1"),
    ("rope_theta", 0.0, "rope_theta must be positive, got 0.0"),
])
def test_a_bad_option_is_a_value_error_naming_it(field, value, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ModelConfig(vocab_size=7, context_len=8, emb_dim=4, num_heads=2, num_layers=1, ff_dim=8, ln_eps=1e-5,
                    **{field: value})


def test_rope_needs_an_even_head_dim_and_head_dim_frees_emb_dim_from_num_heads():
    with pytest.raises(ValueError, match="head_dim must be even, got 3"):
        ModelConfig(7, 8, 6, 2, 1, 8, 1e-5, positions="rope")
    assert ModelConfig(7, 8, 6, 4, 1, 8, 1e-5, head_dim=2).head_dim == 2  # 6 is not divisible by 4


def test_the_options_are_settings_of_config_py_with_gpt2s_values_and_typed_true_or_false():
    assert {name: getattr(config, name) for name in settings.MODEL_OPTIONS} == settings.MODEL_OPTIONS
    parser = settings.SettingsParser(config, "test")
    s = parser.settings(parser.parse(["--bias", "false", "--tied_head", "True", "--qk_norm", "TRUE"]))
    assert (s.bias, s.tied_head, s.qk_norm) == (False, True, True)
    assert one_line_error(run_main("train.py", "--bias", "no")) == \
        "train.py: argument --bias: 'no' is neither true nor false (see --help)"
    assert one_line_error(run_main("train.py", "--kv_heads", "3")) == \
        "error: kv_heads (3) must divide num_heads (2): each key/value head serves num_heads / kv_heads query heads"


def test_a_gpt2_to_fine_tune_refuses_an_option_it_does_not_have():
    s = tiny_settings("ck", "corpus.csv", norm="rmsnorm")
    with pytest.raises(settings.InputError, match="--norm rmsnorm is not a GPT-2's"):
        gpt2.adopt_shape(s, TINY, "gpt2", given={"norm"})
    assert gpt2.adopt_shape(settings.replaced(s, {"norm": "layernorm"}), TINY, "gpt2", given=set()).norm == "layernorm"


def test_a_modern_model_trains_is_read_back_and_talked_to(tmp_path, corpus):
    folder = train.train(tiny_settings(tmp_path / "ck", corpus, max_steps=20, eval_interval=10, **MODERN))
    model = checkpoint.load(folder)
    assert model.cfg == ModelConfig(**{**vars(model.cfg), **MODERN}) and model.cfg.family == "modern"
    assert list(model.params) == list(param_shapes(model.cfg))
    recorded = json.loads((folder / "model.json").read_text())
    assert {name: recorded["model"][name] for name in MODERN} == MODERN  # and only where not GPT-2's:
    assert "head_dim" not in recorded["model"] and "rope_theta" not in recorded["model"]
    assert recorded["settings"]["qk_norm"] is True and "rope_theta" not in recorded["settings"]
    generated = run_main("generate.py", "the cat", "--checkpoint", folder, "--max_new_tokens", "5", "--seed", "1")
    assert generated.returncode == 0 and generated.stdout.startswith("the cat"), generated.stderr
    talked = run_main("talk.py", "--checkpoint", folder, stdin="the dog\n/quit\n")
    assert talked.returncode == 0 and "Traceback" not in talked.stderr, talked.stderr


def test_a_gpt2_family_run_records_no_option(tiny_checkpoint):
    recorded = json.loads((tiny_checkpoint / "model.json").read_text())
    assert list(recorded["model"]) == ["vocab_size", "context_len", "emb_dim", "num_heads", "num_layers", "ff_dim",
                                       "ln_eps"]
    assert not set(settings.MODEL_OPTIONS) & set(recorded["settings"])
    assert not set(settings.MODEL_OPTIONS) & set(json.loads((tiny_checkpoint / "resume.json").read_text())["settings"])
