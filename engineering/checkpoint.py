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
import math
import os
import zipfile
from dataclasses import MISSING, dataclass, fields
from pathlib import Path

import numpy as np

from engineering import gpt2, tokenizer_files
from engineering.errors import InputError
from engineering.files import parse_json, publish_staged, read_json, removed_on_failure, temporary_name, write_staged
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
    with removed_on_failure(temporary_name(path)) as staged, open(staged, "wb") as f:
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


def read_npz(path, expected, described="model.json"):
    """Named arrays of an .npz file, in stored order, never unpickling, once the header of each is checked against
    expected (name -> shape, in order: what the run's record, described, says it holds) and the bytes they ask for
    against the file's (check_weights): no array is read, and no memory asked for one, before every header is.
    InputError where the file is damaged."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            names = [member.filename.removesuffix(".npy") for member in members]
            if len(set(names)) < len(names):
                raise damaged(path, "it holds two arrays of one name")
            check_weights({name: array_header(archive, member) for name, member in zip(names, members)}, expected,
                          path, described)
            arrays = {name: read_array(archive, member) for name, member in zip(names, members)}
    except InputError:
        raise
    except (ValueError, OSError, zipfile.BadZipFile, EOFError, NotImplementedError) as err:
        raise damaged(path, f"not a readable weights file: {err}") from None
    for name, array in arrays.items():
        if not np.all(np.isfinite(array)):
            raise damaged(path, f"{name} is not finite numbers")
    return arrays


def array_header(archive, member):
    """(shape, dtype) that the header of an .npy member of an archive says, read alone, with NumPy's reader."""
    with archive.open(member) as stream:
        version = np.lib.format.read_magic(stream)
        read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                       (2, 0): np.lib.format.read_array_header_2_0}.get(version)
        if read_header is None:
            raise ValueError(f"{member.filename} has a header of version {version}, which arrays of numbers do not")
        shape, _, dtype = read_header(stream)
    return shape, dtype


def read_array(archive, member):
    with archive.open(member) as stream:
        return np.lib.format.read_array(stream, allow_pickle=False)


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
        description = parse_json(staged.read_bytes().decode("utf-8"))
        if all(sha256_of(folder / name) == description[key] for name, key in named.items()):
            return staged
    except (OSError, ValueError, KeyError, TypeError):
        pass  # no such record, or one that a kill cut short before any rename: the files in place stand
    return folder / record


def remove_stale_temporaries(folder):
    """Delete what the saves that a kill stopped left under temporary names (files.write_staged: .model.npz.tmp, ...),
    all but a record that names the files in place (current_record), which the next save renames: done where the
    run's lock is held, by the run's next start, or by a listing where no training holds it."""
    folder = Path(folder)
    kept = {current_record(folder, "model.json", MODEL_FILES), current_record(folder, "resume.json", RESUME_FILES)}
    for path in folder.glob(".*.tmp"):
        if path not in kept:
            path.unlink(missing_ok=True)


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


def check_weights(arrays, expected, path, described="model.json"):
    """Raise InputError unless the headers of an .npz's arrays (name -> (shape, dtype)) are exactly the arrays
    expected (name -> shape; described: what says so), in order, of float32 or float64, asking for no more bytes
    than the file holds (its arrays are stored, not compressed): checked before any array is read."""
    if list(arrays) != list(expected):
        missing = [name for name in expected if name not in arrays]
        raise damaged(path, f"it does not hold this model's parameters"
                            f"{f' (missing {missing[:3]})' if missing else ' in the canonical order'}")
    for name, shape in expected.items():
        stored, dtype = arrays[name]
        if stored != shape:
            raise damaged(path, f"{name} has shape {stored}, {described} says {shape}")
        if dtype not in (np.float32, np.float64):
            raise damaged(path, f"{name} is not float32/float64 numbers")
    asked, held = sum(math.prod(shape) * dtype.itemsize for shape, dtype in arrays.values()), Path(path).stat().st_size
    if asked > held:
        raise damaged(path, f"its headers ask for {asked:,} bytes of numbers, and the file holds {held:,}")


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
    if cfg.num_layers > (folder / "model.npz").stat().st_size:  # each block holds numbers; listing more would not end
        raise damaged(folder / "model.json", f"it describes {cfg.num_layers:,} blocks, more than model.npz holds bytes")
    arrays = read_npz(folder / "model.npz", param_shapes(cfg))
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
    """The contents of resume.json, once it is this project's, every field a resume reads is there, of its type
    and in its range (check_progress), and resume.npz is there and is the file it was saved with; FileNotFoundError
    where the run has no resume state yet, InputError naming the file that is damaged."""
    record = current_record(Path(folder), "resume.json", RESUME_FILES)
    if not record.is_file():
        raise FileNotFoundError(record)
    progress = read_record(record)
    if not isinstance(progress, dict) or progress.get("format") != FORMAT + "-resume" \
            or progress.get("version") != VERSION:
        raise InputError(f"{folder}/resume.json is not a numpy-gpt resume state; start a new run without --resume")
    check_progress(progress, record)
    if not (Path(folder) / "resume.npz").is_file():
        raise damaged(Path(folder) / "resume.npz", "it is missing")
    if sha256_of(Path(folder) / "resume.npz") != progress.get("resume_sha256"):
        raise damaged(Path(folder) / "resume.npz", "it does not match resume.json")
    return progress


PROGRESS = {"step": int, "total_steps": int, "adam_t": int, "done": bool, "settings": dict, "corpus_sha256": str,
            "step_losses": list, "history": list}  # the fields of resume.json a resume reads, and their types
TYPES_SAID = {int: "a whole number", bool: "true or false", dict: "an object", str: "a text", list: "a list"}


def check_progress(progress, path):
    """Raise InputError naming resume.json (path) unless each field a resume and the listing read is there, of its
    type (a JSON true is no number here), and in its range: the step from 0 to the run's steps, a finite loss for
    each step, and the history's validations at steps in order, each with its finite losses."""
    for key, kind in PROGRESS.items():
        if type(progress.get(key)) is not kind:
            said = "missing" if key not in progress else f"not {TYPES_SAID[kind]}"
            raise damaged(path, f'its "{key}" is {said}')
    step, total = progress["step"], progress["total_steps"]
    if not 0 <= step <= total or total < 1 or progress["adam_t"] < 0:
        raise damaged(path, f"its step ({step}), steps ({total}) or AdamW's step count ({progress['adam_t']}) is "
                            f"out of range")
    if len(progress["step_losses"]) != step or not all(map(is_finite_number, progress["step_losses"])):
        raise damaged(path, f'its "step_losses" are not {step:,} numbers, one for each step taken')
    if not is_history(progress["history"], step):
        raise damaged(path, f'its "history" is not validations at steps 1 to {step:,} in order, each with its losses')


def is_history(history, step):
    """Whether history is a run's validations up to step: entries at steps rising from 1, each with its losses."""
    if not all(isinstance(entry, dict) and type(entry.get("step")) is int for entry in history):
        return False
    steps = [entry["step"] for entry in history]
    return steps == sorted(set(steps)) and all(1 <= at <= step for at in steps) and all(
        is_finite_number(entry.get(key)) for entry in history for key in ("train_loss", "val_loss", "val_bpc"))


def is_finite_number(value):
    return type(value) in (int, float) and math.isfinite(value)


def read_progress(folder):
    """What resume.json says of where training stood in folder (as its last save left it: current_record)."""
    return read_record(current_record(Path(folder), "resume.json", RESUME_FILES))


def load_resume_state(folder, cfg):
    """(params, optimizer state, progress) saved by save_resume_state, every file checked (check_resume_files, and
    resume.npz's headers against the model cfg before any array is read); None where the run saved no state to
    resume from (it saved its model only: a full disk, or a kill, at its first save); InputError if unusable."""
    folder = Path(folder)
    try:
        progress = check_resume_files(folder)
    except FileNotFoundError:
        return None
    shapes = param_shapes(cfg)
    numbers = sum(math.prod(shape) for shape in shapes.values())
    expected = {**{f"param.{name}": shape for name, shape in shapes.items()},
                "adam.m": (numbers,), "adam.v": (numbers,)}  # AdamW's moments: one number for each parameter
    arrays = read_npz(folder / "resume.npz", expected, "the model resumed")
    weights = {name[len("param."):]: a for name, a in arrays.items() if name.startswith("param.")}
    opt_state = {"m": arrays["adam.m"], "v": arrays["adam.v"], "t": progress["adam_t"]}
    return pack(weights), opt_state, progress
