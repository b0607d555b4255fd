"""Byte-pair encoding (BPE): the plain algorithm, the same made fast, and GPT-2's byte-level BPE.

The algorithm, as the first functions below write it plainly: the alphabet is every distinct
character of the training text, sorted by code point, with ids 0..A-1; training counts every pair
of adjacent tokens, merges the most frequent pair into a new token, and does it again; merge i
makes id A + i. Encoding applies the merges to a text in the order they were learned.

Text is cut into pieces, each a line with the blank lines after it (split_pieces), and a pair
never spans two pieces. It may span a space: lines are not split into words, so a token such as
"e t" can be learned, and a line's end with the blank line after it ("\n\n") can be one token.

Merging a pair rewrites a row left to right, so with pair (a, a) the row "aaa" becomes
["aa", "a"]. Training and encoding both follow this rule, which is why encoding a training
row gives exactly the tokens training ended with for it.

BPETokenizer does the same faster (a book of a million characters learns 500 merges in seconds
rather than hours): training keeps every pair's count and updates it only where a merge touches
(_Rows), and encoding merges a heap of ranked pairs; tests/test_tokenizer.py checks that both give
the plain functions' merges and ids, on the bundled corpus too.

ByteLevelBPE, last, is GPT-2's tokenizer: the same merging, over a text's UTF-8 bytes rather than
its characters, so every text encodes. Writing and reading a tokenizer's file is the engineering's
(engineering/tokenizer_files.py).
"""
import codecs
import heapq
import re
from collections import Counter


PIECE = re.compile(r"[^\n]*\n+|[^\n]+")  # a line with the newlines that end it, or a last line without one


def split_pieces(text):
    """The pieces a pair never spans: each line with its newline and the blank lines after it.

    A piece ends with newlines and the next begins with another character, and training never
    sees a token ending with a newline before another character: so no merge joins two pieces,
    and encoding a text piece by piece gives the ids of encoding it whole.
    Example: "Ber.\nWho?\n\nFran." -> ["Ber.\n", "Who?\n\n", "Fran."]
    """
    return PIECE.findall(text)


# --- BPE, plainly: count the pairs, merge the most frequent, encode by rank -------------------------

def merge_pair(tokens, pair, new):
    """tokens with each occurrence of pair, scanning left to right, replaced by new.

    Example: tokens=[1, 2, 3, 1, 2], pair=(1, 2), new=4 -> [4, 3, 4]
    """
    merged, i = [], 0
    while i < len(tokens):
        if tuple(tokens[i:i + 2]) == pair:
            merged.append(new)
            i += 2
        else:
            merged.append(tokens[i])
            i += 1
    return merged


def train_plain(texts, num_merges):
    """(alphabet, merges) learned from texts by recounting every pair of every piece before each merge.

    The most frequent pair is merged; among pairs of equal count, the smallest (left_id, right_id).
    Training stops early when no pair occurs twice.
    Example: texts=["aaabdaaabac"], num_merges=10 -> (['a', 'b', 'c', 'd'], [(0, 0), (0, 1), (4, 5)])
    """
    alphabet = sorted(set().union(*texts))
    rows = [[alphabet.index(char) for char in piece] for text in texts for piece in split_pieces(text)]
    merges = []
    for new_id in range(len(alphabet), len(alphabet) + num_merges):
        counts = Counter(pair for row in rows for pair in zip(row, row[1:]))
        best = max(counts.values(), default=0)
        if best < 2:
            break
        pair = min(pair for pair, count in counts.items() if count == best)
        rows = [merge_pair(row, pair, new_id) for row in rows]
        merges.append(pair)
    return alphabet, merges


def encode_plain(text, alphabet, merges):
    """The ids of text: its characters' ids, then each merge applied, in the order it was learned.

    Example: alphabet ['a', 'b', 'c', 'd'], merges [(0, 0), (0, 1), (4, 5)], text="aaab" -> [6]
    """
    ids = [alphabet.index(char) for char in text]
    for rank, pair in enumerate(merges):
        ids = merge_pair(ids, pair, len(alphabet) + rank)
    return ids


# --- BPE, fast: the same merges and ids ----------------------------------------------------------

class BPETokenizer:
    """A trained character-level BPE: an alphabet and a list of merges, in learned order."""

    def __init__(self, alphabet, merges):
        self.alphabet = list(alphabet)
        self.merges = [tuple(pair) for pair in merges]
        self._char_id = {char: i for i, char in enumerate(self.alphabet)}
        self._rank = {pair: rank for rank, pair in enumerate(self.merges)}
        self._piece_ids = {}  # piece -> its ids, filled as pieces are encoded: a book repeats many lines
        # The text of every token is derived from the merges, never stored.
        self._pieces = list(self.alphabet)
        for left, right in self.merges:
            self._pieces.append(self._pieces[left] + self._pieces[right])

    @classmethod
    def train(cls, texts, num_merges):
        """Learn up to num_merges merges from the texts, cut into pieces (split_pieces); stop
        early when no pair occurs twice (len(tok.merges) says how many were learned).

        Each step merges the pair with the highest count, summed over all pieces. Among pairs
        with equal counts it takes the smallest (left_id, right_id), so the result depends
        only on the multiset of pieces, never on their order.
        Example: texts=["aaabdaaabac"], num_merges=10 -> alphabet ['a', 'b', 'c', 'd'],
        merges [(0, 0), (0, 1), (4, 5)] (counts 4, 2 and 2; (0, 1) beat (4, 0) on the tie).
        """
        if isinstance(texts, str):
            raise TypeError("texts must be a list of rows, not one string")
        if num_merges < 0:
            raise ValueError(f"num_merges must be 0 or more, got {num_merges}")
        alphabet = sorted(set().union(*texts))
        rows = _Rows([piece for text in texts for piece in split_pieces(text)],
                     {char: i for i, char in enumerate(alphabet)})
        merges = []
        for new_id in range(len(alphabet), len(alphabet) + num_merges):
            pair, count = rows.most_frequent_pair()
            if count < 2:
                break
            rows.merge(pair, new_id)
            merges.append(pair)
        return cls(alphabet, merges)

    @property
    def vocab_size(self):
        return len(self._pieces)

    def encode(self, text):
        """Turn text into token ids; a character outside the alphabet is a ValueError.

        Example: tokenizer trained on ["aaabdaaabac"], text="aaab" -> [6]
        """
        unknown = self._unknown_chars(text)
        if unknown:
            listed = ", ".join(f"{char!r} at {at}" for char, at in unknown.items())
            raise ValueError(f"unknown characters: {listed}; the tokenizer was trained without them")
        return self._encode_known(text)

    def encode_known(self, text):
        """Encode text without the characters outside the alphabet, and name those characters
        (each once, in order of first appearance) so the caller can warn about them.

        Example: tokenizer trained on ["aaabdaaabac"], text="abXaXY" -> ([5, 0], ['X', 'Y'])
        """
        unknown = self._unknown_chars(text)
        if unknown:
            text = "".join(char for char in text if char not in unknown)
        return self._encode_known(text), list(unknown)

    def decode(self, ids):
        """Turn token ids back into text.

        Example: tokenizer trained on ["aaabdaaabac"], ids=[6, 3] -> "aaabd"
        """
        for i in ids:
            if not 0 <= i < self.vocab_size:
                raise ValueError(f"token id {i} is outside the vocabulary, "
                                 f"whose ids run from 0 to {self.vocab_size - 1}")
        return "".join(self._pieces[i] for i in ids)

    def token_bytes(self, token_id):
        """The UTF-8 bytes of one token's text. Example: tokenizer trained on ["aaabdaaabac"], 6 -> b"aaab" """
        return self._pieces[token_id].encode("utf-8")

    def decoder(self):
        """A StreamDecoder, as GPT-2's tokenizer has one: here every token is whole characters already."""
        return StreamDecoder(self)

    def __eq__(self, other):
        if not isinstance(other, BPETokenizer):
            return NotImplemented
        return self.alphabet == other.alphabet and self.merges == other.merges

    def __repr__(self):
        return f"BPETokenizer({len(self.alphabet)} characters, {len(self.merges)} merges)"

    def _unknown_chars(self, text):
        """{char: position of its first appearance} for each character outside the alphabet.

        Example: alphabet ['a', 'b'], text="aXbXY" -> {'X': 1, 'Y': 4}
        """
        unknown = set(text).difference(self._char_id)
        return dict(sorted(((char, text.index(char)) for char in unknown), key=lambda item: item[1]))

    def _encode_known(self, text):
        """The ids of text, every character of which is in the alphabet, piece by piece."""
        ids = []
        for piece in split_pieces(text):
            piece_ids = self._piece_ids.get(piece)
            if piece_ids is None:
                piece_ids = self._piece_ids[piece] = self._apply_merges([self._char_id[char] for char in piece])
            ids += piece_ids
        return ids

    def _apply_merges(self, ids):
        """Apply the merges to ids in learned order, each one left to right.

        A heap of (rank, position) pops every occurrence of the lowest-ranked pair, leftmost
        first. That is the order training used: a merge only creates pairs with the new id,
        and those have a higher rank than the merge that made it.
        Example: alphabet ['a', 'b'], merges [(0, 0)], ids=[0, 0, 0, 1] -> [2, 0, 1]
        """
        tokens = list(ids)
        after = list(range(1, len(tokens))) + [-1]
        before = list(range(-1, len(tokens) - 1))
        pairs = enumerate(zip(tokens, tokens[1:]))
        heap = [(self._rank[pair], at) for at, pair in pairs if pair in self._rank]
        heapq.heapify(heap)
        while heap:
            rank, at = heapq.heappop(heap)
            right = after[at]
            # Skip an entry whose pair an earlier merge changed; a merged-away position
            # holds -1, which is in no pair.
            if right == -1 or self._rank.get((tokens[at], tokens[right])) != rank:
                continue
            tokens[at], tokens[right] = len(self.alphabet) + rank, -1
            after[at] = after[right]
            if after[at] != -1:
                before[after[at]] = at
            for left in (before[at], at):
                if left != -1 and after[left] != -1:
                    new_rank = self._rank.get((tokens[left], tokens[after[left]]))
                    if new_rank is not None:
                        heapq.heappush(heap, (new_rank, left))
        return [token for token in tokens if token != -1]


class StreamDecoder:
    """Decode ids as they come: add(id) returns the characters completed so far, holding back the
    first bytes of a character whose last bytes are in a later token; flush() ends the stream.

    Example: "🤖" as GPT-2's two tokens of its four bytes: add(first) -> "", add(second) -> "🤖"
    """

    def __init__(self, tokenizer):
        self._tokenizer = tokenizer
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def add(self, token_id):
        return self._utf8.decode(self._tokenizer.token_bytes(token_id))

    def flush(self):
        """What is held back, as U+FFFD: the stream ended inside a character."""
        return self._utf8.decode(b"", final=True)


class _Rows:
    """The distinct training rows as linked lists of tokens, with every adjacent pair counted
    and indexed, so that a merge touches only the places where the pair stands.

    The rows lie end to end in flat lists: position p holds token[p], the positions after[p]
    and before[p] of its neighbours (-1 at a row's ends, so no pair spans two rows) and
    weight[p], how many times its row occurs. count[pair] is the number of occurrences of
    pair over all rows, at[pair] the set of positions of their left tokens. The heap holds
    (-count, pair) entries, some stale; an entry is current when its count is the pair's count.
    """

    def __init__(self, texts, char_id):
        self.token, self.after, self.before, self.weight = [], [], [], []
        for text, copies in Counter(text for text in texts if text).items():
            start = len(self.token)
            self.token += [char_id[char] for char in text]
            self.after += list(range(start + 1, start + len(text))) + [-1]
            self.before += [-1] + list(range(start, start + len(text) - 1))
            self.weight += [copies] * len(text)
        self.count, self.at = {}, {}
        self._count_pairs_at(range(len(self.token)), sign=1)
        self.heap = [(-count, pair) for pair, count in self.count.items()]
        heapq.heapify(self.heap)

    def most_frequent_pair(self):
        """The pair with the highest count (the smallest such pair on a tie) and its count;
        (None, 0) when there are no pairs left."""
        while self.heap:
            negative_count, pair = self.heap[0]
            if self.count.get(pair) == -negative_count:
                return pair, -negative_count
            heapq.heappop(self.heap)
        return None, 0

    def merge(self, pair, new_id):
        """Replace every occurrence of pair by new_id, row by row, left to right.

        Example: rows ["aaaa"] as [0, 0, 0, 0], pair=(0, 0), new_id=1 -> [1, 1]
        """
        changed = set()
        for left in sorted(self.at[pair]):
            right = self.after[left]
            # An overlapping occurrence just merged may have used this one up ("aaa").
            if right == -1 or (self.token[left], self.token[right]) != pair:
                continue
            changed.update(self._count_pairs_at((self.before[left], left, right), sign=-1))
            self.token[left], self.token[right] = new_id, -1
            self.after[left] = self.after[right]
            if self.after[left] != -1:
                self.before[self.after[left]] = left
            changed.update(self._count_pairs_at((self.before[left], left), sign=1))
        assert pair not in self.count, f"pair {pair} still counted after merging it"
        for changed_pair in changed:
            if changed_pair in self.count:
                heapq.heappush(self.heap, (-self.count[changed_pair], changed_pair))

    def _count_pairs_at(self, positions, sign):
        """Count (sign=1) or uncount (sign=-1) the pairs whose left tokens stand at positions
        (-1 and a row's last position start none); return those pairs."""
        pairs = []
        for left in positions:
            if left != -1 and self.after[left] != -1:
                pair = (self.token[left], self.token[self.after[left]])
                self.count[pair] = self.count.get(pair, 0) + sign * self.weight[left]
                if sign == 1:
                    self.at.setdefault(pair, set()).add(left)
                else:
                    self.at[pair].discard(left)
                if self.count[pair] == 0:
                    del self.count[pair], self.at[pair]
                pairs.append(pair)
        return pairs


# --- GPT-2's byte-level BPE: the same merges, over bytes -------------------------------------------

END_OF_TEXT = "<|endoftext|>"  # GPT-2's one special token: a single id wherever it stands in a text


def byte_stand_ins():
    """The 256 bytes in GPT-2's order, each with the printable character that stands for it.

    Bytes that print as a visible Latin-1 character stand for themselves and come first, in byte
    order; the other 68 (controls, space, DEL, no-break space, soft hyphen) take the characters from
    chr(256) on, in byte order. ids 0..255 of GPT-2's vocabulary are these characters, in this order.
    Example: byte_stand_ins()[0] -> (33, "!"); dict(byte_stand_ins())[32] -> "Ġ" (chr(256 + 32))
    """
    visible = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    hidden = [b for b in range(256) if b not in visible]
    return [(b, chr(b)) for b in visible] + [(b, chr(256 + n)) for n, b in enumerate(hidden)]


# GPT-2's words: the English contractions, then letters, digits or other marks with at most one space
# before them; a run of spaces keeps its last space for the word after it (\s+(?!\S))
PRE_SPLIT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


class ByteLevelBPE:
    """GPT-2's tokenizer: a vocabulary (token text -> id) and merges, lowest rank first.

    A text is cut into words by PRE_SPLIT, each word's UTF-8 bytes are written as their stand-in
    characters (byte_stand_ins), and the merges join neighbouring tokens, lowest rank first. Every
    text encodes, and decoding gives it back.
    """

    def __init__(self, vocab, merges):
        import regex  # here: only GPT-2 needs it (pip install -e ".[gpt2]"), for PRE_SPLIT's \p{L} and \p{N}
        self.vocab = dict(vocab)
        self.merges = [tuple(pair) for pair in merges]
        self._rank = {pair: rank for rank, pair in enumerate(self.merges)}
        self._text = {i: text for text, i in self.vocab.items()}
        self._char_of_byte = dict(byte_stand_ins())
        self._byte_of_char = {char: b for b, char in self._char_of_byte.items()}
        self._special = END_OF_TEXT if END_OF_TEXT in self.vocab else None
        self._words = regex.compile(PRE_SPLIT)
        self._word_ids = {}  # word -> its ids, filled as words are encoded: a text repeats most of its words

    @property
    def vocab_size(self):
        return len(self.vocab)

    def encode(self, text):
        """The ids of text, as GPT-2's tokenizer gives them; <|endoftext|> in the text is its one id.

        Example: with GPT-2's own files, encode("Hello world") -> [15496, 995]
        """
        ids = []
        parts = text.split(self._special) if self._special else [text]
        for n, part in enumerate(parts):
            if n:
                ids.append(self.vocab[self._special])
            for word in self._words.findall(part):
                if word not in self._word_ids:
                    self._word_ids[word] = [self.vocab[token] for token in self.merged(word)]
                ids.extend(self._word_ids[word])
        return ids

    def encode_known(self, text):
        """(ids, characters left out): the scripts' way to encode; every text is known to a byte-level BPE."""
        return self.encode(text), []

    def merged(self, word):
        """The tokens of one word: its bytes as stand-ins, merged lowest rank first.

        Each round merges every place the best-ranked pair occurs, left to right, so "aaa" with
        the merge (a, a) becomes ["aa", "a"]. Example: merged(" hi") with the merges (Ġ, h), (Ġh, i) -> ["Ġhi"]
        """
        tokens = [self._char_of_byte[b] for b in word.encode("utf-8")]
        while len(tokens) > 1:
            ranked = [(self._rank.get(pair, len(self._rank)), pair) for pair in zip(tokens, tokens[1:])]
            rank, best = min(ranked)
            if rank == len(self._rank):
                break  # no pair left that a merge joins
            tokens = merge_pair(tokens, best, best[0] + best[1])
        return tokens

    def token_bytes(self, token_id):
        """The bytes one id stands for. Example: token_bytes(220) -> b" " (GPT-2's "Ġ")"""
        text = self._text[int(token_id)]
        if text == self._special:
            return text.encode("utf-8")
        return bytes(self._byte_of_char[char] for char in text)

    def decode(self, ids):
        """The text of ids; bytes that are no whole UTF-8 character (a cut-off sequence) become U+FFFD.

        Example: decode(encode("naïve 🤖")) -> "naïve 🤖"
        """
        return b"".join(self.token_bytes(i) for i in ids).decode("utf-8", errors="replace")

    def decoder(self):
        """A StreamDecoder: the text of ids given one at a time, each character once it is whole."""
        return StreamDecoder(self)
