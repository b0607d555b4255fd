"""Shared fixtures: a tiny model small enough to check every entry of every gradient, and a tiny
trained checkpoint for the tests of the scripts."""

import types

import pytest

import gradcheck


@pytest.fixture
def tiny_cfg():
    return gradcheck.TINY


@pytest.fixture
def tiny_params():
    """gradcheck's tiny model: float64, every tensor random, so no path hides at 0 or 1."""
    return gradcheck.tiny_model()[1]


@pytest.fixture
def tiny_batch():
    """ids and targets of shape (B, T) = (3, 5), with a repeated id so np.add.at has work to do."""
    return gradcheck.tiny_model()[2:]


def tiny_corpus_rows():
    """300 short rows from a little grammar: 6 subjects x 5 verbs x 5 objects, twice over."""
    subjects = ["the cat", "the dog", "a bird", "my friend", "the old man", "a small fox"]
    verbs = ["sat on", "ran to", "looked at", "jumped over", "slept near"]
    objects = ["the mat.", "the tree.", "a red ball.", "the river.", "the house."]
    rows = [f"{s} {v} {o}" for s in subjects for v in verbs for o in objects]
    return rows * 2


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory):
    """The folder of a checkpoint trained for a second on tiny_corpus_rows, once per test run."""
    import config
    import train

    folder = tmp_path_factory.mktemp("tiny-model")
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(tiny_corpus_rows()) + "\n", encoding="utf-8")
    overrides = {"corpus_path": str(corpus), "checkpoint": str(folder / "checkpoint"), "epochs": 3,
                 "num_merges": 30, "context_len": 8, "seq_len": 8, "stride": 2, "emb_dim": 16, "num_heads": 2,
                 "head_dim": 8, "num_layers": 1, "ff_dim": 32, "warmup_steps": 10, "lr_max": 1e-2}
    s = types.SimpleNamespace(**{**config.defaults(), **overrides})
    config.check(s)
    return train.train(s)
