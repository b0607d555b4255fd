"""--val_path FILE: a held-out text of the person's own, scored whole at each validation; the corpus is then
not split. Read as the corpus is read, refused as the corpus is refused, and checked at a resume as it is."""

import json

import pytest

from conftest import one_line_error, run_main, tiny_args, write_corpus
from engineering import checkpoint, runs
from engineering.corpus import read_corpus

BOOK = "".join(f"Line {i} of the book, which the model learns from.\n" for i in range(120))
HELD_OUT = "".join(f"Line {i} of another book, which it never trains on.\n" for i in range(30))


@pytest.fixture
def texts(tmp_path):
    """(the corpus, the held-out text): two .txt files of tmp_path."""
    (tmp_path / "book.txt").write_text(BOOK, encoding="utf-8")
    (tmp_path / "val.txt").write_text(HELD_OUT, encoding="utf-8")
    return tmp_path / "book.txt", tmp_path / "val.txt"


def test_the_corpus_is_not_split_and_the_held_out_text_is_the_file_whole(texts):
    book, held_out = texts
    corpus = read_corpus(book, "text", 0, 0.5, 42, str(held_out))
    assert (corpus.train_text, corpus.val_text, corpus.kind, corpus.val_path) == (BOOK, HELD_OUT, "text", held_out)
    assert corpus.described == f"{len(BOOK):,} characters of text, all for training, not split (held out: " \
                               f"{held_out}, {len(HELD_OUT):,} characters of text)"
    split = read_corpus(book, "text", 0, 0.5, 42)
    assert split.train_text + split.val_text == BOOK and split.val_path is None  # without it, the end is held out


def test_a_csv_is_held_out_as_its_rows_all_of_them(tmp_path, texts):
    # max_rows keeps the first rows of the corpus; the held-out text is scored whole, every row of it
    rows = write_corpus(tmp_path / "rows.csv", rows=40)
    corpus = read_corpus(texts[0], "text", 10, 0.1, 42, str(rows))
    lines = [line for line in corpus.val_text.splitlines() if line]
    assert len(lines) == 40 and corpus.kind == "text"  # the kind is the corpus's: where a reply ends
    assert "held out: " in corpus.described and "40 rows" in corpus.described


def test_a_run_validates_on_the_held_out_text_and_records_it(tmp_path, texts):
    book, held_out = texts
    home = tmp_path / "ck"
    result = run_main("train.py", *tiny_args(home, book, max_steps=10, eval_interval=5), "--val_path", held_out)
    assert result.returncode == 0, result.stderr
    assert f"corpus: {len(BOOK):,} characters of text, all for training, not split (held out: {held_out}" \
           in result.stdout
    folder = runs.summarize_runs(home)[0].folder
    tokenizer = checkpoint.load(folder).tokenizer
    assert tokenizer.decode(tokenizer.encode(BOOK)) == BOOK  # learned on both texts: every character known
    assert f"{len(tokenizer.encode(HELD_OUT)):,} validation tokens" in result.stdout  # the whole held-out file
    windows = len(tokenizer.encode(BOOK)) - 8  # every window of seq_len + 1 tokens of the whole corpus, stride 1
    assert f"{windows:,} training windows" in result.stdout
    recorded = json.loads((folder / "model.json").read_text(encoding="utf-8"))["corpus"]
    assert recorded["val_path"] == str(held_out) and recorded["val_sha256"] == checkpoint.sha256_of(held_out)
    assert recorded["validation_characters"] == len(HELD_OUT)


def held_out_bad(tmp_path, kind):
    """A --val_path of that kind of bad input, and the start of the line that refuses it."""
    path = tmp_path / "bad"
    if kind == "missing":
        return path, f"error: no held-out text at {path}; give a text file or a CSV with --val_path"
    if kind == "a folder":
        path.mkdir()
        (path / "val.txt").write_text("x", encoding="utf-8")
        return path, f"error: {path} is a folder, not a held-out text: give one text file or CSV in it (such as " \
                     f"--val_path {path / 'val.txt'})"
    if kind == "UTF-16":
        path.write_bytes("held out\n".encode("utf-16"))
        return path, f"error: cannot read {path}: it is UTF-16 text, not UTF-8"
    if kind == "a CSV without the column":
        path = tmp_path / "bad.csv"
        path.write_text("id,words\n1,a cat\n", encoding="utf-8")
        return path, f"error: {path} has no column 'text'; its columns are ['id', 'words']"
    return tmp_path / "book.txt", f"error: --val_path {tmp_path / 'book.txt'} is the corpus itself"


@pytest.mark.parametrize("kind", ["missing", "a folder", "UTF-16", "a CSV without the column", "the corpus"])
def test_a_bad_held_out_text_is_one_line_as_a_bad_corpus_is(tmp_path, texts, kind):
    path, said = held_out_bad(tmp_path, kind)
    result = run_main("train.py", *tiny_args(tmp_path / "ck", texts[0], max_steps=10), "--val_path", path)
    assert one_line_error(result).startswith(said)
    assert not (tmp_path / "ck").exists()  # refused before a run folder is made


@pytest.mark.parametrize("changed", ["the held-out text", "the corpus"])
def test_a_resume_refuses_a_held_out_text_that_changed_as_it_refuses_a_changed_corpus(tmp_path, texts, changed):
    # checked before the tokenizer: a text with a character more gives a tokenizer, and so weights, of another shape
    book, held_out = texts
    home = tmp_path / "ck"
    first = run_main("train.py", *tiny_args(home, book, max_steps=10, eval_interval=5), "--val_path", held_out,
                     "--name", "mine")
    assert first.returncode == 0, first.stderr
    path, text = (held_out, HELD_OUT) if changed == "the held-out text" else (book, BOOK)
    path.write_text(text + "One line more, with a Q.\n", encoding="utf-8")
    refused = run_main("train.py", "--resume", "mine", "--max_steps", "20", "--checkpoint", home)
    assert one_line_error(refused) == (f"error: {changed} {path} changed since the run mine was interrupted; start a "
                                       f"new run without --resume")
    path.write_text(text, encoding="utf-8")
    resumed = run_main("train.py", "--resume", "mine", "--max_steps", "20", "--checkpoint", home)
    assert resumed.returncode == 0 and "resuming the run mine at step 10 of 20" in resumed.stdout, resumed.stderr
    assert checkpoint.read_progress(home / "runs" / "mine")["step"] == 20
