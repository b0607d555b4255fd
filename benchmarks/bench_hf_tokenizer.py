"""Time encoding a 1 MB text with a tokenizer.json, ours (engineering/hf_tokenizer.py) beside `tokenizers`'.

Run by hand, from the repository root (needs the gpt2 extra and `pip install tokenizers`):
    python benchmarks/bench_hf_tokenizer.py

The text is the sample corpus's rows with tests/tiny_tokenizers.py's training text (English, digits, Greek,
Cyrillic, CJK, Korean, Arabic, Hindi, emoji, chat tokens) between them, repeated to 1,000,000 characters. Each
kind of tokenizers/tiny_tokenizers.py is trained on its first 300,000 characters to VOCAB_SIZE tokens; then
the whole text is encoded as one string, by tokenizers' Tokenizer.encode (one thread: a single text is not
shared out) and by ours, first with an empty cache (a new HFTokenizer: every word merged once) and again with
the cache full; then row by row (one call a row, as a prompt is encoded), both caches full (tokenizers keeps
one too). Ids are checked equal. The figures are
the median of REPEATS runs, and only their ratios mean anything beyond this machine.
"""

import csv
import json
import os
import sys
from pathlib import Path

os.environ["TOKENIZERS_PARALLELISM"] = "false"  # before tokenizers is imported
REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "benchmarks")]
import tiny_tokenizers  # noqa: E402
from bench_tokenizer import REPEATS, median_seconds  # noqa: E402
from engineering import hf_tokenizer  # noqa: E402

TEXT_CHARS = 1_000_000
VOCAB_SIZE = 8000


def one_megabyte():
    with open(REPO / "data" / "sample.csv", newline="", encoding="utf-8") as f:
        rows = [row["text"] for row in csv.DictReader(f)]
    block = "\n".join(rows) + "\n" + tiny_tokenizers.TRAINING_TEXT + "\n"
    return (block * (TEXT_CHARS // len(block) + 1))[:TEXT_CHARS]


def main():
    text = one_megabyte()
    rows = text.split("\n")
    tiny_tokenizers.TRAINING_TEXT = text[:300_000]  # what trained() trains on
    print(f"{len(text):,} characters ({len(text.encode('utf-8')):,} bytes), {len(rows):,} rows; "
          f"median of {REPEATS} runs")
    print(f"{'kind':8} {'tokens':>8} {'tokenizers':>11} {'ours, cold':>11} {'ours, warm':>11} {'ratio':>6} "
          f"{'rows: theirs':>13} {'ours':>7} {'ratio':>6}")
    for kind in tiny_tokenizers.KINDS:
        theirs = tiny_tokenizers.trained(kind, VOCAB_SIZE)
        file = json.loads(theirs.to_str())
        theirs_s, their_ids = median_seconds(lambda: theirs.encode(text).ids)
        cold_s, our_ids = median_seconds(lambda: hf_tokenizer.HFTokenizer(file, {}).encode(text))
        ours = hf_tokenizer.HFTokenizer(file, {})
        ours.encode(text)
        warm_s, _ = median_seconds(lambda: ours.encode(text))
        assert our_ids == their_ids, f"{kind}: the ids differ"
        their_rows_s, _ = median_seconds(lambda: [theirs.encode(row).ids for row in rows])
        our_rows_s, _ = median_seconds(lambda: [ours.encode(row) for row in rows])
        print(f"{kind:8} {len(our_ids):8,} {theirs_s:10.2f}s {cold_s:10.2f}s {warm_s:10.2f}s {cold_s / theirs_s:6.2f} "
              f"{their_rows_s:12.2f}s {our_rows_s:6.2f}s {our_rows_s / their_rows_s:6.2f}")


if __name__ == "__main__":
    main()
