"""Hand-checked worked examples for the docs pages on training, the tokenizer and sampling.

Each test holds the numbers one page shows (docs/08-training.md, docs/09-tokenizer.md,
docs/10-sampling.md), with the derivation by hand in the comments, so a reader can check the
page with a pencil and the test fails if the code stops agreeing with it.
"""

import math

import numpy as np
import pytest

from conftest import tiny_settings
from engineering import corpus
import tokenizer
import train
from transformer import Adam, Sampling, decay_group, filtered_probs, generate, sample_next
from tokenizer import BPETokenizer
from transformer import ModelConfig, forward, forward_cached, init_params, pack, zeros_like


# --- docs/08-training.md ------------------------------------------------------------------------

def test_token_stream_ends_each_row_with_its_newline():
    # The rows "ab" and "ab" are trained on as "ab\n": the alphabet sorted by code point is
    # "\n" (10) < "a" (97) < "b" (98), ids 0 1 2, so each row is [1, 2, 0].
    # Pairs: (1, 2) twice and (2, 0) twice; the tie goes to the smaller pair (1, 2), id 3.
    # Each row becomes [3, 0], and the stream joins the rows: [3, 0, 3, 0].
    text = "ab\nab\n"  # the rows "ab" and "ab" of a CSV, as corpus.read_corpus joins them
    tok = BPETokenizer.train([text], 1)
    assert tok.alphabet == ["\n", "a", "b"] and tok.merges == [(1, 2)]
    assert tok.encode(text) == [3, 0, 3, 0]  # the stream train.prepare_data cuts into windows


def test_windows_worked_example():
    # 7 tokens, seq_len 2, stride 2: windows of 3 tokens start at 0, 2 and 4 (a window starting
    # at 6 would need tokens 6, 7, 8). Inputs are the first 2 of each, targets the last 2.
    stream = [0, 1, 2, 3, 4, 5, 6]
    inputs, targets = corpus.make_windows(np.array(stream), 2, 2, "example")
    assert inputs.tolist() == [[0, 1], [2, 3], [4, 5]]
    assert targets.tolist() == [[1, 2], [3, 4], [5, 6]]
    # stride 1: floor((7 - 3) / 1) + 1 = 5 windows, each starting one token after the last
    inputs, targets = corpus.make_windows(np.array(stream), 2, 1, "example")
    assert inputs.tolist() == [[0, 1], [1, 2], [2, 3], [3, 4], [4, 5]] and targets.tolist()[-1] == [5, 6]
    # a window needs seq_len + 1 tokens: 3 tokens make one window of seq_len 2, and none of seq_len 3
    assert len(corpus.make_windows(np.arange(3), 2, 1, "example")[0]) == 1
    with pytest.raises(ValueError, match=r"3 tokens, fewer than one window of seq_len \+ 1 = 4"):
        corpus.make_windows(np.arange(3), 3, 1, "example")


def test_each_epoch_visits_every_window_once_in_the_seeded_order(tmp_path, monkeypatch):
    # 8 one-letter rows; val_fraction 0.25 holds out 2, so 6 training rows of 2 tokens ("x\n")
    # make a stream of 12 tokens and, at seq_len 2 and stride 1, 12 - 3 + 1 = 10 windows.
    # batch_size 4: ceil(10 / 4) = 3 steps per epoch, the last with the 2 windows left over.
    letters = tmp_path / "letters.csv"
    letters.write_text("text\n" + "\n".join("abcdefgh") + "\n", encoding="utf-8")
    s = tiny_settings(tmp_path / "ck", letters, num_merges=0, val_fraction=0.25, seq_len=2, stride=1, context_len=4,
                      emb_dim=4, ff_dim=8, batch_size=4, epochs=2, warmup_steps=1, max_new_tokens=2)
    seen = []
    original = train.loss_and_grads  # what each step calls, in this process

    def spy(params, ids, targets, cfg):
        seen.append(ids.copy())
        return original(params, ids, targets, cfg)

    monkeypatch.setattr(train, "loss_and_grads", spy)
    train.train(s)

    rows, _, _ = corpus.read_rows(letters, "text", s.max_rows)
    train_rows, val_rows = corpus.split_rows(rows, 0.25, 42)
    tok = BPETokenizer.train(["".join(row + "\n" for row in rows)], 0)
    inputs, _ = corpus.make_windows(np.array(tok.encode("".join(row + "\n" for row in train_rows))), 2, 1,
                                    "training")
    assert len(inputs) == 10
    # the order of epoch e is a permutation seeded with (seed, e) = (42, e)
    expected = []
    for epoch in range(2):
        order = np.random.default_rng([42, epoch]).permutation(10)
        expected += [inputs[order[0:4]], inputs[order[4:8]], inputs[order[8:12]]]
    assert len(seen) == 6
    assert all(np.array_equal(got, want) for got, want in zip(seen, expected))
    assert [len(batch) for batch in seen] == [4, 4, 2, 4, 4, 2]


def test_adamw_two_steps_by_hand():
    # One matrix W = [[1, -2]] and one bias b = [0.5]; lr 0.1, weight_decay 0.5, beta1 0.9,
    # beta2 0.999, eps 1e-8. The gradient is [[0.1, 0]] on W and [0] on b at both steps.
    # Step 1: m = 0.1 * 0.1 = 0.01, v = 0.001 * 0.01 = 1e-5;
    #   m_hat = 0.01 / (1 - 0.9) = 0.1, v_hat = 1e-5 / (1 - 0.999) = 0.01, sqrt(v_hat) = 0.1.
    #   W[0, 0]: decay 1 - 0.1 * 0.5 * 1 = 0.95, then 0.95 - 0.1 * 0.1 / (0.1 + 1e-8) = 0.85000001
    #   W[0, 1]: gradient 0, so m = v = 0 and the update is 0 / (0 + eps) = 0: decay only, -2 * 0.95 = -1.9
    #   b: gradient 0 and not a matrix: no decay, no update, 0.5.
    # Step 2: m = 0.9 * 0.01 + 0.01 = 0.019, v = 0.999 * 1e-5 + 1e-5 = 1.999e-5;
    #   m_hat = 0.019 / (1 - 0.81) = 0.1, v_hat = 1.999e-5 / (1 - 0.998001) = 0.01: a constant
    #   gradient gives m_hat = g and v_hat = g^2 at every step, which is what the bias correction is for.
    #   W[0, 0]: 0.85000001 * 0.95 - 0.09999999 = 0.7075000195;  W[0, 1]: -2 * 0.95^2 = -1.805.
    weights = [[1.0, -2.0]]
    bias = [0.5]
    gradient = [[0.1, 0.0]]
    params = pack({"W": np.array(weights), "b": np.array(bias)})
    grads = pack({"W": np.array(gradient), "b": np.array([0.0])})
    opt = Adam(params, 0.9, 0.999, 1e-8, 0.5)
    opt.step(params, grads, 0.1)
    assert np.allclose(opt.m, [0.01, 0, 0], rtol=0, atol=1e-15)
    assert np.allclose(opt.v, [1e-5, 0, 0], rtol=0, atol=1e-18)
    assert np.allclose(params["W"], [[0.85000001, -1.9]], rtol=0, atol=1e-12)
    assert params["b"][0] == 0.5
    opt.step(params, grads, 0.1)
    assert np.allclose(opt.m, [0.019, 0, 0], rtol=0, atol=1e-15)
    assert np.allclose(params["W"], [[0.7075000195, -1.805]], rtol=0, atol=1e-12)
    assert params["b"][0] == 0.5


def test_decay_group_at_the_settings_of_config():
    # V = 560 (the sample corpus), C = 32, F = 128, Tmax = 32, L = 2.
    # Matrices: tok_emb 560*32 + pos_emb 32*32 + 2 blocks * (4 * 32*32 + 2 * 32*128) + W_out 32*560
    #         = 17920 + 1024 + 2 * 12288 + 17920 = 61440
    # Vectors: 2 blocks * (4 LN * 32 + 4 attention biases * 32 + b1 128 + b2 32) + lnf 2 * 32 + b_out 560
    #         = 2 * 416 + 64 + 560 = 1456
    params = init_params(ModelConfig(560, 32, 32, 2, 2, 128, 1e-5), np.random.default_rng(0))
    assert sum(tensor.size for tensor in decay_group(params)) == 61440
    assert sum(tensor.size for tensor in params.values()) - 61440 == 1456


def test_bits_per_character_of_a_uniform_model():
    # All-zero parameters make every logit 0, so the model is uniform over V = 7 tokens: ln 7 =
    # 1.9459 nats, log2 7 = 2.8074 bits per token. In the stream [0, 6, 3] the first token is only
    # read; the targets [6, 3] spell "aaab" + "d", 5 characters, so bits per character =
    # 2 * 2.8074 / 5 = 1.1229. (Counted from the inputs [0, 6] it would be 2 * 2.8074 / 5 too: the
    # stream [5, 6, 3] below tells them apart, as its inputs spell 6 characters.)
    tok = BPETokenizer.train(["aaabdaaabac"], 10)
    token_chars = train.token_lengths(tok)
    assert token_chars.tolist() == [1, 1, 1, 1, 2, 2, 4]
    cfg = ModelConfig(7, 4, 4, 2, 1, 8, 1e-5)
    params = zeros_like(init_params(cfg, np.random.default_rng(0)))
    stream = [0, 6, 3]
    nats, bpc = train.evaluate(params, cfg, np.array(stream), 2, token_chars)
    assert math.isclose(nats, math.log(7), rel_tol=1e-12)
    assert math.isclose(bpc, 2 * math.log2(7) / 5, rel_tol=1e-12)
    assert round(bpc, 4) == 1.1229
    _, bpc = train.evaluate(params, cfg, np.array([5, 6, 3]), 2, token_chars)
    assert round(bpc, 4) == 1.1229


# --- docs/09-tokenizer.md -----------------------------------------------------------------------

def test_pair_counts_before_and_after_the_first_merge():
    # "aaabdaaabac" as ids: a a a b d a a a b a c = [0, 0, 0, 1, 3, 0, 0, 0, 1, 0, 2].
    # Adjacent pairs: (0,0) (0,0) (0,1) (1,3) (3,0) (0,0) (0,0) (0,1) (1,0) (0,2)
    #   -> (0,0): 4, (0,1): 2, (1,3): 1, (3,0): 1, (1,0): 1, (0,2): 1.
    # Merging (0,0) into 4, left to right: [4, 0, 1, 3, 4, 0, 1, 0, 2]. Each of the two merges
    # at "aaa" removed (0,0) twice and (0,1) not at all; (3,0) became (3,4); (4,0) is new, twice.
    #   -> (0,0): 0, (4,0): 2, (0,1): 2, (1,3): 1, (3,4): 1, (1,0): 1, (0,2): 1
    counted = [(0, 0), (4, 0), (0, 1), (1, 3), (3, 0), (3, 4), (1, 0), (0, 2)]
    rows = tokenizer._Rows(["aaabdaaabac"], {"a": 0, "b": 1, "c": 2, "d": 3})
    assert [rows.count.get(pair, 0) for pair in counted] == [4, 0, 2, 1, 1, 0, 1, 1]
    assert rows.most_frequent_pair() == ((0, 0), 4)
    rows.merge((0, 0), 4)
    assert [token for token in rows.token if token != -1] == [4, 0, 1, 3, 4, 0, 1, 0, 2]
    assert [rows.count.get(pair, 0) for pair in counted] == [0, 2, 2, 1, 0, 1, 1, 1]
    assert rows.most_frequent_pair() == ((0, 1), 2)  # (0, 1) and (4, 0) tie at 2: the smaller pair


# --- docs/10-sampling.md ------------------------------------------------------------------------

def test_temperature_by_hand():
    # Logits log(p) divided by a temperature tau give probabilities proportional to p ** (1 / tau).
    # tau = 0.5 squares them: 0.01 + 0.16 + 0.04 + 0.09 = 0.30, so [1, 16, 4, 9] / 30.
    # tau = 2 takes square roots: [0.3162, 0.6325, 0.4472, 0.5477] / 1.9436.
    probs = [0.1, 0.4, 0.2, 0.3]
    np.testing.assert_allclose(filtered_probs(np.log(probs), Sampling(0.5, 0, 1.0)), np.array([1, 16, 4, 9]) / 30,
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(filtered_probs(np.log(probs), Sampling(2.0, 0, 1.0)), [0.1627, 0.3254, 0.2301, 0.2818],
                               rtol=0, atol=5e-5)
    np.testing.assert_allclose(filtered_probs(np.log(probs), Sampling(1.0, 0, 1.0)), probs, rtol=0, atol=1e-12)


def test_draw_by_hand():
    # top_p 0.5 on [0.1, 0.4, 0.2, 0.3] keeps ids 1 and 3 (0.4 < 0.5 <= 0.4 + 0.3), renormalised
    # to [0, 4/7, 0, 3/7]; the cumulative sum is [0, 0.5714, 0.5714, 1]. The draw takes the
    # first id whose cumulative sum is above u: u = 0.6370 (seed 0) gives id 3, u = 0.5118
    # (seed 1) gives id 1. Ids 0 and 2 have empty slices and can never be drawn.
    probs = [0.1, 0.4, 0.2, 0.3]
    sampling = Sampling(1.0, 0, 0.5)
    assert np.allclose(np.cumsum(filtered_probs(np.log(probs), sampling)), [0, 4 / 7, 4 / 7, 1], rtol=0, atol=1e-12)
    assert sample_next(np.log(probs), sampling, np.random.default_rng(0)) == 3
    assert sample_next(np.log(probs), sampling, np.random.default_rng(1)) == 1


def small_model():
    cfg = ModelConfig(7, 8, 4, 2, 2, 8, 1e-5)
    return cfg, init_params(cfg, np.random.default_rng(0))


def test_prompt_ids_outside_the_window_change_nothing():
    # window 4: only the last 4 ids of a prompt reach the model, so two prompts that end alike
    # give the same continuation from the same seed.
    cfg, params = small_model()
    sampling = Sampling(1.0, 0, 1.0)
    first = list(generate(params, cfg, [0, 1, 2, 3, 4, 5, 6, 3], 20, 4, sampling, np.random.default_rng(5)))
    second = list(generate(params, cfg, [6, 6, 6, 6, 4, 5, 6, 3], 20, 4, sampling, np.random.default_rng(5)))
    assert first == second
    third = list(generate(params, cfg, [0, 1, 2, 3, 4, 5, 6, 2], 20, 4, sampling, np.random.default_rng(5)))
    assert third != first  # the last id does reach the model
    # a prompt of 21 ids, longer than context_len 8, works: only the last 8 are read
    assert len(list(generate(params, cfg, list(range(7)) * 3, 5, 8, sampling, np.random.default_rng(0)))) == 5


def test_cached_forward_equals_full_forward_worked_example():
    # 4 positions at once, then position 4 alone with the keys and values of 0..3 cached:
    # the logits are those of the 5 positions read at once, and each block's cache now holds
    # keys of shape (B, nh, S, hs) = (1, 2, 5, 2).
    cfg, params = small_model()
    ids = [3, 1, 4, 1, 5]
    full, _ = forward(params, np.array(ids), cfg)
    first, past = forward_cached(params, np.array(ids[:4]), cfg)
    step, past = forward_cached(params, np.array(ids[4:]), cfg, past)
    assert np.abs(np.stack([first, step]) - full[3:]).max() < 1e-12
    assert past[0][0].shape == (1, 2, 5, 2)
    assert len(past) == cfg.num_layers and all(len(keys_values) == 2 for keys_values in past)  # nothing else is kept
    # two more positions at once: the logits of the last, as the full forward of all 7 gives them
    rest, past = forward_cached(params, np.array([2, 6]), cfg, past)
    assert np.abs(rest - forward(params, np.array(ids + [2, 6]), cfg)[0][-1]).max() < 1e-12
