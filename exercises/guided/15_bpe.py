"""Exercise 15: byte-pair encoding, plainly: merge a pair, then learn the merges.

Write the bodies of merge_pair and train_plain below, merge_pair first, then run

    python exercises/judge.py bpe

merge_pair is judged on the page's example and on overlapping pairs; train_plain on the page's
"aaabdaaabac", on ties, and against the project's on two small texts. docs/09-tokenizer.md derives
both; the solution is the project's own merge_pair and train_plain in tokenizer.py.
"""

from collections import Counter

from tokenizer import split_pieces


def merge_pair(tokens, pair, new):
    """tokens with each occurrence of pair, scanning left to right, replaced by new.

    Example: tokens [1, 2, 3, 1, 2], pair (1, 2), new 4 -> [4, 3, 4]

    Hints:
    - Left to right, and a pair once merged is used up: [0, 0, 0] with pair (0, 0) gives [new, 0].
    - Build a new list; leave tokens as it is.
    Return the new list.
    """
    raise NotImplementedError  # your code, in place of this line


def train_plain(texts, num_merges):
    """(alphabet, merges) learned from texts by recounting every pair before each merge.

    alphabet: the sorted characters of all the texts, ids 0 .. len(alphabet) - 1. Each text is cut into
    pieces by split_pieces (a pair never spans two pieces), each piece a list of ids. Then up to
    num_merges times:
        count every adjacent pair of ids of every piece
        stop if no pair occurs twice
        the most frequent pair (on a tie, the smallest (left, right)) gets the next id
        merge it in every piece (merge_pair), and append it to merges

    Example: texts ["aaabdaaabac"], num_merges 10 -> (['a', 'b', 'c', 'd'], [(0, 0), (0, 1), (4, 5)])

    Hints:
    - Counter(zip(row, row[1:])) counts the pairs of one row.
    - min over the pairs of the highest count gives the smallest on a tie.
    Return alphabet (a list of characters) and merges (a list of (int, int) tuples).
    """
    raise NotImplementedError  # your code, in place of this line
