"""Saving and loading a trained model: weights, description, tokenizer, and the state to resume from.

A checkpoint folder holds
    model.npz        the weights, one array per parameter, in the canonical order
    model.json       the model's shape, the settings it was trained with, the corpus's sha256,
                     the loss history, library versions, a format version, and the sha256 of
                     model.npz and model.tok.json so a mismatched set of files is caught
    model.tok.json   the tokenizer
    resume.npz       the latest weights and AdamW's moments, for `python train.py --resume`
    resume.json      where training stood: step, settings, history
Every file is written to a temporary name and renamed once all the files of a save are written,
so a failed or interrupted write leaves the old files whole; a crash between two renames leaves a
mix, which loading recognises by the sha256 in model.json. Loading checks everything and raises
ValueError with what is wrong and what to do.
"""

import hashlib
import io
import json
import os
import zipfile
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

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


def sha256_of(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


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
    """Named arrays of an .npz file, in stored order, never unpickling; ValueError if unreadable."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as err:
        raise ValueError(f"{path} is not a readable weights file ({err}); {RETRAIN}") from None


def read_json(path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path} is not valid JSON ({err}); {RETRAIN}") from None


def save_model(folder, params, cfg, tokenizer, meta):
    """Write model.npz, model.tok.json and model.json; the renames happen only once all are written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    weights = npz_bytes(params)
    tokenizer.save(temporary_name(folder / "model.tok.json"))
    write_staged(folder / "model.npz", weights)
    description = {
        "format": FORMAT, "version": VERSION,
        "model": {f.name: getattr(cfg, f.name) for f in fields(cfg)},
        "dtype": str(next(iter(params.values())).dtype),
        "weights_sha256": hashlib.sha256(weights).hexdigest(),
        "tokenizer_sha256": sha256_of(temporary_name(folder / "model.tok.json")),
        **meta,
    }
    write_staged(folder / "model.json", json_bytes(description))
    publish_staged([folder / "model.npz", folder / "model.tok.json", folder / "model.json"])


def check_weights(arrays, cfg, path):
    """Raise ValueError unless the arrays are exactly this model's parameters, finite, in order."""
    expected = param_shapes(cfg)
    if list(arrays) != list(expected):
        missing = [name for name in expected if name not in arrays]
        raise ValueError(f"{path} does not hold this model's parameters"
                         f"{f' (missing {missing[:3]})' if missing else ' in the canonical order'}; {RETRAIN}")
    for name, shape in expected.items():
        array = arrays[name]
        if array.shape != shape:
            raise ValueError(f"{path}: {name} has shape {array.shape}, model.json says {shape}; {RETRAIN}")
        if array.dtype not in (np.float32, np.float64) or not np.all(np.isfinite(array)):
            raise ValueError(f"{path}: {name} is not finite float32/float64 numbers; {RETRAIN}")


def load(folder):
    """The checkpoint in folder, every file checked against the others."""
    folder = Path(folder)
    for name in ("model.json", "model.npz", "model.tok.json"):
        if not (folder / name).is_file():
            raise ValueError(f"no checkpoint in {folder}/ ({name} is missing); {RETRAIN}")
    meta = read_json(folder / "model.json")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{folder}/model.json is not a numpy-gpt checkpoint; {RETRAIN}")
    if meta.get("version") != VERSION:
        raise ValueError(f"{folder}/model.json has format version {meta.get('version')}, "
                         f"this code reads version {VERSION}; {RETRAIN}")
    try:
        cfg = ModelConfig(**meta["model"])
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{folder}/model.json describes no valid model ({err}); {RETRAIN}") from None
    for name, key in (("model.npz", "weights_sha256"), ("model.tok.json", "tokenizer_sha256")):
        if sha256_of(folder / name) != meta.get(key):
            raise ValueError(f"{folder}/{name} is not the file model.json was saved with "
                             f"(a partial copy, or files from two runs mixed); {RETRAIN}")
    arrays = read_npz(folder / "model.npz")
    check_weights(arrays, cfg, folder / "model.npz")
    tokenizer = BPETokenizer.load(folder / "model.tok.json")
    if tokenizer.vocab_size != cfg.vocab_size:
        raise ValueError(f"the tokenizer in {folder} has {tokenizer.vocab_size} tokens, the model "
                         f"{cfg.vocab_size}; {RETRAIN}")
    return Checkpoint(pack(arrays), cfg, tokenizer, meta)


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
        raise ValueError(f"nothing to resume in {folder}/ (no resume.json and resume.npz); "
                         f"start a new run without --resume")
    progress = read_json(folder / "resume.json")
    if not isinstance(progress, dict) or progress.get("format") != FORMAT + "-resume" \
            or progress.get("version") != VERSION:
        raise ValueError(f"{folder}/resume.json is not a numpy-gpt resume state; start a new run without --resume")
    if sha256_of(folder / "resume.npz") != progress.get("resume_sha256"):
        raise ValueError(f"{folder}/resume.npz does not match resume.json; start a new run without --resume")
    arrays = read_npz(folder / "resume.npz")
    weights = {name[len("param."):]: a for name, a in arrays.items() if name.startswith("param.")}
    check_weights(weights, cfg, folder / "resume.npz")
    opt_state = {"m": arrays["adam.m"], "v": arrays["adam.v"], "t": progress["adam_t"]}
    return pack(weights), opt_state, progress
