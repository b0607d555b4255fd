"""Writing files so that an interrupted write never leaves a broken one: the one place that does it.

A file is written under a temporary name in the same folder, flushed to disk, and renamed onto its
real name: a rename within a folder is atomic, so the name holds the old file or the new, whole.
"""

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
