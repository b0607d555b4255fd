"""The bundled sample corpus: big and varied enough to learn from, and exactly reproducible.
(That train.py falls back to it where data/corpus.csv is absent: tests/test_train.py.)"""

import importlib.util
import re

import pandas as pd

from conftest import REPO

SAMPLE = REPO / "data" / "sample.csv"


def test_sample_corpus_is_large_and_varied_enough():
    rows = pd.read_csv(SAMPLE, dtype=str, keep_default_na=False)["text"].tolist()
    assert len(rows) >= 2000
    assert sum(map(len, rows[:2000])) >= 150_000  # train.py keeps the first max_rows = 2000 rows
    words = {w.lower() for row in rows for w in re.findall(r"[A-Za-z]+", row)}
    assert len(words) >= 1000
    assert len(set(rows)) / len(rows) > 0.97  # hardly any repeated rows


def test_generator_reproduces_the_sample_byte_for_byte(tmp_path):
    spec = importlib.util.spec_from_file_location("make_sample", REPO / "data" / "make_sample.py")
    make_sample = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_sample)
    make_sample.write_csv(make_sample.make_rows(), tmp_path / "sample.csv")  # `python data/make_sample.py OUT`
    assert (tmp_path / "sample.csv").read_bytes() == SAMPLE.read_bytes()
