"""Writing files so that an interrupted write never leaves a broken one: the one place that does it;
and reading a JSON file, its problem told in one line.

A file is written under a temporary name in the same folder, flushed to disk, and renamed onto its
real name: a rename within a folder is atomic, so the name holds the old file or the new, whole. A
write that fails (a full disk, a second Ctrl-C) deletes its temporary file, so that it leaves no space
taken; one that a kill stops leaves it, for the run's next start or listing to delete (checkpoint.py).

A JSON file is read with its nesting and its integers bounded before any value is made of it: a file
nested 200,000 deep, or holding an integer of thousands of digits, is a file that is damaged, said in
one line, and never a RecursionError in whatever reads it.
"""

import contextlib
import itertools
import json
import os
import re
from pathlib import Path

MAX_DEPTH = 64  # arrays and objects nested in a JSON file read: the project's own nest 3 deep, a tokenizer.json 6
MAX_DIGITS = 20  # digits of an integer in a JSON file read: 2**64 has 20
# A JSON string, or the rest of one never closed. A match always ends at the string's end or the text's, so the
# text is read once; a pattern that may fail after its " (one never closed) tries again from each later ", which
# takes time that grows with the square of the text's length.
STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)


def temporary_name(path):
    path = Path(path)
    return path.with_name(f".{path.name}.tmp")


def write_staged(path, data):
    """Write bytes to path's temporary name, flushed to disk; publish_staged renames it onto path."""
    with removed_on_failure(temporary_name(path)) as staged, open(staged, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


@contextlib.contextmanager
def removed_on_failure(path):
    """Around the writing of the file path: where the writing fails (a full disk, Ctrl-C), the file is deleted, so
    that a failed save leaves nothing half written and no space taken; the failure goes on up."""
    try:
        yield Path(path)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(path).unlink(missing_ok=True)
        raise


def publish_staged(paths):
    """Rename each staged file onto its path, in order. Done only once every file is written, so a
    failed write leaves all the old files as they were."""
    for path in paths:
        os.replace(temporary_name(path), path)


def write_atomically(path, data):
    """Write bytes to path through a temporary file in the same folder and a rename."""
    write_staged(path, data)
    publish_staged([path])


def json_nesting(text):
    """How deep a JSON text's arrays and objects nest, brackets inside its strings not counted, found in time that
    grows with the text's length alone: read before json.loads, which recurses once a level.

    Example: json_nesting('{"a": [1, "]["], "b": {}}') -> 2
    """
    brackets = re.findall(r"[\[\]{}]", STRING.sub("", text))
    return max([0, *itertools.accumulate(1 if bracket in "[{" else -1 for bracket in brackets)])


def parse_json(text):
    """The value of a JSON text, its nesting (MAX_DEPTH) and its integers (MAX_DIGITS) bounded before any value
    is made; ValueError saying why not."""
    if json_nesting(text) > MAX_DEPTH:
        raise ValueError(f"arrays and objects nested more than {MAX_DEPTH} deep")
    return json.loads(text, parse_int=bounded_int)


def bounded_int(digits):
    """The integer json.loads read as digits, or ValueError where it has more than MAX_DIGITS digits."""
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise ValueError(f"an integer of {len(digits.lstrip('-')):,} digits (at most {MAX_DIGITS} are read)")
    return int(digits)


def read_json(path, problem):
    """The JSON value in path, or, where it is not JSON text this project reads, the InputError that problem(why)
    makes. Any error of reading the text is the file's (nothing of a person's code runs here), and is caught.

    Example: read_json(p, lambda why: InputError(f"{p} is {why}")) on a cut-off file
    -> InputError("... is not valid JSON: Expecting value: line 1 column 9 (char 8)")
    """
    data = Path(path).read_bytes()
    try:
        return parse_json(data.decode("utf-8"))
    except Exception as err:  # noqa: BLE001  a UnicodeDecodeError, a JSONDecodeError, the bounds, a MemoryError
        raise problem(f"not valid JSON: {' '.join(str(err).split())[:200] or type(err).__name__}") from None
