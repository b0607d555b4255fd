"""The corpus: read a text file or a CSV, split off the held-out part, cut token streams into windows.

A `.csv` is a table whose rows are documents (the column `corpus_column`), each ending with a newline;
any other file is one exact text (a book, a play, notes: `.txt`, `.md`, no extension at all), every
character of it kept. The held-out part is whole rows of a CSV, chosen by a seeded shuffle, or the end
of a text, from the start of a line; or, with val_path, a file of its own, read whole as the corpus is
read, and then the corpus is not split.
"""

import codecs
import math
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engineering.errors import InputError
from engineering.wording import plural

SAMPLE_CORPUS = Path(__file__).resolve().parent.parent / "data" / "sample.csv"  # beside this package


@dataclass
class Corpus:
    path: Path
    train_text: str  # what the model learns from
    val_text: str  # held out: the model never trains on it
    kind: str  # "rows" of a CSV, or one running "text": where a reply of the model ends (prompting.reply_end)
    described: str  # one line: what was read, and what was left out
    val_path: Path = None  # the file the validation text was read from (--val_path); None where the corpus was split


def corpus_file(path, default_path):
    """The corpus to read: path, or the bundled sample where path is the default and absent."""
    path = Path(path)
    if path == Path(default_path) and not path.exists():
        print(f"{path} not found: training on the bundled sample corpus, {SAMPLE_CORPUS.name}")
        return SAMPLE_CORPUS
    return a_file(path, "corpus", "--corpus_path")


def a_file(path, what, option):
    """path, where it is a file; else the InputError that says what it is instead (a folder, nothing).
    Example: a_file(Path("books"), "corpus", "--corpus_path") -> "/home/me/books is a folder, not a corpus: ..." """
    if path.is_dir():
        inside = sorted(child.name for child in path.iterdir() if child.suffix.lower() in (".txt", ".csv"))[:1]
        such_as = f" (such as {option} {shlex.quote(str(path / inside[0]))})" if inside else ""
        raise InputError(f"{path.resolve()} is a folder, not a {what}: give one text file or CSV in it{such_as}")
    if not path.is_file():
        raise InputError(f"no {what} at {path.resolve()}; give a text file or a CSV with {option}")
    return path


def characters_said(count, kind):
    """A corpus's size in characters, as train.py and talk.py both say it.

    Example: characters_said(178405, "rows") -> "178,405 characters with each row's newline"
    """
    return plural(count, "character") + (" with each row's newline" if kind == "rows" else "")


def read_corpus(path, column, max_rows, val_fraction, seed, val_path=""):
    """The corpus at path, split into training and validation text: a CSV as rows, whole rows held out;
    any other file as exact text, its last val_fraction held out. With val_path, the file there is the
    validation text, read whole as the corpus is, and the corpus is not split (held_out_apart)."""
    if val_path:
        return held_out_apart(path, column, max_rows, Path(val_path))
    if path.suffix.lower() != ".csv":
        text, kind, described = read_whole(path, column, max_rows)
        return Corpus(path, *split_text(text, val_fraction), kind, described)
    rows, described = described_rows(path, column, max_rows)
    train_rows, val_rows = split_rows(rows, val_fraction, seed)
    return Corpus(path, joined(train_rows), joined(val_rows), "rows", described)


def held_out_apart(path, column, max_rows, val_path):
    """The corpus at path, all of it for training, and the held-out text at val_path (--val_path), all of its rows
    or text, each read as its own name says (a CSV's column, or an exact text)."""
    if a_file(val_path, "held-out text", "--val_path").resolve() == path.resolve():
        raise InputError(f"--val_path {val_path} is the corpus itself: the held-out text must be one the model does "
                         f"not train on; give another file, or leave --val_path out to hold out the corpus's end")
    train_text, kind, described = read_whole(path, column, max_rows)
    val_text, _, val_described = read_whole(val_path, column, 0)
    return Corpus(path, train_text, val_text, kind,
                  f"{described}, all for training, not split (held out: {val_path}, {val_described})", val_path)


def read_whole(path, column, max_rows):
    """(text, kind, described): the file at path whole, as the corpus is read: a CSV's rows (the first max_rows),
    each with its newline, or an exact text; its kind ("rows", "text") and a line on what was read."""
    if path.suffix.lower() != ".csv":
        text = read_text(path)
        return text, "text", f"{characters_said(len(text), 'text')} of text"
    rows, described = described_rows(path, column, max_rows)
    return joined(rows), "rows", described


def described_rows(path, column, max_rows):
    """(rows, described): the CSV's rows (read_rows), and a line on them: how many, and which were left out."""
    rows, total, empty = read_rows(path, column, max_rows)
    described = f"{plural(len(rows), 'row')}, {characters_said(sum(len(row) + 1 for row in rows), 'rows')}"
    if max_rows and total > max_rows:
        described += f" (the first {max_rows:,} of {total:,} rows: max_rows = {max_rows:,}; --max_rows 0 uses them all)"
    if empty:
        described += f" ({plural(empty, 'empty row')} left out)"
    return rows, described


def joined(rows):  # each row with its newline, as a CSV's rows become one text
    return "".join(row + "\n" for row in rows)


# UTF-32's little-endian mark starts with UTF-16's, so it is looked for first
BYTE_ORDER_MARKS = [(codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
                    (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16")]


# the first bytes of the files most often given by mistake, and what they are
SIGNATURES = [(b"\x7fELF", "an executable (ELF)"), (b"MZ", "a Windows program (.exe or .dll)"),
              (b"\xcf\xfa\xed\xfe", "an executable (Mach-O)"), (b"\x89PNG", "a PNG image"),
              (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"), (b"%PDF", "a PDF document"),
              (b"PK\x03\x04", "a zip archive (or a .docx, .xlsx, .epub: a zip of files)"),
              (b"\x1f\x8b", "a gzip archive"), (b"SQLite format 3\0", "an SQLite database")]


def utf16_text(data):
    """The encoding ("UTF-16" or "UTF-32") that data is text in, by its byte order mark or, without one, by
    its look: every other byte 0, as in UTF-16's Latin letters, and decoding to characters nearly all
    printable; None where it is neither.

    Example: "Zoë".encode("utf-16-le") -> "UTF-16"; the first bytes of an executable -> None
    """
    marked = next((name for mark, name in BYTE_ORDER_MARKS if data.startswith(mark)), None)
    if marked:
        return marked
    for encoding, zeros in (("utf-16-le", data[1::2]), ("utf-16-be", data[0::2])):
        if zeros.count(0) < len(zeros) // 2:
            continue
        try:
            text = data[: len(data) // 2 * 2].decode(encoding)
        except UnicodeDecodeError:
            continue
        printable = sum(char.isprintable() or char in "\n\r\t" for char in text)
        if text and printable >= 0.95 * len(text):
            return "UTF-16"
    return None


def not_utf8(path, data):
    """The InputError for a file that is not UTF-8 text: it names what the file is (an executable, an image,
    an archive, other binary data) or the encoding its text most likely has (UTF-16 or UTF-32, else Latin-1).

    Example: a file of "Zoë".encode("utf-16") -> "cannot read zoe.txt: it is UTF-16 text, not UTF-8; ..."
    """
    kind = next((what for signature, what in SIGNATURES if data.startswith(signature)), None)
    if kind:
        return InputError(f"{path} is {kind}, not text; give a UTF-8 text file, or a CSV")
    encoding = utf16_text(data)
    if encoding is None and b"\0" in data:
        return InputError(f"{path} holds NUL bytes, so it is binary data, not text; give a UTF-8 text file")
    said, name = (f"{encoding} text", encoding) if encoding else \
        ("in another encoding (Latin-1, Windows-1252?)", "LATIN1")
    converted = path.with_name(f"{path.stem}-utf8{path.suffix}")  # beside it, in the folder it was given in
    return InputError(f"cannot read {path}: it is {said}, not UTF-8; save it as UTF-8, in an editor or with "
                      f"iconv -f {name} -t UTF-8 {shlex.quote(str(path))} > {shlex.quote(str(converted))}")


def read_text(path):
    """Every character of a text file, as written; Windows line ends (\\r\\n) become \\n."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")  # -sig: a byte order mark some editors write first is not text
    except UnicodeDecodeError:
        raise not_utf8(path, data) from None
    if "\0" in text:
        raise not_utf8(path, data)
    if not text.strip():
        raise InputError(f"{path} holds no text{' (only whitespace)' if text else ''}; give a corpus with text in it")
    return text.replace("\r\n", "\n")


def read_rows(path, column, max_rows):
    """(the first max_rows rows of a CSV column without the empty ones, how many rows it has in all,
    how many of the first max_rows were empty). max_rows = 0 keeps them all."""
    import pandas as pd  # here, where a CSV is read: a script that reads none does not pay for pandas

    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except UnicodeDecodeError:
        raise not_utf8(path, path.read_bytes()) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise InputError(f"cannot read {path} as CSV: {str(err).strip()}; a file of plain text trains as text "
                         f"when its name does not end in .csv") from None
    if column not in frame.columns:
        raise InputError(f"{path} has no column {column!r}; its columns are {list(frame.columns)}; "
                         f"choose one with --corpus_column")
    rows = frame[column].tolist()
    first = rows[:max_rows or None]
    kept = [row for row in first if row.strip()]
    if not kept:
        raise InputError(f"{path} holds no text (column {column!r} is empty); give a corpus with text in it")
    return kept, len(rows), len(first) - len(kept)


def split_rows(rows, val_fraction, seed):
    """(training rows, validation rows): a shuffle seeded with seed decides, each keeps corpus order."""
    order = np.random.default_rng(seed).permutation(len(rows))
    n_val = max(1, round(val_fraction * len(rows)))
    if n_val >= len(rows):
        raise InputError(f"{plural(len(rows), 'row')} cannot be split into training and validation; "
                         f"give a corpus with more rows")
    return [rows[i] for i in np.sort(order[n_val:])], [rows[i] for i in np.sort(order[:n_val])]


def split_text(text, val_fraction):
    """(training text, validation text): the validation text is the end of text, from the first line
    that starts at or after the cut at 1 - val_fraction, so no line is shared; nothing is dropped.

    Example: split_text("ab\\ncd\\nef\\ngh\\n", 0.4) -> ("ab\\ncd\\nef\\n", "gh\\n")
    """
    cut = math.floor((1 - val_fraction) * len(text))
    line_start = re.compile(r"\n(?=[^\n])").search(text, max(cut - 1, 0))
    if line_start is not None:
        cut = line_start.end()
    if not 0 < cut < len(text):
        raise InputError(f"{plural(len(text), 'character')} cannot be split into training and validation text; "
                         f"give a longer text")
    return text[:cut], text[cut:]


def make_windows(stream, seq_len, stride, what):
    """(inputs, targets), each (num_windows, seq_len): windows of seq_len + 1 tokens every stride.

    Example: stream [0..5], seq_len 2, stride 2 -> inputs [[0, 1], [2, 3]], targets [[1, 2], [3, 4]]
    """
    if len(stream) < seq_len + 1:
        raise InputError(f"the {what} text has {plural(len(stream), 'token')}, fewer than one window of seq_len + 1 = "
                         f"{seq_len + 1}; use a longer corpus or a smaller seq_len")
    windows = np.lib.stride_tricks.sliding_window_view(stream, seq_len + 1)[::stride]
    return windows[:, :-1], windows[:, 1:]


def token_lengths(tokenizer):  # -> (V,): the characters each token starts, for bits per character
    """For each token, the UTF-8 bytes of it that start a character (every byte but 10xxxxxx): summed over a
    text's tokens, its characters, also where a GPT-2 token holds part of one.

    Example: a token of the bytes of "é" (0xc3 0xa9) -> 1; one of "aé" -> 2; one of 0xa9 alone -> 0
    """
    starts = [sum(byte & 0xC0 != 0x80 for byte in tokenizer.token_bytes(i)) for i in range(tokenizer.vocab_size)]
    return np.array(starts)
