"""Saving and loading a trained model: weights, description, tokenizer, and the state to resume from.

A checkpoint folder holds
    model.npz        the weights, one array per parameter, in the canonical order
    model.json       the model's shape, the settings it was trained with, the corpus (its sha256, and
                     whether it was rows of a CSV or one text: where a reply ends),
                     the loss history, library versions, a format version, and the sha256 of
                     model.npz and model.tok.json so a mismatched set of files is caught
    model.tok.json   the tokenizer
    resume.npz       the latest weights and AdamW's moments, for `python train.py --resume`
    resume.json      where training stood: step, settings, history

Training's home folder (checkpoints/) holds a folder for each run, runs/<its name>/, with all of
that run's files, and on top the latest good model, a copy of the best model of the run that
saved last: that is what talk.py reads. A run is named by `train.py --name`, or by its UTC start
time and its corpus (20261201-0230-tinyshakespeare); talk.py and generate.py find it by that name.
A model on top that no run folder holds (one trained before runs/ existed) is copied into runs/
before anything replaces it, so every model stays until its owner deletes it.

Every file is written to a temporary name and renamed once all the files of a save are written,
so a failed or interrupted write leaves the old files whole. A kill between two renames leaves a
mix, which loading recognises by the sha256 in model.json; a run's own folder is written before
the top, so one of the two is always whole, and loading a home folder whose top is not whole
takes the newest whole model in its runs/. Loading checks everything and raises InputError with
what is wrong and what to do.
"""

import contextlib
import hashlib
import io
import json
import math
import os
import re
import shutil
import zipfile
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from errors import InputError
from files import publish_staged, write_atomically, write_staged
from tokenizer import BPETokenizer
from transformer import ModelConfig, pack, param_shapes

FORMAT = "numpy-gpt-checkpoint"
VERSION = 1
RETRAIN = "train a model with `python train.py` first"


@dataclass
class Checkpoint:
    params: dict  # name -> array, packed, in the canonical order
    cfg: ModelConfig
    tokenizer: BPETokenizer
    meta: dict  # the contents of model.json
    folder: Path  # the folder it was read from: the one asked for, or the run it fell back to


def sha256_of(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def npz_bytes(arrays):
    """An .npz archive of named arrays, in order, with fixed timestamps: same arrays, same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)
            archive.writestr(zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0)), member.getvalue())
    return buffer.getvalue()


def json_bytes(obj):
    return (json.dumps(obj, indent=1) + "\n").encode("utf-8")


def read_npz(path):
    """Named arrays of an .npz file, in stored order, never unpickling; InputError if unreadable."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as err:
        raise InputError(f"{path} is not a readable weights file ({err}); {RETRAIN}") from None


def read_json(path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"{path} is not valid JSON ({err}); {RETRAIN}") from None


def save_model(folder, params, cfg, tokenizer, meta):
    """Write model.npz, model.tok.json and model.json; the renames happen only once all are written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    weights, tokenizer_bytes = npz_bytes(params), tokenizer.to_bytes()
    write_staged(folder / "model.tok.json", tokenizer_bytes)
    write_staged(folder / "model.npz", weights)
    description = {
        "format": FORMAT, "version": VERSION,
        "model": {f.name: getattr(cfg, f.name) for f in fields(cfg)},
        "dtype": str(next(iter(params.values())).dtype),
        "weights_sha256": hashlib.sha256(weights).hexdigest(),
        "tokenizer_sha256": hashlib.sha256(tokenizer_bytes).hexdigest(),
        **meta,
    }
    write_staged(folder / "model.json", json_bytes(description))
    publish_staged([folder / "model.npz", folder / "model.tok.json", folder / "model.json"])


def check_weights(arrays, cfg, path):
    """Raise InputError unless the arrays are exactly this model's parameters, finite, in order."""
    expected = param_shapes(cfg)
    if list(arrays) != list(expected):
        missing = [name for name in expected if name not in arrays]
        raise InputError(f"{path} does not hold this model's parameters"
                         f"{f' (missing {missing[:3]})' if missing else ' in the canonical order'}; {RETRAIN}")
    for name, shape in expected.items():
        array = arrays[name]
        if array.shape != shape:
            raise InputError(f"{path}: {name} has shape {array.shape}, model.json says {shape}; {RETRAIN}")
        if array.dtype not in (np.float32, np.float64) or not np.all(np.isfinite(array)):
            raise InputError(f"{path}: {name} is not finite float32/float64 numbers; {RETRAIN}")


def corpus_kind(meta):
    """What the model in model.json (meta) learned from: "rows" of a CSV or one running "text" (a .txt).
    A model saved before model.json recorded it: "text" where its corpus was a .txt, as train.py tells
    the two apart, else "rows"."""
    corpus = meta.get("corpus") if isinstance(meta.get("corpus"), dict) else {}
    if corpus.get("kind") in ("rows", "text"):
        return corpus["kind"]
    return "text" if str(corpus.get("path", "")).lower().endswith(".txt") else "rows"


def characters_said(count, kind):
    """A corpus's size in characters, as train.py and talk.py both say it.

    Example: characters_said(178405, "rows") -> "178,405 characters with each row's newline"
    """
    return f"{count:,} characters" + (" with each row's newline" if kind == "rows" else "")


def load(folder):
    """The checkpoint in folder, every file checked against the others; where folder is a home whose
    top is missing or not whole, the newest whole model in its runs/."""
    folder = Path(folder)
    try:
        return load_files(folder)
    except InputError:
        for run in newest_first(folder, "model.json"):
            with contextlib.suppress(InputError):
                return load_files(run)
        raise


def newest_first(home, name):
    """The run folders in home/runs/ that hold the file `name`, the most recently written first."""
    runs = Path(home) / "runs"
    found = runs.glob(f"*/{name}") if runs.is_dir() else []
    return [path.parent for path in sorted(found, key=lambda path: path.stat().st_mtime, reverse=True)]


def load_files(folder):
    """The checkpoint whose three files are in folder, every file checked against the others."""
    for name in ("model.json", "model.npz", "model.tok.json"):
        if not (folder / name).is_file():
            raise InputError(f"no checkpoint in {folder}/ ({name} is missing); {RETRAIN}")
    meta = read_json(folder / "model.json")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise InputError(f"{folder}/model.json is not a numpy-gpt checkpoint; {RETRAIN}")
    if meta.get("version") != VERSION:
        raise InputError(f"{folder}/model.json has format version {meta.get('version')}, "
                         f"this code reads version {VERSION}; {RETRAIN}")
    try:
        cfg = ModelConfig(**meta["model"])
    except (KeyError, TypeError, ValueError) as err:
        raise InputError(f"{folder}/model.json describes no valid model ({err}); {RETRAIN}") from None
    for name, key in (("model.npz", "weights_sha256"), ("model.tok.json", "tokenizer_sha256")):
        if sha256_of(folder / name) != meta.get(key):
            raise InputError(f"{folder}/{name} is not the file model.json was saved with "
                             f"(a partial copy, or files from two runs mixed); {RETRAIN}")
    arrays = read_npz(folder / "model.npz")
    check_weights(arrays, cfg, folder / "model.npz")
    tokenizer = BPETokenizer.load(folder / "model.tok.json")
    if tokenizer.vocab_size != cfg.vocab_size:
        raise InputError(f"the tokenizer in {folder} has {tokenizer.vocab_size} tokens, the model "
                         f"{cfg.vocab_size}; {RETRAIN}")
    return Checkpoint(pack(arrays), cfg, tokenizer, meta, folder)


# --- the home folder and its runs -------------------------------------------------------------

MODEL_FILES = ("model.npz", "model.tok.json", "model.json")


def check_writable(folder):
    """Fail before training, not after, when the folder cannot be written."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomically(folder / ".write-test", b"")
        (folder / ".write-test").unlink()
    except OSError as err:
        raise InputError(f"cannot write checkpoints to {folder}/ ({err.strerror}); choose a folder with "
                         f"--checkpoint") from None


def run_folders(home):
    """The run folders in home/runs/, by name; a folder being written (its name starts with a dot) is none."""
    runs = Path(home) / "runs"
    return sorted(path for path in runs.iterdir() if path.is_dir() and not path.name.startswith(".")) \
        if runs.is_dir() else []


def taken_run_names(home):
    """The names no new run of home may take: its runs' and that of the run whose model is on top (its
    folder may be gone, or the model copied from elsewhere): keep_earlier_model tells models by run name."""
    names = {run.name for run in run_folders(home)}
    with contextlib.suppress(InputError, OSError, AttributeError):
        names.add(read_json(Path(home) / "model.json").get("run"))
    return names


def default_run_name(corpus_path, now):
    """A run's name where the person gave none: its UTC start time, to the minute, and its corpus's name.

    Example: default_run_name("data/tinyshakespeare.txt", 2026-12-01 02:30 UTC) -> "20261201-0230-tinyshakespeare"
    """
    corpus = re.sub(r"[^\w.-]+", "-", Path(corpus_path).stem).strip("-.") or "corpus"
    return f"{now:%Y%m%d-%H%M}-{corpus}"


def check_run_name(home, name):
    """Raise InputError unless name can name a new run of home: a folder name of its own, not empty,
    without a slash, not starting with a dot (a folder being written), and no run's name already."""
    if not name.strip() or "/" in name or "\\" in name or name.startswith("."):
        raise InputError(f"--name {name!r} cannot name a run's folder: give a name that is not empty, has no / or \\ "
                         f"and does not start with a dot, such as --name shakespeare")
    if name in taken_run_names(home):
        raise InputError(f"there is already a run named {name!r} in {home}/; choose another --name "
                         f"(python talk.py --list lists the runs)")


def new_run_folder(home, name, given):
    """A new, empty folder home/runs/<name>/ for a run. A name the person gave (given) is that folder
    or InputError; a default name that is taken becomes name-2, name-3, ..."""
    if given:
        check_run_name(home, name)
    taken = taken_run_names(home)
    for attempt in range(1, 1000):
        candidate = name if attempt == 1 else f"{name}-{attempt}"
        if candidate in taken:
            continue
        try:
            folder = Path(home) / "runs" / candidate
            folder.mkdir(parents=True)
            return folder
        except FileExistsError:
            if given:  # made since check_run_name looked
                raise InputError(f"there is already a run named {name!r} in {home}/; choose another --name") from None
    raise InputError(f"cannot make a run folder in {home}/runs/")


def find(value, home):
    """The folder a --checkpoint value names: a folder, as it is; else a run of home/runs/ by its name,
    or by the start of its name where it starts one run's name only. InputError where it names none,
    or starts the names of several runs."""
    folder = Path(value)
    if folder.is_dir() or "/" in value or os.sep in value:
        return folder
    names = [run.name for run in run_folders(home)]
    starting = [name for name in names if name.startswith(value)]
    if value in names or len(starting) == 1:
        return Path(home) / "runs" / (value if value in names else starting[0])
    if starting:
        raise InputError(f"{value!r} starts the names of {len(starting)} runs in {home}/runs/: {', '.join(starting)}; "
                         f"give more of the name")
    raise InputError(f"no folder {value}/, and no run in {home}/runs/ is named {value!r} or starts so; "
                     f"python talk.py --list lists the runs, python train.py trains one")


@dataclass
class RunSummary:
    """One line of `python talk.py --list`: a run of a home folder, or a model on top that no run holds."""
    name: str  # the run's folder name, what --checkpoint takes
    saved: datetime  # when it last wrote a file (UTC)
    corpus: str  # the corpus file's name
    steps: str  # "1,500/2,200" where the run's resume state tells its length, else the steps of its model
    best_bpc: float  # bits per character of its best model on the held-out text; nan before its first validation
    on_top: bool  # its model is the one on top of the home folder, what talk.py reads by default


def read_description(path):
    """The dict in a JSON file of a run, or {} where it is missing or broken (the listing still lists the run)."""
    with contextlib.suppress(InputError, OSError):
        found = read_json(path)
        return found if isinstance(found, dict) else {}
    return {}


def summarize(folder, name, top_sha):
    """The RunSummary of the model and resume state in folder; top_sha: the weights' sha256 of the model on top."""
    meta, progress = read_description(folder / "model.json"), read_description(folder / "resume.json")
    saved = max([path.stat().st_mtime for path in folder.iterdir() if path.is_file()] or [folder.stat().st_mtime])
    corpus, steps, best_bpc = "?", "?", math.nan
    with contextlib.suppress(KeyError, TypeError, AttributeError):
        corpus = Path(meta["corpus"]["path"] if meta else progress["settings"]["corpus_path"]).name
    with contextlib.suppress(KeyError, TypeError, ValueError):
        steps = f"{progress['step']:,}/{progress['total_steps']:,}" if progress else f"{meta['steps']:,}"
    with contextlib.suppress(KeyError, TypeError, AttributeError):
        best_bpc = {entry["step"]: entry for entry in meta["history"]}[meta["best_step"]]["val_bpc"]
    on_top = top_sha is not None and meta.get("weights_sha256") == top_sha
    return RunSummary(name, datetime.fromtimestamp(saved, timezone.utc), corpus, steps, best_bpc, on_top)


def summarize_runs(home):
    """A RunSummary for each run of home, the one saved last first, and first of all for a model on top
    that no run holds (one trained before run folders existed)."""
    top_sha = read_description(Path(home) / "model.json").get("weights_sha256")
    runs = sorted((summarize(run, run.name, top_sha) for run in run_folders(home)),
                  key=lambda run: run.saved, reverse=True)
    if top_sha is not None and not any(run.on_top for run in runs):
        return [summarize(Path(home), f"({home}/ itself: no run folder holds its model)", top_sha), *runs]
    return runs


def home_of(run_folder):
    """The home folder a run folder belongs to (home/runs/<run>/), or None for one moved out of it."""
    run_folder = Path(run_folder)
    return run_folder.parent.parent if run_folder.parent.name == "runs" else None


def keep_earlier_model(home, replacing_run):
    """Before the run named replacing_run puts its model on top of home: if the model there is whole,
    and is neither an earlier best of that same run nor held whole by its own run's folder (a kill
    may have caught that folder mid-save), copy it to home/runs/earlier-<its weights' sha256>/."""
    home = Path(home)
    try:
        model = load_files(home)
    except InputError:
        return  # nothing whole there: a mix left by a kill mid-copy, whose parts a run folder holds
    run = model.meta.get("run")
    if run == replacing_run:
        return  # superseded by a better model of its own run
    if isinstance(run, str):
        with contextlib.suppress(InputError):
            if load_files(home / "runs" / run).meta.get("weights_sha256") == model.meta.get("weights_sha256"):
                return
    kept = home / "runs" / f"earlier-{model.meta['weights_sha256'][:12]}"
    if kept.is_dir():
        return
    staging = home / "runs" / f".{kept.name}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in MODEL_FILES:
        shutil.copy2(home / name, staging / name)
    os.replace(staging, kept)
    print(f"the model that was in {home}/ is kept in {kept}/")


def run_to_resume(folder):
    """The run folder to resume: folder itself where it holds a resume state, else the latest run in
    folder/runs/. InputError where there is none, or where it is finished."""
    folder = Path(folder)
    if (folder / "resume.json").is_file():
        run = folder
    else:
        runs = newest_first(folder, "resume.json")
        if not runs:
            raise InputError(f"nothing to resume in {folder}/ (no resume.json there, nor in a run in its runs/); "
                             f"give the run's folder with --checkpoint, or start a new run without --resume")
        run = runs[0]
    progress = read_json(run / "resume.json")
    if not isinstance(progress, dict) or not isinstance(progress.get("settings"), dict):
        raise InputError(f"{run}/resume.json is not a numpy-gpt resume state; start a new run without --resume")
    total = progress.get("total_steps")
    if isinstance(total, int) and progress.get("step") == total:
        raise InputError(f"the run in {run}/ is finished: it took all {total:,} steps, and its best model is "
                         f"in {run}/; start a new run without --resume")
    return run


@contextlib.contextmanager
def locked(folder):
    """Hold folder/.lock for the with-block, so that two trainings never write into one folder at
    once; the system drops the lock when its process ends, however it ends. InputError if it is held."""
    folder = Path(folder)
    check_writable(folder)
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks; runs still write to folders of their own
        yield
        return
    with open(folder / ".lock", "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.seek(0)
            holder = lock.read().strip() or "unknown"
            raise InputError(f"another training (process {holder}) is writing to {folder}/; wait for it to "
                             f"finish, or give another folder with --checkpoint") from None
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def save_resume_state(folder, params, opt_state, progress):
    """Write resume.npz (weights and AdamW moments) and resume.json (progress, last)."""
    folder = Path(folder)
    arrays = {f"param.{name}": value for name, value in params.items()}
    arrays.update({"adam.m": opt_state["m"], "adam.v": opt_state["v"]})
    weights = npz_bytes(arrays)
    write_staged(folder / "resume.npz", weights)
    state = {"format": FORMAT + "-resume", "version": VERSION, "adam_t": opt_state["t"],
             "resume_sha256": hashlib.sha256(weights).hexdigest(), **progress}
    write_staged(folder / "resume.json", json_bytes(state))
    publish_staged([folder / "resume.npz", folder / "resume.json"])


def load_resume_state(folder, cfg):
    """(params, optimizer state, progress) saved by save_resume_state; InputError if unusable."""
    folder = Path(folder)
    if not (folder / "resume.json").is_file() or not (folder / "resume.npz").is_file():
        raise InputError(f"nothing to resume in {folder}/ (no resume.json and resume.npz); "
                         f"start a new run without --resume")
    progress = read_json(folder / "resume.json")
    if not isinstance(progress, dict) or progress.get("format") != FORMAT + "-resume" \
            or progress.get("version") != VERSION:
        raise InputError(f"{folder}/resume.json is not a numpy-gpt resume state; start a new run without --resume")
    if sha256_of(folder / "resume.npz") != progress.get("resume_sha256"):
        raise InputError(f"{folder}/resume.npz does not match resume.json; start a new run without --resume")
    arrays = read_npz(folder / "resume.npz")
    weights = {name[len("param."):]: a for name, a in arrays.items() if name.startswith("param.")}
    check_weights(weights, cfg, folder / "resume.npz")
    opt_state = {"m": arrays["adam.m"], "v": arrays["adam.v"], "t": progress["adam_t"]}
    return pack(weights), opt_state, progress
