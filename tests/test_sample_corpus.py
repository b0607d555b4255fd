"""The bundled sample corpus: big and varied enough to learn from, and exactly reproducible."""

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample.csv"


def test_sample_corpus_is_large_and_varied_enough():
    rows = pd.read_csv(SAMPLE, dtype=str, keep_default_na=False)["text"].tolist()
    assert len(rows) >= 2000
    assert sum(map(len, rows[:2000])) >= 150_000  # train.py keeps the first max_rows = 2000 rows
    words = {w.lower() for row in rows for w in re.findall(r"[A-Za-z]+", row)}
    assert len(words) >= 1000
    assert len(set(rows)) / len(rows) > 0.97  # hardly any repeated rows


def test_generator_reproduces_the_sample_byte_for_byte(tmp_path):
    out = tmp_path / "sample.csv"
    result = subprocess.run([sys.executable, str(REPO / "data" / "make_sample.py"), str(out)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == SAMPLE.read_bytes()


def test_train_falls_back_to_the_sample_when_the_default_corpus_is_absent(tmp_path):
    # run from an empty folder, so data/corpus.csv (the default corpus_path) does not exist there
    result = subprocess.run([sys.executable, str(REPO / "train.py"), "--epochs", "1", "--max_rows", "60",
                             "--num_merges", "20", "--checkpoint", str(tmp_path / "ck")],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "training on the bundled sample corpus, sample.csv" in result.stdout
    assert "corpus: 60 rows" in result.stdout
