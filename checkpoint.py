"""Saving and loading a trained model: weights, description, tokenizer, and the state to resume from.

A checkpoint folder holds
    model.npz        the weights, one array per parameter, in the canonical order
    model.json       the model's shape, the settings it was trained with, the corpus's sha256,
                     the loss history, library versions, a format version, and the sha256 of
                     model.npz and model.tok.json so a mismatched set of files is caught
    model.tok.json   the tokenizer
    resume.npz       the latest weights and AdamW's moments, for `python train.py --resume`
    resume.json      where training stood: step, settings, history

Training's home folder (checkpoints/) holds a folder for each run, runs/<its name>/, with all of
that run's files, and on top the latest good model, a copy of the best model of the run that
saved last: that is what talk.py reads. A run is named by `train.py --name`, or by its UTC start
time and its corpus (20261201-0230-tinyshakespeare); talk.py and generate.py find it by that name. A model on top that no run folder holds (one trained
before runs/ existed) is copied into runs/ before anything replaces it, so every model stays
until its owner deletes it.

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
import os
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

    Example: characters_said(178405, "rows") -> "178,405 characters, each row's newline included"
    """
    return f"{count:,} characters" + (", each row's newline included" if kind == "rows" else "")


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


def new_run_folder(home):
    """A new, empty folder home/runs/<UTC start time>/ for a run, named unlike any run of home, the
    one whose model is on top included (its folder may be gone, or the model copied from elsewhere)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    on_top = None
    with contextlib.suppress(InputError, OSError, AttributeError):
        on_top = read_json(Path(home) / "model.json").get("run")
    for attempt in range(1, 1000):
        name = stamp if attempt == 1 else f"{stamp}-{attempt}"
        if name == on_top:
            continue
        with contextlib.suppress(FileExistsError):
            folder = Path(home) / "runs" / name
            folder.mkdir(parents=True)
            return folder
    raise InputError(f"cannot make a run folder in {home}/runs/")


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
    once; the system drops the lock when its process ends, however it ends. ValueError if it is held."""
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
    """(params, optimizer state, progress) saved by save_resume_state; ValueError if unusable."""
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
