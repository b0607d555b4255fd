"""Run folders: where each training writes, and how runs are named, found, listed, removed, resumed and locked.

Training's home folder (checkpoints/) holds a folder for each run, runs/<its name>/: the run's best
model (checkpoint.py's three files), its resume state and its losses. A run is named by
`train.py --name`, or by its UTC start time and its corpus (20261201-0230-sample); talk.py,
generate.py and `train.py --resume` find it by that name, or by the start of it. Without a name,
talk.py and generate.py read the latest finished run (default_run); nothing is copied anywhere, so
no run ever replaces another's model.
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
from engineering.errors import InputError
from engineering.settings import given, read_back, replaced
from engineering.wording import plural, removal, talk_command


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


def check_run_name(home, name):
    """Raise InputError unless name can name a new run of home: a folder name of its own, not empty,
    without a slash, not starting with a dot (a folder being written), and no run's name already."""
    if not name.strip() or "/" in name or "\\" in name or name.startswith("."):
        raise InputError(f"--name {name!r} cannot name a run's folder: give a name that is not empty, has no / or \\ "
                         f"and does not start with a dot, such as --name shakespeare")
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
    """The folder a --checkpoint value names: a folder as it is, the folder of a file in it (model.npz);
    else a run of home/runs/ by its name, or by the start of its name where it starts one run's name
    only. InputError where it names none, or starts the names of several runs."""
    path = Path(value)
    if not value.strip():
        raise InputError("--checkpoint '' names nothing: give a run's name (python talk.py --list lists them) or a "
                         "folder, or leave --checkpoint out for the latest finished run")
    if path.is_file():
        if path.name not in MODEL_FILE_NAMES:
            raise InputError(f"{value} is a file, not a run's folder: give the folder that holds model.json, or a "
                             f"run's name (python talk.py --list lists them)")
        return path.parent
    if path.is_dir():
        return path
    if "/" in value or os.sep in value:
        raise InputError(f"there is no folder {value}/: give a run's folder that exists, or a run's name (python "
                         f"talk.py --list lists them)")
    names = [run.name for run in run_folders(home)]
    starting = [name for name in names if name.startswith(value)]
    if value in names or len(starting) == 1:
        return Path(home) / "runs" / (value if value in names else starting[0])
    if starting:
        raise InputError(f"{value!r} starts the names of {len(starting)} runs in {home}/runs/: {', '.join(starting)}; "
                         f"give more of the name")
    raise InputError(f"no folder {value}/, and no run in {home}/runs/ is named {value!r} or starts so; "
                     f"python talk.py --list lists the runs, python train.py trains one")


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
    total_steps: int  # the steps it was to take; None where it never saved a resume state
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
    """The RunSummary of a run folder: its lock tried, its model's and its resume state's files checked
    (checkpoint.check_files, checkpoint.check_resume_files)."""
    record = checkpoint.current_record(folder, "model.json", checkpoint.MODEL_FILES)
    meta = read_or_empty(record)
    progress = read_or_empty(checkpoint.current_record(folder, "resume.json", checkpoint.RESUME_FILES))
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
    step, total = progress.get("step", meta.get("steps", 0)), progress.get("total_steps")
    done = bool(progress) and progress.get("done", step == total)  # a run that saved no resume state yet is not done
    return RunSummary(folder, datetime.fromtimestamp(saved, timezone.utc), corpus, step, total, done, record.exists(),
                      best_bpc, damaged, resume_damaged, is_training(folder))


def read_or_empty(path):
    """The dict in a JSON file of a run, or {} where it is missing or broken (the listing still lists the run)."""
    with contextlib.suppress(InputError, OSError):
        found = checkpoint.read_record(path)
        return found if isinstance(found, dict) else {}
    return {}


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
    rows = [("", "name", "saved (UTC)", "corpus", "steps", "state", "best bits/char")]
    rows += [("*" if run.folder == default else "", run.folder.name, f"{run.saved:%Y-%m-%d %H:%M}", run.corpus,
              f"{run.step:,}" + (f"/{run.total_steps:,}" if run.total_steps else ""), run.state(),
              "not yet" if math.isnan(run.best_bpc) else f"{run.best_bpc:.3f}") for run in runs]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines += [f"{run.folder.name} is damaged: {run.damaged}" for run in runs if run.damaged]
    lines += [f"{run.folder.name} cannot resume: {run.resume_damaged}" for run in runs if run.resume_damaged]
    lines += [f"{run.folder.name} has no model yet: if no training is writing to it, {removal(home, run.folder.name)} "
              f"frees its name" for run in runs if run.state() == "no model yet"]
    lines += [f"{removal(home, 'NAME')} removes a run, its folder and every file in it"]
    return "\n".join([f"runs in {home}/runs/, the last saved first (* is what talk.py reads without --checkpoint: "
                      f"the latest finished run)", *lines])


def remove(home, name, confirmed):
    """Remove the run of home named name (or the start of its name): its folder and every file in it. Asks first,
    unless confirmed (--yes); refuses a run a training is writing to, and anything but a run's name."""
    if "/" in name or os.sep in name or name in ("", ".", ".."):
        raise InputError(f"--remove takes a run's name, as python train.py --list shows it, not {name!r}")
    folder = find(name, home)
    run = summarize(folder)
    files = [path for path in folder.rglob("*") if path.is_file() and path.name != ".lock"]
    said = (f"the run {folder.name} in {home}/runs/ ({run.state()}, {plural(run.step, 'step')}; "
            f"{plural(len(files), 'file')}, {sum(path.stat().st_size for path in files) / 2 ** 20:.1f} MB)")
    with locked(folder):  # refuses, in one line, a run that a training is writing to
        if not confirmed:
            if not sys.stdin.isatty():
                raise InputError(f"--remove would remove {said}; add --yes to remove it without being asked")
            if input(f"remove {said}? [y/N] ").strip().lower() not in ("y", "yes"):
                print("nothing removed")
                return
        shutil.rmtree(folder)
    print(f"removed {said}")


def run_to_resume(home, name=None, extending=False):
    """The run folder `train.py --resume [NAME]` continues: the run named (or started) name, else the latest
    interrupted run of home. InputError where there is none, where it saved no state to resume from, or where
    it is finished and not extending (a --max_steps, --epochs or --patience of its own given)."""
    if name is None:
        interrupted = [run for run in summarize_runs(home)
                       if not run.done and run.total_steps is not None and not run.training]
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
    if run.total_steps is None and run.has_model and not run.damaged:
        raise InputError(f"the run {folder.name} saved its model but no state to resume from (it was stopped "
                         f"between the two), so it cannot go on; its model is whole: {talk_command(folder)}. "
                         f"Start a new run without --resume, or {removal(home, folder.name)}")
    if run.total_steps is None:
        raise InputError(f"nothing to resume in {folder}/: it saved no state to resume from; start a new run "
                         f"without --resume, or {removal(home, folder.name)}")
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
    saved = read_back(checkpoint.read_progress(folder)["settings"])
    for setting in typed - changed:
        if setting in saved and saved[setting] != getattr(s, setting):
            raise InputError(f"--resume continues with the settings of the interrupted run ({setting} = "
                             f"{saved[setting]!r}); drop --{setting} (only {', '.join(EXTENDING)} may change)")
    resumed = parser.settings(replaced(s, {**saved, **{k: getattr(s, k) for k in changed}}))
    resumed.checkpoint = s.checkpoint
    return resumed, folder


LOCK_WAIT = 0.5  # seconds a training waits for a run's lock: a listing that tries it (is_training) holds it an instant


@contextlib.contextmanager
def locked(folder):
    """Hold folder/.lock for the with-block, so that two trainings never write into one run at once; the
    system drops the lock when its process ends, however it ends. InputError if it is held."""
    lock = FileLock(Path(folder) / ".lock")
    try:
        lock.acquire(timeout=LOCK_WAIT)
    except Timeout:
        raise InputError(f"another training is writing to {folder}/; wait for it to finish, or start a new run") \
            from None
    try:
        yield
    finally:
        lock.release()


def is_training(folder):
    """Whether a training holds the run folder's lock now: the lock is tried, and let go at once where it is free.
    A folder with no .lock was never trained here; one that cannot be opened (another user's) is not ours to say."""
    path = Path(folder) / ".lock"
    if not path.exists():
        return False
    lock = FileLock(path)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return True
    except OSError:
        return False
    lock.release()
    return False
