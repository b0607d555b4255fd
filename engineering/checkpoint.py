"""Saving and loading a trained model: weights, description, tokenizer, and the state to resume from.

A run's folder (checkpoints/runs/<name>/, runs.py) holds
    model.npz        the weights, one array per parameter, in the canonical order
    model.json       the model's shape, its settings, its corpus (sha256; rows of a CSV or one text),
                     the loss history, versions, and the sha256 of model.npz and model.tok.json
    model.tok.json   the tokenizer
    resume.npz       the latest weights and AdamW's moments, for `python train.py --resume`
    resume.json      where training stood: step, settings, history, and the sha256 of resume.npz

A save writes every file under a temporary name, then renames them, the record that names the others
last: a kill between the renames is read as the save it was (current_record). Loading checks everything;
a missing model is told to train one, a damaged file to be restored or its run deleted.
"""

import hashlib
import json
import os
import zipfile
from dataclasses import MISSING, dataclass, fields
from pathlib import Path

import numpy as np

from engineering import gpt2, tokenizer_files
from engineering.errors import InputError
from engineering.files import publish_staged, read_json, temporary_name, write_staged
from engineering.wording import removal
from transformer import ModelConfig, pack, param_shapes

FORMAT = "numpy-gpt-checkpoint"
VERSION = 1


@dataclass
class Checkpoint:
    params: dict  # name -> array, packed, in the canonical order (prompting.load_for_sampling lays them out for decoding)
    cfg: ModelConfig
    tokenizer: object  # tokenizer.BPETokenizer, or tokenizer.ByteLevelBPE for GPT-2 and a run fine-tuned from it
    meta: dict  # the contents of model.json
    folder: Path  # the folder it was read from


def sha256_of(path):
    """The sha256 of a file, read a megabyte at a time: a GPT-2's resume.npz is 1.9 GB."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(2 ** 20):
            digest.update(block)
    return digest.hexdigest()


def write_npz_staged(path, arrays):  # -> the sha256 of the file written
    """Write an .npz archive of named arrays, in order, with fixed timestamps (same arrays, same bytes), to
    path's temporary name, flushed to disk; publish_staged renames it onto path. Each array streams into
    the file in pieces, so a resume state (three copies of the model: 1.9 GB at GPT-2 124M) is never
    held in memory a second time."""
    staged = temporary_name(path)
    with open(staged, "wb") as f:
        with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as archive:
            for name, array in arrays.items():
                member = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
                member.file_size = array.nbytes  # so that a member over 2 GiB is written as ZIP64
                with archive.open(member, "w") as stream:
                    np.lib.format.write_array(stream, np.ascontiguousarray(array), allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())
    return sha256_of(staged)


def json_bytes(obj):
    return (json.dumps(obj, indent=1) + "\n").encode("utf-8")


def read_npz(path):
    """Named arrays of an .npz file, in stored order, never unpickling; InputError if unreadable."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as err:
        raise damaged(path, f"not a readable weights file: {err}") from None


def read_record(path):
    """The JSON of a run's model.json or resume.json; InputError where it is damaged."""
    return read_json(path, lambda why: damaged(path, why))


MODEL_FILES = {"model.npz": "weights_sha256", "model.tok.json": "tokenizer_sha256"}  # each file model.json names
RESUME_FILES = {"resume.npz": "resume_sha256"}  # and the one resume.json names


def current_record(folder, record, named):
    """The path of folder's record (model.json, resume.json: the file that names the others by sha256) as its
    last save left it. A save writes every file under a temporary name first, then renames them, its record
    last; where a kill stopped it between those renames, the record still waiting under its temporary name
    names exactly the files now in place, and is the one to read. Anything else: the record itself."""
    staged = temporary_name(folder / record)
    try:
        description = json.loads(staged.read_bytes())
        if all(sha256_of(folder / name) == description[key] for name, key in named.items()):
            return staged
    except (OSError, ValueError, KeyError, TypeError):
        pass  # no such record, or one that a kill cut short before any rename: the files in place stand
    return folder / record


def complete_interrupted_save(folder, record, named):
    """Finish the renames of a save that a kill stopped (current_record): done by the next save to the folder,
    which holds the run's lock, and never by a reader, which may be reading while a training saves."""
    path = current_record(folder, record, named)
    if path != folder / record:
        os.replace(path, folder / record)


def save_model(folder, params, cfg, tokenizer, meta):
    """Write model.npz, model.tok.json and model.json, renamed once all are written, model.json last."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    complete_interrupted_save(folder, "model.json", MODEL_FILES)  # before this save's files replace its record
    tokenizer_bytes = tokenizer_files.to_bytes(tokenizer)
    write_staged(folder / "model.tok.json", tokenizer_bytes)
    weights_sha256 = write_npz_staged(folder / "model.npz", params)
    description = {
        "format": FORMAT, "version": VERSION,
        "model": shape_record(cfg),
        "dtype": str(next(iter(params.values())).dtype),
        "weights_sha256": weights_sha256,
        "tokenizer_sha256": hashlib.sha256(tokenizer_bytes).hexdigest(),
        **meta,
    }
    write_staged(folder / "model.json", json_bytes(description))
    publish_staged([folder / "model.npz", folder / "model.tok.json", folder / "model.json"])


def shape_record(cfg):
    """The fields of cfg as model.json records them: each of today's options only where it is not GPT-2's, so that
    a model of GPT-2's family is recorded as before the options were; ModelConfig(**record) reads either back.
    Example: a ModelConfig with kv_heads 2 of num_heads 2 and norm "rmsnorm" -> {..., "norm": "rmsnorm"}"""
    gpt2 = {"kv_heads": cfg.num_heads, "head_dim": cfg.emb_dim // cfg.num_heads}  # the sizes a 0 stands for
    return {f.name: getattr(cfg, f.name) for f in fields(cfg)
            if f.default is MISSING or getattr(cfg, f.name) not in (f.default, gpt2.get(f.name))}


def check_weights(arrays, cfg, path):
    """Raise InputError unless the arrays are exactly this model's parameters, finite, in order."""
    expected = param_shapes(cfg)
    if list(arrays) != list(expected):
        missing = [name for name in expected if name not in arrays]
        raise damaged(path, f"it does not hold this model's parameters"
                            f"{f' (missing {missing[:3]})' if missing else ' in the canonical order'}")
    for name, shape in expected.items():
        array = arrays[name]
        if array.shape != shape:
            raise damaged(path, f"{name} has shape {array.shape}, model.json says {shape}")
        if array.dtype not in (np.float32, np.float64) or not np.all(np.isfinite(array)):
            raise damaged(path, f"{name} is not finite float32/float64 numbers")


def corpus_kind(meta):
    """What the model in model.json (meta) learned from: "rows" of a CSV or one running "text"; a model saved
    before model.json recorded it, "text" where its corpus was a .txt."""
    corpus = meta.get("corpus") if isinstance(meta.get("corpus"), dict) else {}
    path_says = "text" if str(corpus.get("path", "")).lower().endswith(".txt") else "rows"
    return corpus["kind"] if corpus.get("kind") in ("rows", "text") else path_says


def damaged(path, why):
    """The InputError for a file of a run that is there but cannot be used."""
    folder = Path(path).parent
    remove = removal(folder.parent.parent, folder.name) if folder.parent.name == "runs" else f"delete {folder}/"
    return InputError(f"{path} is damaged ({why}): restore it from a copy, or remove its run ({remove}) and train "
                      f"again")


def check_files(folder):
    """The contents of model.json, once the three files of the model in folder are there and are the ones
    model.json was saved with; InputError naming the file that is missing or damaged."""
    record = current_record(folder, "model.json", MODEL_FILES)
    if not record.is_file():
        raise InputError(f"no model in {folder}/ (model.json is missing); train one with `python train.py`, or "
                         f"give a run's name with --checkpoint (python talk.py --list lists them)")
    for name in MODEL_FILES:
        if not (folder / name).is_file():
            raise damaged(folder / name, "it is missing")
    meta = read_record(record)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise InputError(f"{folder}/model.json is not a numpy-gpt checkpoint; give a run's folder or name")
    if meta.get("version") != VERSION:
        raise InputError(f"{folder}/model.json has format version {meta.get('version')}, this code reads version "
                         f"{VERSION}; train the model again with this code")
    for name, key in MODEL_FILES.items():
        if sha256_of(folder / name) != meta.get(key):
            raise damaged(folder / name, "it is not the file model.json was saved with: a partial copy, an edit, "
                                         "or files from two runs mixed")
    return meta


def is_gpt2_folder(folder):
    """Whether folder is a Hugging Face GPT-2's rather than a run's: a file of one (config.json, model.safetensors,
    ...) and no model.json. Its missing files are then named by gpt2.load, not taken for a missing model."""
    return not (Path(folder) / "model.json").exists() and any((Path(folder) / name).exists() for name in gpt2.FILES)


def holds_model(folder):
    """Whether folder holds a model to load: a run's (model.json) or a Hugging Face GPT-2's."""
    return (Path(folder) / "model.json").exists() or is_gpt2_folder(folder)


def load(folder):
    """The checkpoint in folder, every file checked against the others; a GPT-2 folder as gpt2.load reads it."""
    folder = Path(folder)
    if is_gpt2_folder(folder):
        params, cfg, tokenizer = gpt2.load(folder)
        return Checkpoint(params, cfg, tokenizer, {"gpt2": str(folder), "corpus": {"kind": "text"}}, folder)
    meta = check_files(folder)
    try:
        cfg = ModelConfig(**meta["model"])
    except (KeyError, TypeError, ValueError) as err:
        raise damaged(folder / "model.json", f"it describes no valid model: {err}") from None
    arrays = read_npz(folder / "model.npz")
    check_weights(arrays, cfg, folder / "model.npz")
    tokenizer = tokenizer_files.load(folder / "model.tok.json")
    if tokenizer.vocab_size != cfg.vocab_size:
        raise damaged(folder / "model.tok.json", f"it has {tokenizer.vocab_size} tokens, the model {cfg.vocab_size}")
    return Checkpoint(pack(arrays), cfg, tokenizer, meta, folder)


def save_resume_state(folder, params, opt_state, progress):
    """Write resume.npz (weights and AdamW moments) and resume.json (progress, last)."""
    folder = Path(folder)
    complete_interrupted_save(folder, "resume.json", RESUME_FILES)  # before this save's files replace its record
    arrays = {f"param.{name}": value for name, value in params.items()}
    arrays.update({"adam.m": opt_state["m"], "adam.v": opt_state["v"]})
    state = {"format": FORMAT + "-resume", "version": VERSION, "adam_t": opt_state["t"],
             "resume_sha256": write_npz_staged(folder / "resume.npz", arrays), **progress}
    write_staged(folder / "resume.json", json_bytes(state))
    publish_staged([folder / "resume.npz", folder / "resume.json"])


def check_resume_files(folder):
    """The contents of resume.json, once resume.npz is there and is the file it was saved with; FileNotFoundError
    where the run has no resume state yet, InputError naming the file that is damaged."""
    record = current_record(Path(folder), "resume.json", RESUME_FILES)
    if not record.is_file():
        raise FileNotFoundError(record)
    progress = read_record(record)
    if not (Path(folder) / "resume.npz").is_file():
        raise damaged(Path(folder) / "resume.npz", "it is missing")
    if not isinstance(progress, dict) or sha256_of(Path(folder) / "resume.npz") != progress.get("resume_sha256"):
        raise damaged(Path(folder) / "resume.npz", "it does not match resume.json")
    return progress


def read_progress(folder):
    """What resume.json says of where training stood in folder (as its last save left it: current_record)."""
    return read_record(current_record(Path(folder), "resume.json", RESUME_FILES))


def load_resume_state(folder, cfg):
    """(params, optimizer state, progress) saved by save_resume_state; InputError if unusable."""
    folder = Path(folder)
    record = current_record(folder, "resume.json", RESUME_FILES)
    if not record.is_file() or not (folder / "resume.npz").is_file():
        raise InputError(f"nothing to resume in {folder}/ (no resume.json and resume.npz); "
                         f"start a new run without --resume")
    progress = read_record(record)
    if not isinstance(progress, dict) or progress.get("format") != FORMAT + "-resume" \
            or progress.get("version") != VERSION:
        raise InputError(f"{folder}/resume.json is not a numpy-gpt resume state; start a new run without --resume")
    if sha256_of(folder / "resume.npz") != progress.get("resume_sha256"):
        raise damaged(folder / "resume.npz", "it does not match resume.json")
    arrays = read_npz(folder / "resume.npz")
    weights = {name[len("param."):]: a for name, a in arrays.items() if name.startswith("param.")}
    check_weights(weights, cfg, folder / "resume.npz")
    opt_state = {"m": arrays["adam.m"], "v": arrays["adam.v"], "t": progress["adam_t"]}
    return pack(weights), opt_state, progress
