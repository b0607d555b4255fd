"""The models the lab (lab.py) answers with: the one it started with and the runs chosen from its listing, each
read once and read again when its files change, and a run's summary kept until its folder changes.
"""

import collections
from pathlib import Path

from engineering import checkpoint, gpt2, runs
from engineering.errors import InputError
from engineering.lab_server import RequestError, json_excerpt


def model_stamp(folder):
    """When and how large each file of a model in folder is (None where it is missing): it changes with any save."""
    stamp = []
    for name in ("model.json", *checkpoint.MODEL_FILES, *gpt2.FILES):  # a run's files, or a GPT-2 folder's
        try:
            info = (Path(folder) / name).stat()
            stamp.append((info.st_mtime_ns, info.st_size))
        except OSError:
            stamp.append(None)
    return tuple(stamp)


Held = collections.namedtuple("Held", "model stamp")


class Models:
    """The models the lab answers with: the one it started with (run None), and the runs of home chosen by their
    name in the listing, never by a path. Each is read once and kept while its files stay as they were; a run that
    saves a better model as it trains is read again. Where a model's folder is deleted or damaged after it was read,
    the copy in memory still answers, and the warning says so."""

    KEEP = 3  # models held at once, the first included: GPT-2 124M is 650 MB of float32

    def __init__(self, first, home):
        self.first, self.home = first, Path(home)
        self.held = collections.OrderedDict({first.folder: Held(first, model_stamp(first.folder))})

    def folder_of(self, run):
        """The folder of the run named run (None: the first model's): a run of the listing, or one the lab holds (a
        run deleted since); RequestError 404 where no run has that name."""
        if run is None:
            return self.first.folder
        named = {folder.name: folder for folder in runs.run_folders(self.home)}
        named.update({folder.name: folder for folder in self.held if folder.parent == self.home / "runs"})
        if run not in named:
            raise RequestError(404, f"there is no run named {json_excerpt(run)} in {self.home}/runs/; choose one "
                                    f"from the list")
        return named[run]

    def get(self, run):
        """(the model of the run named run, a warning: "" where there is nothing to warn of)."""
        folder = self.folder_of(run)
        held, now = self.held.get(folder), model_stamp(folder)
        if held is not None and held.stamp == now:
            return held.model, ""
        if held is not None and not any(now):
            return held.model, f"{folder}/ was deleted after the lab read it: this is its model as the lab read it"
        try:
            model = checkpoint.load(folder)
        except InputError as err:
            if held is None:
                raise
            return held.model, f"{err}. This is the model the lab read before"
        self.held[folder] = Held(model, now)
        self.held.move_to_end(folder)
        while len(self.held) > self.KEEP:  # the oldest chosen goes; the first model stays
            del self.held[next(key for key in self.held if key != self.first.folder)]
        if held is None:
            return model, ""
        return model, f"the run {folder.name} saved a new model since the lab read it: this is the new one"


class FolderMemo:
    """compute(folder), computed again only when the folder's files change: the page asks for the runs every few
    seconds, and summarizing a run reads its model's files whole (their sha256)."""

    def __init__(self):
        self.kept = {}

    def __call__(self, folder, compute):
        files = tuple(sorted((path.name, path.stat().st_mtime_ns, path.stat().st_size)
                             for path in Path(folder).iterdir() if path.is_file()))
        stamp = (files, runs.is_training(folder))  # a training that starts or ends changes no file at once
        kept = self.kept.get(folder)
        if kept is None or kept[0] != stamp:
            kept = self.kept[folder] = (stamp, compute(folder))
        return kept[1]
