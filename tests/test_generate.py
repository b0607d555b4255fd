"""Tests of generate.py: the sampling filters on hand-checked cases, the draws against the
distribution they come from, the window of ids that reaches the model, and the command line (its main()
in this process, and once as a person starts it)."""

import os
import re
import subprocess
import sys
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import REPO, greedy_text, run_main, run_script
from engineering import checkpoint
import transformer
import lab
from engineering import prompting
from transformer import Sampling, filtered_probs, sample_next
from tokenizer import BPETokenizer, StreamDecoder
from transformer import flat_buffer, forward_cached, init_params


# --- the filters, by hand -----------------------------------------------------------------------
# Logits are written as log(probabilities), so at temperature 1 the softmax gives the probabilities
# back and each expected row can be checked with a pencil. (Temperature alone: tests/test_examples_run.py.)

P4 = [0.1, 0.4, 0.2, 0.3]  # sorted: id 1 (0.4), id 3 (0.3), id 2 (0.2), id 0 (0.1)


@pytest.mark.parametrize("probs, temperature, top_k, top_p, expected", [
    (P4, 1.0, 2, 1.0, [0, 4 / 7, 0, 3 / 7]),  # top-k 2: ids 1 and 3, renormalised by 0.7
    (P4, 1.0, 0, 0.5, [0, 4 / 7, 0, 3 / 7]),  # 0.4 < 0.5 <= 0.4 + 0.3
    (P4, 1.0, 0, 0.4, [0, 1, 0, 0]),  # p equal to the first probability keeps just it
    ([0.7, 0.1, 0.1, 0.1], 1.0, 0, 0.8, [7 / 8, 1 / 8, 0, 0]),  # p equal to a sum that rounds to 0.7999...
    ([0.05, 0.9, 0.05], 1.0, 0, 0.8, [0, 1, 0]),  # a single token over p keeps just it
    ([0.25] * 4, 1.0, 0, 0.5, [0.5, 0.5, 0, 0]),  # ties: the smaller ids first
    ([0.25] * 4, 1.0, 0, 0.6, [1 / 3, 1 / 3, 1 / 3, 0]),
    ([0.3, 0.3, 0.3, 0.1], 1.0, 2, 1.0, [0.5, 0.5, 0, 0]),  # top-k ties: the smaller ids first
    # top-k first: ids 0 and 1 renormalise to 0.625 and 0.375, and 0.625 alone reaches 0.6.
    # (top-p first would keep 0.5 + 0.3 and give [0.625, 0.375, 0, 0].)
    ([0.5, 0.3, 0.15, 0.05], 1.0, 2, 0.6, [1, 0, 0, 0]),
    (P4, 2.0, 2, 1.0, [0, 2 / (2 + np.sqrt(3)), 0, np.sqrt(3) / (2 + np.sqrt(3))]),  # p ** (1/2), then top-k 2
])
def test_filtered_probs_by_hand(probs, temperature, top_k, top_p, expected):
    got = filtered_probs(np.log(probs), Sampling(temperature, top_k, top_p))
    np.testing.assert_allclose(got, expected, atol=1e-12)


def test_filtered_probs_docstring_example():
    got = filtered_probs([2.0, 1.0, 0.0, -1.0], Sampling(1.0, 2, 1.0))
    np.testing.assert_allclose(got, [np.e / (np.e + 1), 1 / (np.e + 1), 0, 0], atol=1e-12)


def test_temperature_zero_is_argmax_and_ties_go_to_the_smaller_id():
    np.testing.assert_array_equal(filtered_probs([1.0, 3.0, 3.0, 0.0], Sampling(0, 0, 0.9)), [0, 1, 0, 0])
    rng = np.random.default_rng(0)
    for _ in range(50):
        logits = rng.normal(size=9)
        assert sample_next(logits, Sampling(0, 3, 0.5), rng) == np.argmax(logits)


def test_a_tiny_temperature_is_greedy_not_nan():
    # 2 / 1e-310 overflows to inf, and inf - inf is nan; subtracting the maximum before dividing
    # leaves 0 for the maximum and -inf (probability 0) for the others, without a RuntimeWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = filtered_probs([1.0, 2.0, 2.0 - 1e-3], Sampling(1e-310, 0, 1.0))
    np.testing.assert_array_equal(got, [0, 1, 0])


# --- the draws ----------------------------------------------------------------------------------

def test_a_seed_repeats_the_draws():
    logits = np.random.default_rng(1).normal(size=12)
    sampling = Sampling(1.0, 0, 1.0)

    def draws(seed):
        rng = np.random.default_rng(seed)
        return [sample_next(logits, sampling, rng) for _ in range(200)]

    assert draws(7) == draws(7)
    assert draws(7) != draws(8)


def test_draw_frequencies_match_the_filtered_distribution():
    """20,000 draws; each token's frequency is a mean of 20,000 Bernoulli(p) draws, whose standard
    error is sqrt(p (1 - p) / n). Allowing 5 standard errors, a correct sampler fails with a
    probability under 1e-5 for 10 tokens (and the seed fixes the draws anyway), while drawing from
    the unfiltered softmax, or an off-by-one in picking the slice, fails at once."""
    logits = np.log([0.3, 0.2, 0.15, 0.1, 0.08, 0.07, 0.05, 0.03, 0.01, 0.01])
    sampling = Sampling(0.8, 6, 0.9)
    expected = filtered_probs(logits, sampling)
    assert np.count_nonzero(expected) == 5  # top-p cuts below top-k's 6
    n = 20_000
    rng = np.random.default_rng(0)
    counts = np.bincount([sample_next(logits, sampling, rng) for _ in range(n)], minlength=10)
    frequencies = counts / n
    assert np.all(counts[expected == 0] == 0)
    standard_errors = np.sqrt(expected * (1 - expected) / n)
    assert np.all(np.abs(frequencies - expected) <= 5 * standard_errors), (frequencies, expected)


@pytest.mark.parametrize("temperature, top_k, top_p", [
    (-0.1, 0, 0.9), (float("nan"), 0, 0.9), (float("inf"), 0, 0.9),
    (1.0, -1, 0.9), (1.0, 2.5, 0.9), (1.0, True, 0.9),
    (1.0, 0, 0.0), (1.0, 0, -0.1), (1.0, 0, 1.01), (1.0, 0, float("nan")),
])
def test_invalid_sampling_raises(temperature, top_k, top_p):
    with pytest.raises(ValueError, match="must be"):
        Sampling(temperature, top_k, top_p)


def test_the_boundaries_of_sampling_are_accepted_and_keep_what_they_say():
    logits = np.log(P4)
    assert np.array_equal(filtered_probs(logits, Sampling(0, 0, 1)), [0, 1, 0, 0])  # greedy: the most likely alone
    assert np.array_equal(filtered_probs(logits, Sampling(0.5, np.int64(3), 1e-6)), [0, 1, 0, 0])  # top_p ~0: one
    assert np.count_nonzero(filtered_probs(logits, Sampling(0.5, np.int64(3), 1))) == 3  # numpy's int as top_k


# --- generate -----------------------------------------------------------------------------------

def next_is_last_plus_one(calls):
    """A stand-in for transformer.forward_cached that records the ids it gets and makes the next id
    the last id + 1 (mod V) by a wide margin, so greedy decoding is known in advance.
    It keeps no keys and values, so generate must run with use_cache=False over it."""
    def forward_cached(params, ids, cfg, past=None):
        calls.append(list(ids))
        logits = np.zeros(cfg.vocab_size)
        logits[(ids[-1] + 1) % cfg.vocab_size] = 10.0
        return logits, None
    return forward_cached


GREEDY = Sampling(0, 0, 1.0)


def test_only_the_last_window_ids_reach_the_model(tiny_cfg, monkeypatch):
    calls = []
    monkeypatch.setattr(transformer, "forward_cached", next_is_last_plus_one(calls))
    prompt = [3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0]  # 12 ids: longer than the window and than context_len 8
    new = list(transformer.generate(None, tiny_cfg, prompt, 5, 3, GREEDY, np.random.default_rng(0), use_cache=False))
    assert new == [1, 2, 3, 4, 5]
    seen = prompt + new
    assert calls == [seen[len(prompt) + i - 3: len(prompt) + i] for i in range(5)]


def test_ids_are_yielded_as_they_are_drawn(tiny_cfg, monkeypatch):
    calls = []
    monkeypatch.setattr(transformer, "forward_cached", next_is_last_plus_one(calls))
    new_ids = transformer.generate(None, tiny_cfg, [0], 10, 4, GREEDY, np.random.default_rng(0), use_cache=False)
    assert next(new_ids) == 1 and len(calls) == 1


def test_the_cache_gives_the_same_tokens_as_reading_the_whole_window(tiny_cfg, tiny_params):
    sampling = Sampling(1.0, 0, 1.0)  # sampled, so any difference in the logits could change a draw
    for prompt, window in [([3], 8), ([1, 2, 3, 4, 5, 6, 0, 1, 2, 3], 5), ([6, 5], 2)]:
        cached, uncached = (list(transformer.generate(tiny_params, tiny_cfg, prompt, 25, window, sampling,
                                                   np.random.default_rng(9), use_cache=use_cache))
                            for use_cache in (True, False))
        assert cached == uncached, (prompt, window)


def test_the_cache_feeds_one_id_a_step_until_the_window_slides(tiny_cfg, tiny_params, monkeypatch):
    calls = []

    def spy(params, ids, cfg, past=None):
        calls.append((len(ids), 0 if past is None else past[0][0].shape[2]))  # (ids read, positions cached)
        return forward_cached(params, ids, cfg, past)
    monkeypatch.setattr(transformer, "forward_cached", spy)
    list(transformer.generate(tiny_params, tiny_cfg, [1, 2], 6, 4, GREEDY, np.random.default_rng(0)))
    # the prompt's 2 ids; then 1 id after 2, then after 3 cached; then the window of 4 slides
    assert calls == [(2, 0), (1, 2), (1, 3), (4, 0), (4, 0), (4, 0)]


@pytest.mark.parametrize("max_new_tokens", [0, 1, 7, 30])
def test_max_new_tokens_is_the_length_without_a_stop(tiny_cfg, tiny_params, max_new_tokens):
    prompt = [1, 2]
    new = list(transformer.generate(tiny_params, tiny_cfg, prompt, max_new_tokens, tiny_cfg.context_len,
                                 Sampling(1.0, 0, 1.0), np.random.default_rng(0)))
    assert len(new) == max_new_tokens
    assert all(0 <= i < tiny_cfg.vocab_size for i in new)


def test_stop_id_ends_the_continuation_after_yielding_it(tiny_cfg, monkeypatch):
    monkeypatch.setattr(transformer, "forward_cached", next_is_last_plus_one([]))
    rng = np.random.default_rng(0)
    assert list(transformer.generate(None, tiny_cfg, [0], 10, 4, GREEDY, rng, stop_id=3, use_cache=False)) == [1, 2, 3]
    assert len(list(transformer.generate(None, tiny_cfg, [0], 10, 4, GREEDY, rng, use_cache=False))) == 10


def test_an_empty_prompt_or_a_window_beyond_context_len_raises(tiny_cfg, tiny_params):
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="prompt is empty"):
        list(transformer.generate(tiny_params, tiny_cfg, [], 5, 4, GREEDY, rng))
    with pytest.raises(AssertionError, match="window must be in 1..8"):  # the scripts refuse it first, in one line
        list(transformer.generate(tiny_params, tiny_cfg, [1], 5, 9, GREEDY, rng))


# --- where a reply ends -------------------------------------------------------------------------

@pytest.mark.parametrize("written, kind, end", [
    ("ROMEO:\nO, she doth\nteach\n\nJULIET:", "text", 24),  # the docstring's example: at the blank line
    ("ROMEO:\nO, she doth\nteach\n\nJULIET:", "rows", 6),  # at the first newline
    ("the cat sat.\nthe dog", "rows", 12),
    ("a line\nanother\n", "text", None),  # a newline alone ends no paragraph: it may be one more line
    ("no end yet", "rows", None),
])
def test_reply_end_by_hand(written, kind, end):
    assert prompting.reply_end(written, kind) == end


@pytest.mark.parametrize("written, kind, expected", [
    ("ROMEO:\nO, she", "text", (len("ROMEO:\nO, she"), False)),
    ("ROMEO:\nO, she doth\n", "text", (len("ROMEO:\nO, she doth"), False)),  # its newline waits: a blank line?
    ("ROMEO:\nO, she doth\n\nJUL", "text", (len("ROMEO:\nO, she doth"), True)),
    ("the cat.\nthe", "rows", (len("the cat."), True)),
    ("the cat.\nthe", None, (len("the cat.\nthe"), False)),  # --full: everything, never an end
])
def test_printable_holds_back_only_what_may_end_the_reply(written, kind, expected):
    assert prompting.printable(written, kind) == expected


class PieceTokenizer:
    """A stand-in tokenizer whose token i is pieces[i], so a test writes the tokens as text."""

    def __init__(self, pieces):
        self.pieces = pieces

    def decode(self, ids):
        return "".join(self.pieces[i] for i in ids)

    def token_bytes(self, token_id):
        return self.pieces[token_id].encode("utf-8")

    def decoder(self):
        return StreamDecoder(self)


@pytest.mark.parametrize("kind, stdout, drawn", [
    ("text", "ROMEO:\nO, she doth\nteach\n", 5),  # the paragraph, whole; nothing drawn after its blank line
    ("rows", "ROMEO:\n", 1),
    (None, "ROMEO:\nO, she doth\nteach\n\nJULIET:\n\n", 6),  # --full: every token, then the line's end
])
def test_print_continuation_stops_at_the_end_the_model_learned(kind, stdout, drawn, capsys):
    pieces = ["ROMEO", ":\n", "O, she doth\n", "teach", "\n", "\nJULIET:", "\n"]
    taken = []

    def tokens():  # as generate yields them: one at a time, only when asked for
        for token_id in range(1, len(pieces)):
            taken.append(token_id)
            yield token_id

    prompting.print_continuation(PieceTokenizer(pieces), [0], tokens(), kind)
    assert capsys.readouterr().out == stdout
    assert len(taken) == drawn


def test_a_newline_is_printed_once_the_next_token_shows_it_ends_no_paragraph(monkeypatch):
    printed = []
    monkeypatch.setattr("builtins.print", lambda text="", end="\n", flush=False: printed.append(text + end))
    pieces = ["A:", "\n", "one", "\n", "two", "\n\n"]
    prompting.print_continuation(PieceTokenizer(pieces), [0], iter(range(1, 6)), "text")
    assert printed == ["A:", "", "\none", "", "\ntwo", "", "\n"]  # each newline waits for the token after it


@pytest.mark.parametrize("corpus, kind", [
    ({"path": "play.txt", "kind": "text"}, "text"),
    ({"path": "rows.csv", "kind": "rows"}, "rows"),
    ({"path": "old/PLAY.TXT"}, "text"),  # saved before the kind was recorded: told by the corpus, as train.py does
    ({"path": "old.csv"}, "rows"),
    ({"path": "odd.txt", "kind": "poem"}, "text"),  # a kind this code does not know: the corpus tells
])
def test_the_kind_of_text_a_model_learned(corpus, kind):
    assert checkpoint.corpus_kind({"corpus": corpus}) == kind
    assert checkpoint.corpus_kind({}) == "rows"  # no record at all: rows, the only replies there were


# --- the command line ---------------------------------------------------------------------------

def run_generate(*args):
    return run_main("generate.py", *args)


SAMPLING_OPTIONS = {"--help", "--checkpoint", "--temperature", "--top_k", "--top_p", "--max_new_tokens", "--seed", "--exact",
                    "--window", "--strict", "--full",
                    "--exercises", "--even",  # --exercises TRACK, --exercises-dir, --even-if-wrong, as \w+ reads them
                    "--list"}  # talk.py's option; --checkpoint's help names it (python talk.py --list)


@pytest.mark.parametrize("script", ["generate.py", "talk.py"])
def test_help_lists_exactly_the_sampling_options(script):
    result = run_main(script, "--help")
    assert result.returncode == 0, result.stderr
    assert set(re.findall(r"--\w+", result.stdout)) == SAMPLING_OPTIONS
    assert ("positional arguments:\n  prompt " in result.stdout) == (script == "generate.py")
    words = " ".join(result.stdout.split())  # as read, without the help's line breaks
    assert "the same seed and prompt give the same text" in words and "initial weights" not in words  # sampling's seed


@pytest.mark.parametrize("script, prompt", [("generate.py", ["the cat"]), ("talk.py", [])])
@pytest.mark.parametrize("setting", [["--epochs", "99"], ["--lr_max=5"], ["--seq_len", "4"]])
def test_a_setting_sampling_does_not_use_is_refused_in_one_line(script, prompt, setting):
    result = run_main(script, *prompt, *setting)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == f"{script}: unrecognized arguments: {' '.join(setting)} (see --help)\n"


def test_heal_prompt_docstring_example():
    tokenizer = BPETokenizer.train(["Lear.\nWhat, Kent?\n\nKent.\nSir.\n"], 12)
    prompt_ids, allowed = prompting.heal_prompt(tokenizer, tokenizer.encode("Lear."))
    assert tokenizer.decode(prompt_ids) == "Lea"  # 'r', '.' taken back: "r." starts 'r.\n', "ar." starts none
    assert [tokenizer.decode([i]) for i in np.flatnonzero(allowed)] == ["r.\n"]
    assert prompting.heal_prompt(tokenizer, tokenizer.encode("L")) == ([tokenizer.encode("L")[0]], None)  # kept whole


def test_the_first_draw_keeps_to_first_allowed(tiny_cfg, tiny_params):
    allowed = np.zeros(tiny_cfg.vocab_size, dtype=bool)
    allowed[[2, 5]] = True
    hot = Sampling(2.0, 0, 1.0)
    firsts = {next(transformer.generate(tiny_params, tiny_cfg, [1, 3], 3, 8, hot, np.random.default_rng(seed),
                                     first_allowed=allowed)) for seed in range(40)}
    assert firsts == {2, 5}
    later = {list(transformer.generate(tiny_params, tiny_cfg, [1, 3], 2, 8, hot, np.random.default_rng(seed),
                                    first_allowed=allowed))[1] for seed in range(40)}
    assert len(later - {2, 5}) > 0  # only the first draw is held to it


def test_cli_continues_a_speaker_typed_without_the_line_end_the_model_learned(tiny_play_checkpoint):
    # the play has "ROMEO:\n" as one token; typed as "ROMEO:", the prompt ends in 'ROMEO', ':', a split the
    # model never saw (continued as it is, it writes "ROMEO:tay all."); both are taken back, and redrawn
    prompt = "when all the house is still.\n\nROMEO:"
    model = checkpoint.load(tiny_play_checkpoint)
    prompt_ids, allowed = prompting.heal_prompt(model.tokenizer, model.tokenizer.encode(prompt))
    assert model.tokenizer.decode(prompt_ids) == "when all the house is still.\n\n"
    assert [model.tokenizer.decode([i]) for i in np.flatnonzero(allowed)] == ["ROMEO:\n"]
    greedy = ["--checkpoint", str(tiny_play_checkpoint), "--temperature", "0", "--max_new_tokens", "60"]
    result = run_generate(prompt, *greedy)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(prompt + "\n")
    speech = result.stdout[len("when all the house is still.\n\n"):].rstrip("\n").split("\n")
    assert speech[0] == "ROMEO:" and len(speech) == 3, result.stdout  # the speaker, then a couplet, whole


def test_cli_continues_the_prompt_reproducibly(tiny_checkpoint):
    first = run_generate("the cat", "--checkpoint", str(tiny_checkpoint), "--seed", "1")
    again = run_generate("the cat", "--checkpoint", str(tiny_checkpoint), "--seed", "1")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("the cat") and len(first.stdout.rstrip("\n")) > len("the cat")
    assert again.stdout == first.stdout
    hotter = ["--temperature", "1.5", "--top_p", "1", "--full"]  # full: two rows can end alike after a token
    one = run_generate("the cat", "--checkpoint", str(tiny_checkpoint), "--seed", "1", *hotter)
    two = run_generate("the cat", "--checkpoint", str(tiny_checkpoint), "--seed", "2", *hotter)
    assert one.stdout != two.stdout  # the seed is what makes runs repeat


def test_cli_stops_at_the_end_of_the_row_unless_full(tiny_checkpoint):
    whole = greedy_text(tiny_checkpoint, "the cat", 40)
    assert whole.count("\n") >= 2, whole  # the model writes rows, so the stop is really exercised
    greedy = ["--checkpoint", str(tiny_checkpoint), "--temperature", "0", "--max_new_tokens", "40"]
    row = run_generate("the cat", *greedy)
    assert row.returncode == 0, row.stderr
    assert row.stdout == whole.split("\n")[0] + "\n"
    assert run_generate("the cat", *greedy, "--full").stdout == whole + "\n"


def test_cli_writes_a_whole_speech_of_a_play_and_stops_at_its_blank_line(tiny_play_checkpoint):
    whole = greedy_text(tiny_play_checkpoint, "ROMEO:\n", 60)
    speech, blank, _ = whole.partition("\n\n")
    assert blank and speech.count("\n") == 2, whole  # the speaker, a couplet, then the blank line, within 60 tokens
    greedy = ["--checkpoint", str(tiny_play_checkpoint), "--temperature", "0", "--max_new_tokens", "60"]
    result = run_generate("ROMEO:\n", *greedy)
    assert result.returncode == 0, result.stderr
    assert result.stdout == speech + "\n"  # "ROMEO:\n<verse>\n<verse>\n": speaker and line breaks kept
    assert run_generate("ROMEO:\n", *greedy, "--full").stdout == whole + "\n"


def test_cli_leaves_out_unknown_characters_with_a_warning_or_refuses_them_when_strict(tiny_checkpoint):
    folder = ["--checkpoint", str(tiny_checkpoint)]
    left_out = run_generate("the Zcat@", *folder)
    assert left_out.returncode == 0
    assert left_out.stderr == "left out 'Z', '@': the model has never seen these characters\n"
    assert left_out.stdout == run_generate("the cat", *folder).stdout  # as if they had not been typed
    refused = run_generate("the Zcat", *folder, "--strict")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith("error: the prompt has 'Z': ")
    assert run_generate("the cat", *folder, "--strict").stdout == left_out.stdout  # known characters pass


def test_cli_says_a_byte_that_is_not_utf8_as_talk_says_it(tiny_checkpoint):
    """Python gives a command line's byte 0xE9 that is not UTF-8 as U+DCE9; talk.py gets U+FFFD (tests/test_talk.py)."""
    result = run_generate("the caf\udce9\udce8Z", "--checkpoint", str(tiny_checkpoint))
    assert result.stderr == "left out a byte that is not UTF-8, 'Z': the model has never seen these characters\n"
    refused = run_generate("the cat\udce9", "--checkpoint", str(tiny_checkpoint), "--strict")
    assert refused.stderr == ("error: the prompt has a byte that is not UTF-8: the model has never seen this "
                              "character (without --strict, it is left out)\n")


def test_cli_into_a_pipe_closed_early_ends_quietly_as_a_unix_tool(tiny_checkpoint):
    """`python generate.py ... | head`: the reader goes before the text is written (here, before the script starts,
    so the first write certainly meets a closed pipe), and the script ends with no message, exit status 141 as a
    shell reports a tool that SIGPIPE ended, not 2, which says the person's input was wrong."""
    read, write = os.pipe()
    os.close(read)
    try:
        ended = subprocess.run([sys.executable, "generate.py", "the cat", "--checkpoint", str(tiny_checkpoint)],
                               cwd=REPO, stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert (ended.returncode, ended.stderr) == (141, "")


def test_cli_refuses_a_prompt_with_nothing_the_model_knows(tiny_checkpoint):
    """generate.py as a person starts it, in a fresh interpreter: bad input is its lines on stderr, exit status 2."""
    result = run_script("generate.py", "ZZZ", "--checkpoint", tiny_checkpoint)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == ["left out 'Z': the model has never seen this character",
                                          "error: nothing is left to continue: give characters the model knows"]


@pytest.mark.parametrize("window", ["9", "-1"])
def test_cli_refuses_a_window_the_model_cannot_read(tiny_checkpoint, window):
    result = run_generate("the cat", "--checkpoint", str(tiny_checkpoint), "--window", window)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert f"--window {window} does not fit this model: it reads 1 to 8 tokens" in result.stderr


def test_cli_window_changes_what_the_model_reads(tiny_checkpoint):
    prompt = "the old man jumped over the"  # longer than 8 tokens, so windows 2 and 8 see different ids
    folder = ["--checkpoint", str(tiny_checkpoint), "--temperature", "0", "--full", "--max_new_tokens", "20"]
    default, eight, two = (run_generate(prompt, *folder, *window).stdout
                           for window in ([], ["--window", "8"], ["--window", "2"]))
    assert default == eight != two  # the checkpoint was trained with seq_len 8


def test_greedy_picks_the_first_of_equal_maxima_without_a_draw():
    """At temperature 0 sample_next is the id filtered_probs keeps alone, and draws nothing from rng."""
    logits = np.array([0.5, 2.0, -1.0, 2.0])
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    assert sample_next(logits, Sampling(0, 0, 1), rng) == 1 == int(np.argmax(filtered_probs(logits, Sampling(0, 0, 1))))
    assert rng.bit_generator.state == state


# --- the parameters laid out for decoding ---------------------------------------------------------------

def test_laid_out_for_decoding_keeps_every_number_and_stores_square_and_tall_matrices_transposed(tiny_params):
    laid_out = prompting.laid_out_for_decoding(tiny_params)  # TINY: Wq..Wo 4 x 4, W1 4 x 8, W2 8 x 4, W_out 4 x 7
    assert list(laid_out) == list(tiny_params)
    for name, tensor in tiny_params.items():
        assert laid_out[name].dtype == tensor.dtype and np.array_equal(laid_out[name], tensor), name
        assert not np.shares_memory(laid_out[name], tensor), name  # so the packed buffer can be let go
        if name.rpartition(".")[2] in ("Wq", "Wk", "Wv", "Wo", "W2"):  # as many rows as columns, or more
            assert laid_out[name].flags.f_contiguous and not laid_out[name].flags.c_contiguous, name
        else:  # W1, W_out (wider than tall), the tables and the vectors
            assert laid_out[name].flags.c_contiguous, name
    with pytest.raises(AssertionError, match="do not share one buffer"):
        flat_buffer(laid_out)  # so nothing trains on them, nor adds them to a gradient's buffer


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_laid_out_for_decoding_draws_the_tokens_of_the_packed_parameters(tiny_cfg, dtype):
    params = init_params(tiny_cfg, np.random.default_rng(4), dtype)
    laid_out = prompting.laid_out_for_decoding(params)
    sampling = Sampling(1.0, 0, 1.0)  # sampled, so a difference in the logits could change a draw
    packed_ids, laid_out_ids = (list(transformer.generate(weights, tiny_cfg, [1, 2, 3], 30, tiny_cfg.context_len,
                                                          sampling, np.random.default_rng(5)))
                                for weights in (params, laid_out))
    assert packed_ids == laid_out_ids
    packed_logits, laid_out_logits = (forward_cached(weights, [1, 2, 3, 4], tiny_cfg)[0] for weights in (params, laid_out))
    # the same sums, added in another order: equal to a few roundings of the dtype
    np.testing.assert_allclose(laid_out_logits, packed_logits, rtol=0, atol=50 * np.finfo(dtype).eps)


def test_sampling_lays_out_a_model_that_streams_from_memory_and_the_lab_keeps_it_packed(tiny_checkpoint, monkeypatch):
    args = lambda: SimpleNamespace(checkpoint=str(tiny_checkpoint), window=0)  # noqa: E731
    assert flat_buffer(prompting.load_for_sampling(args(), tiny_checkpoint).params).size > 0  # it fits in a cache
    monkeypatch.setattr(prompting, "STREAMED", 0)  # as if it were GPT-2's size
    assert flat_buffer(prompting.load_for_sampling(args(), tiny_checkpoint, decoding=False).params).size > 0
    laid_out = prompting.load_for_sampling(args(), tiny_checkpoint).params
    assert laid_out["block0.Wq"].flags.f_contiguous and not laid_out["block0.Wq"].flags.c_contiguous

    class Served(Exception):
        pass

    def models(model, home):  # what lab.main hands its server, kept, and the server not started
        served.append(model)
        raise Served
    served = []
    monkeypatch.setattr(lab.lab_models, "Models", models)
    with pytest.raises(Served):
        lab.main(["--checkpoint", str(tiny_checkpoint), "--port", "0"])
    assert flat_buffer(served[0].params).size > 0  # its learn step adds into the packed buffer (lab.step_over)


@pytest.mark.parametrize("script, args, stdin", [("generate.py", ["the cat", "--full"], ""),
                                                 ("talk.py", ["--full"], "the cat\nthe dog\n")])
def test_the_scripts_write_the_same_text_from_the_laid_out_model(tiny_checkpoint, monkeypatch, script, args, stdin):
    ways = []
    for streamed in (prompting.STREAMED, 0):  # the tiny model as it is (packed), then as if of GPT-2's size
        monkeypatch.setattr(prompting, "STREAMED", streamed)
        ways.append(run_main(script, *args, "--checkpoint", tiny_checkpoint, "--seed", "3", "--temperature", "1.2",
                             stdin=stdin))
    assert ways[0].returncode == 0 and ways[0].stdout.count("the ") >= 1, ways[0]
    assert ways[1].stdout == ways[0].stdout
