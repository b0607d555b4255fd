"""Shared fixtures: a tiny model small enough to check every entry of every gradient."""

import numpy as np
import pytest

from transformer import ModelConfig, init_params


@pytest.fixture
def tiny_cfg():
    # T = 5 windows on a table of 8 positions: rows 5..7 of pos_emb are never read
    return ModelConfig(vocab_size=7, context_len=8, emb_dim=4, num_heads=2, num_layers=2, ff_dim=8, ln_eps=1e-5)


@pytest.fixture
def tiny_params(tiny_cfg):
    """float64 parameters with every tensor random, gains and biases too, so no path hides at 0 or 1."""
    rng = np.random.default_rng(0)
    params = init_params(tiny_cfg, rng)
    for tensor in params.values():
        tensor += rng.normal(0.0, 0.3, tensor.shape)
    return params


@pytest.fixture
def tiny_batch(tiny_cfg):
    """ids and targets of shape (B, T) = (3, 5), with a repeated id so np.add.at has work to do."""
    rng = np.random.default_rng(1)
    ids = rng.integers(0, tiny_cfg.vocab_size, size=(3, 5))
    ids[0, :2] = 3
    targets = rng.integers(0, tiny_cfg.vocab_size, size=(3, 5))
    return ids, targets
