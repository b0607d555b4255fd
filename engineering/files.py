"""Writing files so that an interrupted write never leaves a broken one: the one place that does it;
and reading a JSON file, its problem told in one line.

A file is written under a temporary name in the same folder, flushed to disk, and renamed onto its
real name: a rename within a folder is atomic, so the name holds the old file or the new, whole.
"""

import json
import os
from pathlib import Path


def temporary_name(path):
    path = Path(path)
    return path.with_name(f".{path.name}.tmp")


def write_staged(path, data):
    """Write bytes to path's temporary name, flushed to disk; publish_staged renames it onto path."""
    with open(temporary_name(path), "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def publish_staged(paths):
    """Rename each staged file onto its path, in order. Done only once every file is written, so a
    failed write leaves all the old files as they were."""
    for path in paths:
        os.replace(temporary_name(path), path)


def write_atomically(path, data):
    """Write bytes to path through a temporary file in the same folder and a rename."""
    write_staged(path, data)
    publish_staged([path])


def read_json(path, problem):
    """The JSON value in path, or, where it is not JSON text, the InputError that problem(why) makes.

    Example: read_json(p, lambda why: InputError(f"{p} is {why}")) on a cut-off file
    -> InputError("... is not valid JSON: Expecting value: line 1 column 9 (char 8)")
    """
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise problem(f"not valid JSON: {err}") from None
