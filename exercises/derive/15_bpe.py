"""Exercise 15, derive track: byte-pair encoding, plainly.

Read "Learning the merges" on docs/09-tokenizer.md, then write the bodies of merge_pair and train_plain
below, merge_pair first, and run

    python exercises/judge.py bpe --track derive

The guided stub, exercises/guided/15_bpe.py, gives the steps and hints if you get stuck.
"""

from collections import Counter

from tokenizer import split_pieces


def merge_pair(tokens, pair, new):
    """A new list: tokens with each occurrence of pair, scanning left to right, replaced by new.
    Example: [1, 2, 3, 1, 2], pair (1, 2), new 4 -> [4, 3, 4]"""
    raise NotImplementedError  # your code, in place of this line


def train_plain(texts, num_merges):
    """(alphabet, merges) learned from texts, the pairs recounted before each merge: alphabet, the sorted
    characters; merges, at most num_merges (left id, right id) tuples, each the most frequent pair
    (the smallest on a tie), until no pair occurs twice. A pair never spans two pieces of split_pieces.
    Example: ["aaabdaaabac"], 10 -> (['a', 'b', 'c', 'd'], [(0, 0), (0, 1), (4, 5)])
    """
    raise NotImplementedError  # your code, in place of this line
