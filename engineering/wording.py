"""How the project says things to a person: counts, durations, and the commands it tells them to type.

The commands name a run by its folder's name where it lies in config.py's home (checkpoints/), the
home every command reads unless given --checkpoint, and add --checkpoint HOME where it lies elsewhere.
"""

import os
from pathlib import Path

HOME = Path("checkpoints")  # config.py's checkpoint, which the package does not import (the tests check they agree)


def plural(count, word):
    """Example: plural(1, "merge") -> "1 merge"; plural(2_000, "row") -> "2,000 rows" """
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def duration(seconds):
    """Seconds as minutes and seconds, rounded to the second first, so 59.7 s is a minute, never "60 s".

    Example: duration(239.6) -> "4 min 00 s"
    """
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"


def home_option(home):
    """The --checkpoint option a command needs to name the home folder home: none for config.py's own.

    Example: home_option("checkpoints") -> ""; home_option("/tmp/ck") -> " --checkpoint /tmp/ck"
    """
    return "" if Path(home) == HOME else f" --checkpoint {home}"


def removal(home, name):
    """The command that removes the run `name` of the home folder home (home/runs/name).

    Example: removal("checkpoints", "x") -> "python train.py --remove x";
    removal("/tmp/ck", "x") -> "python train.py --remove x --checkpoint /tmp/ck"
    """
    return f"python train.py --remove {name}{home_option(home)}"


def talk_command(folder):
    """The command that talks to the model of a run folder: by its name in config.py's home, else by its folder.

    Example: talk_command("checkpoints/runs/x") -> "python talk.py --checkpoint x"
    """
    folder = Path(folder)
    in_home = folder.parent == HOME / "runs"
    return f"python talk.py --checkpoint {folder.name if in_home else as_path(folder)}"


def written_as_path(value):
    """Whether a --checkpoint, --resume or --remove value is a path rather than a run's name: it holds a /, or
    starts with . or ~. A bare name is a run's, even where the current folder holds a folder of that name.

    Example: written_as_path("gpt2/") -> True; written_as_path("./gpt2") -> True; written_as_path("gpt2") -> False
    """
    return "/" in value or os.sep in value or value.startswith((".", "~"))


def as_path(folder):
    """A folder as a command names it, written as a path, since a bare name names a run.

    Example: as_path("mybook") -> "./mybook"; as_path("/tmp/ck/runs/x") -> "/tmp/ck/runs/x"
    """
    return str(folder) if written_as_path(str(folder)) else f"./{folder}"
