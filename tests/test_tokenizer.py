"""Tests of tokenizer.py: hand-checked cases, and the fast training compared with a slow one."""
import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO
from engineering import tokenizer_files
from engineering.tokenizer_files import RETRAIN
from tokenizer import BPETokenizer, encode_plain, merge_pair, split_pieces, train_plain


def reference_train(rows, num_merges):
    """tokenizer.train_plain's alphabet and merges, and the rows as training left them (each row encoded plainly)."""
    alphabet, merges = train_plain(rows, num_merges)
    return alphabet, merges, [encode_plain(row, alphabet, merges) for row in rows]


def reference_encode(tok, text):
    """Encode by applying every merge in learned order to the whole text (tokenizer.encode_plain)."""
    return encode_plain(text, tok.alphabet, tok.merges)


def sample_rows(num_rows, seed):
    rng = random.Random(seed)
    words = "the cat sat on a mat and then the dog ran to the cat".split()
    return [" ".join(rng.choices(words, k=rng.randint(3, 8))) + "." for _ in range(num_rows)]


SAMPLE = BPETokenizer.train(sample_rows(50, seed=1), num_merges=40)


def test_worked_example_by_hand():
    # The alphabet of "aaabdaaabac" is a b c d -> ids 0 1 2 3, so the text is
    #   a a a b d a a a b a c = [0, 0, 0, 1, 3, 0, 0, 0, 1, 0, 2].
    # Merge 0: (0, 0) "aa" occurs 4 times (overlaps counted), more than any other pair;
    #   left to right each "aaa" becomes "aa" "a" -> [4, 0, 1, 3, 4, 0, 1, 0, 2].
    # Merge 1: (4, 0) and (0, 1) both occur twice; (0, 1) "ab" is the smaller pair
    #   -> [4, 5, 3, 4, 5, 0, 2].
    # Merge 2: (4, 5) "aaab" occurs twice -> [6, 3, 6, 0, 2].
    # Now every pair occurs once, so training stops after 3 of the 10 merges allowed.
    tok = BPETokenizer.train(["aaabdaaabac"], num_merges=10)
    assert tok.alphabet == ["a", "b", "c", "d"]
    assert tok.merges == [(0, 0), (0, 1), (4, 5)]
    assert tok.vocab_size == 4 + 3
    assert tok.encode("aaabdaaabac") == [6, 3, 6, 0, 2]
    assert tok.decode([6]) == "aaab"
    # The plain algorithm agrees with the hand derivation.
    assert reference_train(["aaabdaaabac"], 10) == (["a", "b", "c", "d"], [(0, 0), (0, 1), (4, 5)], [[6, 3, 6, 0, 2]])
    assert merge_pair([1, 2, 3, 1, 2], (1, 2), 4) == [4, 3, 4]  # merge_pair's docstring example


@pytest.mark.parametrize("rows, first_merge", [
    (["cdcd", "abab"], (0, 1)),    # (c, d) and (a, b) tie at 2: the smaller ids win, not the first row
    (["abab", "cdcd"], (0, 1)),
    (["acac", "abab"], (0, 1)),    # equal left ids: the smaller right id wins
    (["cdcdcd", "abab"], (2, 3)),  # a higher count beats smaller ids
])
def test_ties_go_to_the_smallest_pair(rows, first_merge):
    assert BPETokenizer.train(rows, num_merges=1).merges == [first_merge]


@pytest.mark.parametrize("text, ids", [
    ("aaa", [1, 0]),
    ("aaaa", [1, 1]),
    ("aaaaa", [1, 1, 0]),
])
def test_overlapping_pairs_merge_left_to_right(text, ids):
    tok = BPETokenizer.train(["aaaaa"], num_merges=1)
    assert tok.merges == [(0, 0)]
    assert tok.encode(text) == ids


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.text(alphabet="ab c", max_size=12), max_size=6),
       num_merges=st.integers(0, 8))
def test_training_matches_the_slow_reference(rows, num_merges):
    alphabet, merges, seqs = reference_train(rows, num_merges)
    tok = BPETokenizer.train(rows, num_merges)
    assert tok.alphabet == alphabet
    assert tok.merges == merges
    # Encoding a training row gives exactly the tokens training ended with.
    assert [tok.encode(row) for row in rows] == seqs


@settings(max_examples=100, deadline=None)
@given(text=st.text(alphabet=SAMPLE.alphabet, max_size=80))
def test_encode_matches_the_slow_reference_and_round_trips(text):
    ids = SAMPLE.encode(text)
    assert ids == reference_encode(SAMPLE, text)
    assert SAMPLE.decode(ids) == text


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet="ab \n", max_size=40), num_merges=st.integers(0, 8))
def test_a_text_learns_and_encodes_in_pieces_that_no_merge_spans(text, num_merges):
    pieces = split_pieces(text)
    assert "".join(pieces) == text
    assert all(not piece.rstrip("\n").count("\n") for piece in pieces)  # one line each, its newlines at the end
    _, merges, seqs = reference_train(pieces, num_merges)
    tok = BPETokenizer.train([text], num_merges)
    assert tok.merges == merges  # trained on the pieces of the text
    assert tok.encode(text) == [i for seq in seqs for i in seq]  # encoded piece by piece, as training left them
    assert reference_encode(tok, text) == tok.encode(text)  # the merges applied to the whole text: the same
    assert tok.decode(tok.encode(text)) == text


@pytest.mark.parametrize("text, pieces", [
    ("Ber.\nWho?\n\nFran.", ["Ber.\n", "Who?\n\n", "Fran."]),
    ("\n\nab\n", ["\n\n", "ab\n"]),
    ("", []),
])
def test_split_pieces_worked_examples(text, pieces):
    assert split_pieces(text) == pieces


UNICODE_ROWS = ["café naïve señor", "東京は晴れです", "emoji 🙂🙂 and 𝄞 clef 🙂🙂",
                "tab\there\tand\nnew\nlines\r\n", ""]


def test_any_unicode_round_trips():
    tok = BPETokenizer.train(UNICODE_ROWS, num_merges=20)
    assert {"é", "東", "🙂", "𝄞", "\t", "\n"} <= set(tok.alphabet)
    assert tok.merges  # "🙂🙂" and the tabs and newlines repeat, so something was learned
    for row in UNICODE_ROWS:
        assert tok.decode(tok.encode(row)) == row


def test_training_is_deterministic_and_ignores_row_order():
    rows = sample_rows(200, seed=2)
    shuffled = rows[:]
    random.Random(3).shuffle(shuffled)
    tok = BPETokenizer.train(rows, num_merges=60)
    assert len(tok.merges) == 60
    assert BPETokenizer.train(rows, num_merges=60) == tok
    assert BPETokenizer.train(shuffled, num_merges=60) == tok


def test_pairs_never_span_rows_and_empty_rows_add_nothing():
    assert BPETokenizer.train(["aaa"], num_merges=5).merges == [(0, 0)]
    assert BPETokenizer.train(["a", "a", "a"], num_merges=5).merges == []
    assert BPETokenizer.train(["", "ab", "", "ab"], 5) == BPETokenizer.train(["ab", "ab"], 5)


def test_training_stops_when_no_pair_occurs_twice():
    assert BPETokenizer.train(["abcd"], num_merges=5).merges == []
    # "abab": (a, b) occurs twice; after it, "xx" is a single pair, so one merge only.
    tok = BPETokenizer.train(["abab"], num_merges=5)
    assert tok.merges == [(0, 1)]
    assert tok.vocab_size == 3


def test_bad_training_arguments():
    with pytest.raises(TypeError, match="^texts must be a list of rows, not one string$"):
        BPETokenizer.train("abab", num_merges=1)
    with pytest.raises(ValueError, match="-1"):
        BPETokenizer.train(["abab"], num_merges=-1)


def test_encode_names_unknown_characters_where_they_first_stand():
    tok = BPETokenizer.train(["aaabdaaabac"], num_merges=10)
    with pytest.raises(ValueError) as caught:
        tok.encode("abé🙂é x")
    assert str(caught.value) == ("unknown characters: 'é' at 2, '🙂' at 3, ' ' at 5, 'x' at 6; "
                                 "the tokenizer was trained without them")


def test_encode_known_drops_exactly_the_unknown_characters():
    tok = BPETokenizer.train(["aaabdaaabac"], num_merges=10)
    ids, dropped = tok.encode_known("aaé🙂abé")
    assert ids == tok.encode("aaab")
    assert dropped == ["é", "🙂"]
    assert tok.encode_known("abc") == (tok.encode("abc"), [])


@pytest.mark.parametrize("bad_id", [-1, 7, 10**6])
def test_decode_refuses_ids_outside_the_vocabulary(bad_id):
    tok = BPETokenizer.train(["aaabdaaabac"], num_merges=10)
    with pytest.raises(ValueError, match=f"token id {bad_id} .* from 0 to 6"):
        tok.decode([0, bad_id])


def test_save_and_load_round_trip(tmp_path):
    path = tmp_path / "model.tok.json"
    tok = BPETokenizer.train(UNICODE_ROWS, num_merges=20)
    path.write_bytes(tokenizer_files.to_bytes(tok))
    loaded = tokenizer_files.load(path)
    assert loaded == tok
    assert loaded.encode(UNICODE_ROWS[2]) == tok.encode(UNICODE_ROWS[2])
    data = json.loads(path.read_text(encoding="utf-8"))
    assert (data["format"], data["version"]) == ("numpy-gpt-bpe", 1)
    assert data["alphabet"] == tok.alphabet
    assert data["merges"] == [list(pair) for pair in tok.merges]


def valid_file(**changes):
    data = {"format": "numpy-gpt-bpe", "version": 1, "alphabet": ["a", "b"], "merges": [[0, 1], [2, 2]]}
    return json.dumps({**data, **changes})


@pytest.mark.parametrize("text, problem", [
    ("not json {", "not valid JSON"),
    (valid_file()[:30], "not valid JSON"),
    ("[1, 2]", "not an object"),
    (valid_file(format="gpt2-bpe"), "not a tokenizer of this project"),
    (json.dumps({"vocab": {}}), "not a tokenizer of this project"),
    (valid_file(version=2), "has version 2, but this code reads version 1"),
    (valid_file(version=True), "has version True"),
    (valid_file(alphabet="ab"), "no alphabet list"),
    (valid_file(alphabet=["a", "bc"]), "alphabet entry 1 = 'bc'"),
    (valid_file(alphabet=["b", "a"]), "not sorted by code point"),
    (valid_file(alphabet=["a", "a"]), "without repeats"),
    (valid_file(merges={"0": 1}), "no merges list"),
    (valid_file(merges=[[0, 1, 2]]), "merge 0 = [0, 1, 2], which is not a pair"),
    (valid_file(merges=[[0, 1], [2, 3]]), "merge 1 = [2, 3], but merge 1 may only use ids 0 to 2"),
    (valid_file(merges=[[-1, 0]]), "merge 0 = [-1, 0]"),
    (valid_file(merges=[[0, 1], [0, 1]]), "repeat of an earlier merge"),
])
def test_load_explains_what_is_wrong_with_a_file(tmp_path, text, problem):
    path = tmp_path / "model.tok.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        tokenizer_files.load(path)
    message = str(caught.value)
    assert str(path) in message and problem in message and "python train.py" in message


@pytest.mark.parametrize("text, problem", [
    ("[1, 2]", "holds JSON that is not an object, so it is not a saved tokenizer"),
    (valid_file(format="gpt2-bpe"), "is not a tokenizer of this project (its format is 'gpt2-bpe', not 'numpy-gpt-bpe')"),
    (valid_file(alphabet="ab"), "has no alphabet list"),
    (valid_file(merges={"0": 1}), "has no merges list"),
])
def test_load_says_the_file_then_its_problem_then_what_to_do(tmp_path, text, problem):
    path = tmp_path / "model.tok.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        tokenizer_files.load(path)
    assert str(caught.value) == f"{path} {problem}; {RETRAIN}"


def test_tokenizers_are_equal_only_with_the_same_alphabet_and_merges():
    tok = BPETokenizer(["a", "b"], [(0, 1)])
    assert tok == BPETokenizer(["a", "b"], [(0, 1)])
    assert tok != BPETokenizer(["a", "b"], [])  # the same alphabet, other merges
    assert tok != BPETokenizer(["a", "c"], [(0, 1)])  # the same merges, another alphabet


def test_the_valid_file_above_loads(tmp_path):
    path = tmp_path / "model.tok.json"
    path.write_text(valid_file(), encoding="utf-8")
    assert tokenizer_files.load(path).decode([3]) == "abab"


def test_load_of_a_missing_file_says_where_it_looked(tmp_path):
    path = tmp_path / "missing.tok.json"
    with pytest.raises(FileNotFoundError, match="missing.tok.json.*python train.py"):
        tokenizer_files.load(path)


def test_the_fast_tokenizer_learns_and_encodes_the_bundled_corpus_as_the_plain_algorithm_does():
    import pandas as pd
    rows = [row + "\n" for row in pd.read_csv(REPO / "data" / "sample.csv")["text"][:300]]  # the text train.py reads
    alphabet, merges = train_plain(rows, 60)
    tok = BPETokenizer.train(rows, 60)
    assert (tok.alphabet, tok.merges) == (alphabet, merges) and len(merges) == 60
    held_out = "".join(row + "\n" for row in pd.read_csv(REPO / "data" / "sample.csv")["text"][300:340])
    known = "".join(char for char in held_out if char in alphabet)
    assert tok.encode(known) == encode_plain(known, alphabet, merges)
