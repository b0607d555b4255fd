"""Time training 500 BPE merges and encoding the whole corpus, ours beside HuggingFace's.

Run by hand, from the repository root:
    python benchmarks/bench_tokenizer.py               # a made-up English-like corpus
    python benchmarks/bench_tokenizer.py data/corpus.csv   # the `text` column of a CSV

HuggingFace `tokenizers` is timed too when it is installed (`pip install tokenizers`; it is
not a dependency of the project). It is set up to do the same work: a BPE model with no
normalizer and no pre-tokenizer, so each row is one "word" and merges may cross spaces, as
ours do; min_frequency=2 and vocab_size = alphabet + 500, the whole alphabet kept.
"""
import csv
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tokenizer import BPETokenizer  # noqa: E402

NUM_MERGES = 500
CORPUS_CHARS = 200_000
REPEATS = 5
WORDS = """the a an of to and in is was it that he she they we you for on with as at by from
this his her their our not but or be have had has were are been will would can could one all
there what so up out if about who get which go me when make like time no just him know take
people into year your good some them see other than then now look only come its over think
also back after use two how first well way even new want because any these give day most us
old light river house morning garden letter window road city night water small long little
great right hand place world story child woman man friend quiet stone cold warm bright dark
walked said found turned opened waited heard watched carried answered remembered believed
slowly softly again always never often together almost already perhaps suddenly""".split()


def english_like_rows(total_chars, seed=0):
    """Seeded random sentences, a few to a row, until the rows hold total_chars characters."""
    rng = random.Random(seed)
    rows, size = [], 0
    while size < total_chars:
        sentences = []
        for _ in range(rng.randint(1, 3)):
            words = rng.choices(WORDS, k=rng.randint(4, 9))
            sentences.append(" ".join(words).capitalize() + rng.choice(".!?,;"))
        row = " ".join(sentences)
        rows.append(row)
        size += len(row)
    return rows


def csv_rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return [row["text"] for row in csv.DictReader(f)]


def median_seconds(work):
    """The median wall time of REPEATS calls of work(), and its last result."""
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def time_ours(rows):
    """Seconds to train and to encode every row, the merges as text pairs, the token count."""
    train_s, tok = median_seconds(lambda: BPETokenizer.train(rows, NUM_MERGES))
    encode_s, encoded = median_seconds(lambda: [tok.encode(row) for row in rows])
    merges = [(tok.decode([left]), tok.decode([right])) for left, right in tok.merges]
    return train_s, encode_s, merges, sum(map(len, encoded))


def time_huggingface(rows, alphabet):
    """The same as time_ours, done by HuggingFace tokenizers (encode_batch, on every core)."""
    import json

    from tokenizers import Tokenizer, models, trainers

    def train():
        hf = Tokenizer(models.BPE())
        trainer = trainers.BpeTrainer(vocab_size=len(alphabet) + NUM_MERGES, min_frequency=2,
                                      initial_alphabet=alphabet, limit_alphabet=len(alphabet),
                                      show_progress=False)
        hf.train_from_iterator(rows, trainer)
        return hf

    train_s, hf = median_seconds(train)
    encode_s, encoded = median_seconds(lambda: hf.encode_batch(rows))
    # tokenizers 0.20 and later save each merge as [left, right]; older versions wrote
    # "left right", which cannot be split back when a piece holds a space.
    merges = [tuple(merge) for merge in json.loads(hf.to_str())["model"]["merges"]]
    return train_s, encode_s, merges, sum(len(e.ids) for e in encoded)


def main():
    rows = csv_rows(sys.argv[1]) if len(sys.argv) > 1 else english_like_rows(CORPUS_CHARS)
    alphabet = sorted(set().union(*rows))
    print(f"corpus: {len(rows)} rows, {sum(map(len, rows))} characters, {len(alphabet)} distinct; "
          f"median of {REPEATS} runs")
    results = {"ours (tokenizer.py)": time_ours(rows)}
    try:
        results["HuggingFace tokenizers"] = time_huggingface(rows, alphabet)
    except ImportError:
        print("HuggingFace `tokenizers` is not installed, so only ours is timed")
    print(f"{'':24} {'train (s)':>10} {'encode (s)':>11} {'merges':>7} {'tokens':>8}")
    for name, (train_s, encode_s, merges, tokens) in results.items():
        print(f"{name:24} {train_s:10.3f} {encode_s:11.3f} {len(merges):7d} {tokens:8d}")
    if len(results) == 2:
        ours, theirs = (result[2] for result in results.values())
        same = sum(a == b for a, b in zip(ours, theirs))
        print(f"merges in the same place in both lists: {same} of {len(ours)}")


if __name__ == "__main__":
    main()
