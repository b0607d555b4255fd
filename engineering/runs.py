"""Run folders: where each training writes, and how runs are named, found, listed, removed, resumed and locked.

Training's home folder (checkpoints/) holds a folder for each run, runs/<its name>/: the run's best
model (checkpoint.py's three files), its resume state and its losses. A run is named by
`train.py --name`, or by its UTC start time and its corpus (20261201-0230-sample); talk.py,
generate.py, lab.py and `train.py --resume` find it by that name, or by the start of it, among the
runs alone: a folder is read as a folder only where it is written as a path (wording.written_as_path), and
`--remove` removes nothing but a run. Without a name, talk.py and generate.py read the latest
finished run (default_run); nothing is copied anywhere, so no run ever replaces another's model.
"""

import contextlib
import math
import os
import re
import shutil
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from filelock import FileLock, Timeout

from engineering import checkpoint, gpt2
from engineering.errors import InputError, os_reason, os_remedy, shortened
from engineering.files import temporary_name
from engineering.settings import given, read_back, replaced
from engineering.wording import plural, removal, written_as_path


# --- names and folders ------------------------------------------------------------------------

def run_folders(home):
    """The run folders in home/runs/, by name; a folder being written (its name starts with a dot) is none."""
    runs = Path(home) / "runs"
    return sorted(path for path in runs.iterdir() if path.is_dir() and not path.name.startswith(".")) \
        if runs.is_dir() else []


def default_run_name(corpus_path, now):
    """A run's name where the person gave none: its UTC start time, to the minute, and its corpus's name.

    Example: default_run_name("data/sample.csv", 2026-12-01 02:30 UTC) -> "20261201-0230-sample"
    """
    corpus = re.sub(r"[^\w.-]+", "-", Path(corpus_path).stem).strip("-.") or "corpus"
    return f"{now:%Y%m%d-%H%M}-{corpus}"


NAME_BYTES = 255  # the longest name of a folder that Linux, macOS and Windows all allow, in bytes of UTF-8


def check_run_name(home, name):
    """Raise InputError unless name can name a new run of home: a folder name of its own, not empty,
    without a slash, not starting with a dot (a folder being written) or ~, at most NAME_BYTES long, and no
    run's name already."""
    if not name.strip() or "/" in name or "\\" in name or name.startswith((".", "~")):
        raise InputError(f"--name {shortened(name)!r} cannot name a run's folder: give a name that is not empty, has "
                         f"no / or \\ and does not start with a dot or ~, such as --name shakespeare")
    if len(name.encode("utf-8")) > NAME_BYTES:
        raise InputError(f"--name {shortened(name)!r} is longer than a folder's name may be ({NAME_BYTES} bytes): give "
                         f"a shorter name, such as --name shakespeare")
    if (Path(home) / "runs" / name).exists():
        raise name_taken(home, name)


def name_taken(home, name):
    """The InputError for a --name that a run of home already has."""
    return InputError(f"there is already a run named {name!r} in {home}/runs/; choose another --name, or remove "
                      f"that run first: {removal(home, name)}")


def new_run_folder(home, name, given):
    """A new, empty folder home/runs/<name>/. A name the person gave (given) is that folder or InputError;
    a default name that is taken becomes name-2, name-3, ..."""
    if given:
        check_run_name(home, name)
    for attempt in range(1, 1000):
        folder = Path(home) / "runs" / (name if attempt == 1 else f"{name}-{attempt}")
        try:
            folder.mkdir(parents=True)
            return folder
        except FileExistsError:
            if given:  # made since check_run_name looked
                raise name_taken(home, name) from None
        except OSError as err:
            raise InputError(f"cannot write checkpoints to {folder.parent}/ ({err.strerror}); choose a folder "
                             f"with --checkpoint") from None
    raise InputError(f"cannot make a run folder in {home}/runs/")


# the files a --checkpoint value may name for the folder that holds them: a run's model, or a GPT-2's
MODEL_FILE_NAMES = ("model.json", *checkpoint.MODEL_FILES, *gpt2.FILES)


def find(value, home):
    """The folder a --checkpoint (or --resume) value names: where it is written as a path, a folder as it is, or the
    folder of a file in it (model.npz); else a run of home/runs/ by its name, or by the start of its name where it
    starts one run's name only (run_named). InputError where it names none, or starts the names of several runs."""
    if not value.strip():
        raise InputError("--checkpoint '' names nothing: give a run's name (python talk.py --list lists them) or a "
                         "folder, or leave --checkpoint out for the latest finished run")
    if written_as_path(value):
        return folder_at(value)
    here = f"; the folder {value}/ here is read where it is written as a path: --checkpoint ./{value}" if \
        is_there(Path(value), Path.exists) else ""
    return run_named(value, home, here)


def folder_at(value):
    """The folder that the path value names (~ is the home folder), or that holds the model's file it names."""
    path = Path(value).expanduser()
    if is_there(path, Path.is_file):
        if path.name not in MODEL_FILE_NAMES:
            raise InputError(f"{value} is a file, not a run's folder: give the folder that holds model.json, or a "
                             f"run's name (python talk.py --list lists them)")
        return path.parent
    if is_there(path, Path.is_dir):
        return path
    raise InputError(f"there is no folder {shortened(value, 200)}/: give a run's folder that exists, or a run's name "
                     f"(python talk.py --list lists them)")


def is_there(path, kind):
    """kind(path) (Path.is_file, Path.is_dir), False where the system cannot say (a name too long for it)."""
    try:
        return kind(path)
    except OSError:
        return False


def run_named(name, home, also=""):
    """The folder of the run of home named name, or whose name name starts where it starts one run's name only; only
    runs are looked at, never the current folder. InputError where it names no run (also: more to say then), or
    starts several."""
    names = [run.name for run in run_folders(home)]
    starting = [run for run in names if run.startswith(name)]
    if name in names or len(starting) == 1:
        return Path(home) / "runs" / (name if name in names else starting[0])
    if starting:
        raise InputError(f"{name!r} starts the names of {len(starting)} runs in {home}/runs/: {', '.join(starting)}; "
                         f"give more of the name")
    raise InputError(f"no run in {home}/runs/ is named {shortened(name)!r} or starts so{also}; python talk.py --list "
                     f"lists the runs, python train.py trains one")


def home_of(run_folder):
    """The home folder a run folder belongs to (home/runs/<run>/), or None for one moved out of it."""
    run_folder = Path(run_folder)
    return run_folder.parent.parent if run_folder.parent.name == "runs" else None


def listing_home(model_folder, config_home):
    """The home whose runs are listed beside a model (talk.py's /models, the lab's runs): the model's own
    (home/runs/<run>/), or config.py's (config_home) for a GPT-2 folder or a run moved out of its home."""
    return home_of(model_folder) or Path(config_home)


# --- what the runs hold -----------------------------------------------------------------------

@dataclass
class RunSummary:
    """One line of `python talk.py --list`: a run of a home folder."""
    folder: Path
    saved: datetime  # when it last wrote a file (UTC)
    corpus: str  # the corpus file's name
    step: int  # the steps it has taken
    total_steps: int  # the steps it was to take; None where it saved no resume state, or a damaged resume.json
    done: bool  # it took its last step, or stopped improving; a run still going, or interrupted, is not done
    has_model: bool  # it saved a model (at its first validation)
    best_bpc: float  # bits per character of its best model on the held-out text; nan before its first validation
    damaged: str  # what is wrong with its model's files, "" where nothing is
    resume_damaged: str  # what is wrong with its resume state's files, "" where nothing is (or there is none)
    training: bool  # a training holds its lock now

    def state(self):
        """What the run is now, as --list, talk's /models and the lab say it: training, DAMAGED (its model),
        no model yet, finished or interrupted, and whether its resume state is damaged."""
        if self.damaged:
            return "DAMAGED"
        if self.training:
            return "training"
        if not self.has_model and self.total_steps is None:
            return "no model yet"  # killed before its first save
        return ("finished" if self.done else "interrupted") + (", resume DAMAGED" if self.resume_damaged else "")


def summarize(folder):
    """The RunSummary of a run folder: its lock tried (and where no training holds it, the temporary files of saves
    that a kill stopped deleted), its model's and its resume state's files checked (checkpoint.check_files,
    checkpoint.check_resume_files); what it lists is read only from files that pass. A folder that cannot be read
    is listed as damaged, so that it never keeps the others from being listed."""
    try:
        return summary_of(Path(folder))
    except OSError as err:  # another user's folder, say
        saved = 0
        with contextlib.suppress(OSError):
            saved = Path(folder).lstat().st_mtime
        return RunSummary(Path(folder), datetime.fromtimestamp(saved, timezone.utc), "?", 0, None, False, False,
                          math.nan, f"{folder}/ cannot be read: {os_reason(err)}", "", False)


def summary_of(folder):
    training = tidied_unless_training(folder)
    record = checkpoint.current_record(folder, "model.json", checkpoint.MODEL_FILES)
    meta, progress = read_or_empty(record), valid_progress(folder)
    saved = max([path.stat().st_mtime for path in folder.iterdir() if path.is_file()] or [folder.stat().st_mtime])
    damaged = ""
    if record.exists():
        try:
            checkpoint.check_files(folder)
        except InputError as err:
            damaged = str(err)
    resume_damaged = ""
    with contextlib.suppress(FileNotFoundError):  # no resume state yet: nothing to be damaged
        try:
            checkpoint.check_resume_files(folder)
        except InputError as err:
            resume_damaged = str(err)
    corpus, best_bpc = "?", math.nan
    with contextlib.suppress(KeyError, TypeError, AttributeError):
        corpus = Path(meta["corpus"]["path"] if meta else progress["settings"]["corpus_path"]).name
    with contextlib.suppress(KeyError, TypeError, ValueError):
        best_bpc = {entry["step"]: entry for entry in meta["history"]}[meta["best_step"]]["val_bpc"]
    steps = meta.get("steps")
    step = progress["step"] if progress else steps if type(steps) is int and steps >= 0 else 0
    done = bool(progress) and progress["done"]  # a run that saved no resume state yet is not done
    return RunSummary(folder, datetime.fromtimestamp(saved, timezone.utc), corpus, step, progress.get("total_steps"),
                      done, record.exists(), best_bpc if checkpoint.is_finite_number(best_bpc) else math.nan, damaged,
                      resume_damaged, training)


def read_or_empty(path):
    """The dict in a JSON file of a run, or {} where it is missing or broken (the listing still lists the run)."""
    with contextlib.suppress(InputError, OSError):
        found = checkpoint.read_record(path)
        return found if isinstance(found, dict) else {}
    return {}


def valid_progress(folder):
    """What a run's resume.json says of where training stands, where each of its fields is whole
    (checkpoint.check_progress); {} where it has none, or one is not."""
    record = checkpoint.current_record(folder, "resume.json", checkpoint.RESUME_FILES)
    progress = read_or_empty(record)
    try:
        checkpoint.check_progress(progress, record)
    except InputError:
        return {}
    return progress


def summarize_runs(home):
    """A RunSummary for each run of home, the one saved last first."""
    return sorted(map(summarize, run_folders(home)), key=lambda run: run.saved, reverse=True)


def default_run(home):
    """The run talk.py and generate.py read without --checkpoint: the latest finished run of home, else the
    latest run with a whole model (a run still going, or interrupted), else the model in home itself (a
    checkpoint folder of its own). InputError where there is none."""
    chosen = latest_whole(summarize_runs(home))
    if chosen is not None:
        return chosen
    if (Path(home) / "model.json").exists():
        return Path(home)
    raise InputError(f"no model in {home}/ yet: train one with `python train.py`")


def latest_whole(runs):
    """Of RunSummaries, the last saved first: the folder of the latest finished run with a whole model, else of the
    latest run with a whole model, else None."""
    whole = [run for run in runs if run.has_model and not run.damaged]
    chosen = [run for run in whole if run.done] or whole
    return chosen[0].folder if chosen else None


def runs_table(home):
    """The runs of home as `talk.py --list` and /models print them, a line each; InputError where there are none."""
    runs = summarize_runs(home)
    if not runs:
        raise InputError(f"there are no runs in {home}/runs/ yet: train one with `python train.py`, "
                         f"named with --name NAME if you like")
    default = latest_whole(runs)  # the run default_run gives, from the summaries made once
    finished = default if default is not None and next(run for run in runs if run.folder == default).done else None
    rows = [("", "name", "saved (UTC)", "corpus", "steps", "state", "best bits/char")]
    rows += [("*" if run.folder == finished else "", run.folder.name, f"{run.saved:%Y-%m-%d %H:%M}", run.corpus,
              f"{run.step:,}" + (f"/{run.total_steps:,}" if run.total_steps else ""), run.state(),
              "not yet" if math.isnan(run.best_bpc) else f"{run.best_bpc:.3f}") for run in runs]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    if default is not None and finished is None:
        lines += [f"no run is finished yet: without --checkpoint, talk.py reads {default.name}, the latest run with a "
                  f"whole model"]
    lines += [f"{run.folder.name} is damaged: {run.damaged}" for run in runs if run.damaged]
    lines += [f"{run.folder.name} cannot resume: {run.resume_damaged}" for run in runs if run.resume_damaged]
    empty = [run.folder for run in runs if run.state() == "no model yet"]
    lines += [f"{folder.name} has no model yet: if no training is writing to it, {removal(home, folder.name)} frees "
              f"its name" if not foreign_files(folder) else f"{folder.name} is not a run's folder: it holds what no "
              f"training writes, and --remove leaves it" for folder in empty]
    lines += [f"{removal(home, 'NAME')} removes a run, its folder and every file in it"]
    return "\n".join([f"runs in {home}/runs/, the last saved first (* is what talk.py reads without --checkpoint: "
                      f"the latest finished run)", *lines])


RUN_FILES = {"model.npz", "model.json", "model.tok.json", "resume.npz", "resume.json", "losses.csv", "losses.png",
             ".lock"}  # what a training writes into its run's folder, beside the temporary names of its saves


def remove(home, name, confirmed):
    """Remove the run of home named name (or the start of its name): its folder and every file in it, where the
    folder is a run's (check_is_run); a run that is a link to a folder elsewhere loses its link, and the folder it
    points to stays. Asks first, naming the folder's whole path, unless confirmed (--yes); refuses a run a training
    is writing to, and anything but a run's name: a run is looked for among the runs alone (run_named)."""
    if not name.strip() or written_as_path(name):
        raise InputError(f"--remove takes a run's name, as python train.py --list shows it, not {shortened(name)!r}")
    folder = run_named(name, home)
    busy = "stop its training first (Ctrl-C where it runs: it saves what a resume needs), then remove the run"
    if folder.is_symlink():
        said = f"the link {folder.absolute()} to {os.readlink(folder)}/ (the folder it points to is kept)"
        with locked(folder, busy):
            if asked_to_remove(said, confirmed):
                folder.unlink()
                print(f"removed {said}")
        return
    check_is_run(folder, home)
    run = summarize(folder)
    files = [path for path in folder.rglob("*") if path.is_file() and path.name != ".lock"]
    said = (f"the run {folder.name}, the folder {folder.absolute()}/ ({run.state()}, {plural(run.step, 'step')}; "
            f"{plural(len(files), 'file')}, {sum(path.stat().st_size for path in files) / 2 ** 20:.1f} MB)")
    with locked(folder, busy):  # refuses, in one line, a run that a training is writing to
        if asked_to_remove(said, confirmed):
            shutil.rmtree(folder)
            print(f"removed {said}")


def asked_to_remove(said, confirmed):
    """Whether to remove what said names: --yes (confirmed), or the person's y to the question, on a terminal;
    InputError where there is none to ask on."""
    if confirmed:
        return True
    if not sys.stdin.isatty():
        raise InputError(f"--remove would remove {said}; add --yes to remove it without being asked")
    if input(f"remove {said}? [y/N] ").strip().lower() in ("y", "yes"):
        return True
    print("nothing removed")
    return False


def check_is_run(folder, home):
    """Raise InputError unless folder is a run's (foreign_files), so that --remove never deletes a folder that
    someone put into runs/."""
    others = foreign_files(folder)
    if others:
        raise InputError(f"{folder.absolute()}/ is in {home}/runs/ but is not a run's folder: it holds no model.json "
                         f"or resume.json, and holds what no training writes ({', '.join(map(shortened, others[:3]))});"
                         f" nothing was removed: delete it yourself if it is not wanted")


def foreign_files(folder):
    """What makes folder not a run's, none where it is one: a run's folder holds a run's record (model.json or
    resume.json, or one under its temporary name), or, a run killed before its first save, nothing but what a
    training writes."""
    names = {path.name for path in Path(folder).iterdir()}
    records = {name for record in ("model.json", "resume.json") for name in (record, temporary_name(record).name)}
    if names & records:
        return []
    return sorted(name for name in names if name not in RUN_FILES and not (name.startswith(".") and
                                                                          name.endswith(".tmp")))


def restarts(run):
    """Whether a resume of the run (a RunSummary) takes its steps again from the first: it saved a whole model but
    no state to resume from (the disk was full at its first save, or a kill came between the two saves)."""
    return run.total_steps is None and run.has_model and not run.damaged and not run.resume_damaged


def run_to_resume(home, name=None, extending=False):
    """The run folder `train.py --resume [NAME]` continues: the run named (or started) name, else the latest
    interrupted run of home. InputError where there is none, where it saved nothing to resume from, or where
    it is finished and not extending (a --max_steps, --epochs or --patience of its own given). A run that saved
    its model but no state to resume from (restarts) is taken up from its first step."""
    if name is None:
        interrupted = [run for run in summarize_runs(home)
                       if not run.done and (run.total_steps is not None or restarts(run)) and not run.training]
        if not interrupted:
            raise InputError(f"no interrupted run in {home}/runs/ to resume (python talk.py --list lists the runs); "
                             f"start a new run without --resume")
        return interrupted[0].folder
    folder = find(name, home)
    run = summarize(folder)
    if run.training:
        raise InputError(f"the run {folder.name} is being trained now: wait for its training to finish (Ctrl-C "
                         f"stops it, and then it resumes), or start a new run without --resume")
    if run.resume_damaged:
        raise InputError(run.resume_damaged)
    if run.total_steps is None and not restarts(run):
        raise InputError(f"nothing to resume in {folder}/: it saved no state to resume from, and no whole model; "
                         f"start a new run without --resume, or {removal(home, folder.name)}")
    if run.done and not extending:
        raise InputError(f"the run {folder.name} is finished; its best model is in {folder}/. To train it further, "
                         f"give it more steps (--max_steps N or --epochs N beyond its {run.step:,}, and --patience 0 "
                         f"where patience stopped it); or start a new run without --resume")
    return folder


EXTENDING = ("max_steps", "epochs", "patience")  # settings a resumed run may change: how long it goes on


def resume_settings(s, argv, name, parser):
    """(the settings of the run being resumed, its folder): the run `train.py --resume [NAME]` continues,
    with the settings it was started with; a setting given on the command line (argv) must agree, but for
    EXTENDING's, which make the run longer (or shorter). parser: the script's SettingsParser, which checks them."""
    typed = given(argv) - {"checkpoint", "resume"}
    changed = {setting for setting in typed if setting in EXTENDING}
    folder = run_to_resume(Path(s.checkpoint), name or None, extending=bool(changed))
    saved = read_back(started_with(folder))
    for setting in typed - changed:
        if setting in saved and saved[setting] != getattr(s, setting):
            raise InputError(f"--resume continues with the settings of the interrupted run ({setting} = "
                             f"{saved[setting]!r}); drop --{setting} (only {', '.join(EXTENDING)} may change)")
    resumed = parser.settings(replaced(s, {**saved, **{k: getattr(s, k) for k in changed}}))
    resumed.checkpoint = s.checkpoint
    return resumed, folder


def started_with(folder):
    """The settings the run in folder was started with, as its resume state records them, or, where it saved none
    (restarts), as its model.json does."""
    record = checkpoint.current_record(folder, "resume.json", checkpoint.RESUME_FILES)
    if not record.is_file():
        record = checkpoint.current_record(folder, "model.json", checkpoint.MODEL_FILES)
    saved = checkpoint.read_record(record)
    if not isinstance(saved, dict) or not isinstance(saved.get("settings"), dict):
        raise checkpoint.damaged(record, 'its "settings" are not the settings of a run')
    return saved["settings"]


LOCK_WAIT = 0.5  # seconds a training waits for a run's lock: a listing that tries it (is_training) holds it an instant


@contextlib.contextmanager
def locked(folder, busy="wait for it to finish, or start a new run"):
    """Hold folder/.lock for the with-block, so that two trainings never write into one run at once; the
    system drops the lock when its process ends, however it ends. InputError if it is held (busy: what to do
    then), or where it cannot be written."""
    lock = FileLock(Path(folder) / ".lock")
    try:
        lock.acquire(timeout=LOCK_WAIT)
    except Timeout:
        raise InputError(f"a training is writing to {folder}/; {busy}") from None
    except OSError as err:  # a folder of a read-only disk, or another user's
        raise InputError(f"cannot write the run's lock, {folder}/.lock: {os_reason(err)}; nothing in {folder}/ was "
                         f"changed: {os_remedy(err)}, and try again") from None
    try:
        yield
    finally:
        lock.release()


@contextlib.contextmanager
def lock_if_free(folder):
    """with lock_if_free(folder) as free: free is True where the run folder's lock was free, and it is held for the
    block; False where a training holds it; None where there is no lock to try: the folder was never trained here,
    or its .lock cannot be opened (another user's, a read-only disk)."""
    path, free = Path(folder) / ".lock", None
    lock = FileLock(path)
    if path.exists():
        try:
            lock.acquire(timeout=0)
            free = True
        except Timeout:
            free = False
        except OSError:
            pass
    try:
        yield free
    finally:
        if free:
            lock.release()


def is_training(folder):
    """Whether a training holds the run folder's lock now: the lock is tried, and let go at once where it is free."""
    with lock_if_free(folder) as free:
        return free is False


def tidied_unless_training(folder):
    """Whether a training holds the run folder's lock now; where none does, the temporary files of the saves that a
    kill stopped are deleted meanwhile, under the lock (checkpoint.remove_stale_temporaries)."""
    with lock_if_free(folder) as free:
        if free:
            checkpoint.remove_stale_temporaries(folder)
        return free is False
