"""train.py: windows, learning, reproducibility, resuming, checkpoints, and bad input."""

import argparse
import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import checkpoint
import config
import train
from transformer import forward

REPO = Path(__file__).resolve().parent.parent
WORDS = "the a cat dog bird sat ran flew on under over mat tree house red small big old new happy".split()


def tiny_settings(folder, corpus, **overrides):
    """config.py's settings shrunk so a whole run takes a second or two."""
    small = dict(corpus_path=str(corpus), checkpoint=str(folder), emb_dim=8, num_heads=2, head_dim=4, num_layers=1,
                 ff_dim=16, context_len=8, seq_len=8, batch_size=8, epochs=2, num_merges=20, max_rows=300,
                 max_new_tokens=10, warmup_steps=5)
    return config.settings(argparse.Namespace(**{**config.defaults(), **small, **overrides}))


def write_corpus(path, rows=200, seed=0):
    rng = np.random.default_rng(seed)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "text"])
        for i in range(rows):
            writer.writerow([i, " ".join(rng.choice(WORDS, size=6)).capitalize() + "."])
    return path


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path / "corpus.csv")


def run_script(*args, cwd=REPO, **kwargs):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=120, **kwargs)


# --- windows ----------------------------------------------------------------------------------

def test_windows_stride_1():
    inputs, targets = train.make_windows(np.arange(6), seq_len=3, stride=1, what="test")
    assert inputs.tolist() == [[0, 1, 2], [1, 2, 3], [2, 3, 4]]
    assert targets.tolist() == [[1, 2, 3], [2, 3, 4], [3, 4, 5]]


def test_windows_stride_2():
    inputs, targets = train.make_windows(np.arange(7), seq_len=2, stride=2, what="test")
    assert inputs.tolist() == [[0, 1], [2, 3], [4, 5]]
    assert targets.tolist() == [[1, 2], [3, 4], [5, 6]]


def test_windows_need_seq_len_plus_one_tokens():
    assert len(train.make_windows(np.arange(4), seq_len=3, stride=1, what="test")[0]) == 1
    with pytest.raises(ValueError, match="fewer than one window"):
        train.make_windows(np.arange(3), seq_len=3, stride=1, what="test")


def test_split_is_seeded_disjoint_and_keeps_corpus_order():
    rows = [f"row {i}" for i in range(20)]
    train_rows, val_rows = train.split_rows(rows, 0.25, seed=3)
    assert len(val_rows) == 5 and sorted(train_rows + val_rows, key=rows.index) == rows
    assert train_rows == sorted(train_rows, key=rows.index)
    assert train.split_rows(rows, 0.25, seed=3) == (train_rows, val_rows)
    assert train.split_rows(rows, 0.25, seed=4) != (train_rows, val_rows)


def test_txt_corpus_is_one_row_per_non_empty_line(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("first line\n\n  \nsecond line\n", encoding="utf-8")
    assert train.read_rows(path, "text", 10) == ["first line", "second line"]


# --- training ---------------------------------------------------------------------------------

def test_training_loss_falls_well_below_its_start(tmp_path, corpus):
    s = tiny_settings(tmp_path / "ck", corpus, epochs=4, lr_max=3e-3)
    train.train(s)
    progress = checkpoint.read_json(tmp_path / "ck" / "resume.json")
    losses = progress["step_losses"]
    vocab_size = checkpoint.read_json(tmp_path / "ck" / "model.json")["model"]["vocab_size"]
    assert abs(np.mean(losses[:3]) - np.log(vocab_size)) < 0.5  # a fresh model is about uniform over V
    assert np.mean(losses[-10:]) < 0.7 * np.mean(losses[:5])
    history = progress["history"]
    assert history[-1]["val_loss"] < history[0]["val_loss"]


def test_same_seed_gives_bit_identical_checkpoints(tmp_path, corpus):
    for name in ("a", "b"):
        train.train(tiny_settings(tmp_path / name, corpus))
    for file in ("model.npz", "model.tok.json", "resume.npz", "losses.csv"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes(), file
    meta = [checkpoint.read_json(tmp_path / name / "model.json") for name in ("a", "b")]
    for m in meta:
        m.pop("trained_at")
        m["settings"].pop("checkpoint")
    assert meta[0] == meta[1]


def test_two_processes_give_bit_identical_checkpoints_and_are_recorded(tmp_path, corpus):
    # the batch is cut into two slices, one per process: the result must still be the same every run
    for name in ("a", "b"):
        train.train(tiny_settings(tmp_path / name, corpus, epochs=1, processes=2))
    for file in ("model.npz", "resume.npz", "losses.csv"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes(), file
    assert checkpoint.read_json(tmp_path / "a" / "model.json")["processes"] == 2
    train.train(tiny_settings(tmp_path / "one", corpus, epochs=1))
    assert checkpoint.read_json(tmp_path / "one" / "model.json")["processes"] == 1  # 0 chose 1 for this tiny model
    # (the two runs differ in float32 rounding, which Adam blows up where a gradient is pure rounding,
    # as bk's is; tests/test_parallel.py checks the sliced gradients against the whole batch's)


class StopAt(train.StopRequest):
    """Acts as if Ctrl-C were pressed during step `at`."""

    def __init__(self, at):
        super().__init__()
        self.at = at

    def check(self, step):
        return step == self.at


@pytest.mark.parametrize("stop_step", [7, 25])  # inside the first epoch; inside the second
def test_interrupted_and_resumed_equals_uninterrupted(tmp_path, corpus, stop_step):
    train.train(tiny_settings(tmp_path / "whole", corpus, epochs=3))
    s = tiny_settings(tmp_path / "parts", corpus, epochs=3)
    with pytest.raises(SystemExit) as stopped:
        train.train(s, stop=StopAt(stop_step))
    assert stopped.value.code == 130
    assert checkpoint.read_json(tmp_path / "parts" / "resume.json")["step"] == stop_step
    train.train(s, resume=True)
    for file in ("model.npz", "resume.npz", "losses.csv"):
        assert (tmp_path / "whole" / file).read_bytes() == (tmp_path / "parts" / file).read_bytes(), file


def test_checkpoint_loads_back_to_the_same_parameters_and_logits(tmp_path, corpus):
    s = tiny_settings(tmp_path / "ck", corpus, epochs=1)
    train.train(s)
    model = checkpoint.load(tmp_path / "ck")
    saved = np.load(tmp_path / "ck" / "model.npz")
    assert list(model.params) == list(saved.files)
    assert all(np.array_equal(model.params[k], saved[k]) and model.params[k].dtype == np.float32 for k in saved.files)
    ids = np.array(model.tokenizer.encode("The cat sat"))
    logits, _ = forward(model.params, ids, model.cfg)
    again, _ = forward(checkpoint.load(tmp_path / "ck").params, ids, model.cfg)
    assert np.array_equal(logits, again)
    assert model.meta["corpus"]["sha256"] == checkpoint.sha256_of(corpus)
    assert model.meta["history"][0]["epoch"] == 1 and model.meta["versions"]["numpy"] == np.__version__


@pytest.fixture
def trained(tmp_path, corpus):
    train.train(tiny_settings(tmp_path / "ck", corpus, epochs=1))
    return tmp_path / "ck"


@pytest.mark.parametrize("damage, message", [
    (lambda f: (f / "model.npz").write_bytes((f / "model.npz").read_bytes()[:100]), "not the file model.json"),
    (lambda f: (f / "model.json").write_text("{not json"), "not valid JSON"),
    (lambda f: (f / "model.json").write_text('{"format": "someone-else"}'), "not a numpy-gpt checkpoint"),
    (lambda f: (f / "model.tok.json").unlink(), "model.tok.json is missing"),
    (lambda f: (f / "model.json").write_text((f / "model.json").read_text().replace('"version": 1', '"version": 9')),
     "format version 9"),
])
def test_corrupt_or_foreign_checkpoint_is_a_clear_error(trained, damage, message):
    damage(trained)
    with pytest.raises(ValueError, match=message):
        checkpoint.load(trained)


def test_failed_write_leaves_the_previous_checkpoint_loadable(trained, monkeypatch):
    before = checkpoint.load(trained)

    def disk_full(fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", disk_full)
    params = {k: v + 1 for k, v in before.params.items()}
    with pytest.raises(OSError):
        checkpoint.save_model(trained, params, before.cfg, before.tokenizer, {"note": "never written"})
    monkeypatch.undo()
    after = checkpoint.load(trained)
    assert all(np.array_equal(before.params[k], after.params[k]) for k in before.params)


def test_a_new_run_moves_the_previous_model_aside(trained, corpus):
    old = (trained / "model.npz").read_bytes()
    train.train(tiny_settings(trained, corpus, epochs=1, seed=7))
    assert (trained / "previous" / "model.npz").read_bytes() == old
    assert (trained / "model.npz").read_bytes() != old


# --- the script, as a person runs it ----------------------------------------------------------

def test_script_trains_and_writes_a_checkpoint(tmp_path, corpus):
    result = run_script("train.py", "--corpus_path", str(corpus), "--checkpoint", str(tmp_path / "ck"),
                        "--epochs", "1", "--emb_dim", "8", "--head_dim", "4", "--num_merges", "10")
    assert result.returncode == 0, result.stderr
    assert "epoch   1" in result.stderr + result.stdout and "sample:" in result.stderr + result.stdout
    assert checkpoint.load(tmp_path / "ck").cfg.emb_dim == 8


def test_ctrl_c_saves_a_resumable_state_and_exits_130(tmp_path, corpus):
    args = ["train.py", "--corpus_path", str(corpus), "--checkpoint", str(tmp_path / "ck"), "--epochs", "200"]
    process = subprocess.Popen([sys.executable, *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    while "model:" not in process.stdout.readline():  # training is about to start
        assert process.poll() is None, process.stderr.read()
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "python train.py --resume --checkpoint" in out and "Traceback" not in err
    assert checkpoint.read_json(tmp_path / "ck" / "resume.json")["step"] > 0
    refused = run_script(*args, "--resume", "--epochs", "3")
    assert refused.returncode == 2 and "drop --epochs" in refused.stderr


def one_line_error(result):
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_bad_input_gives_one_line_and_status_2(tmp_path, corpus):
    empty = tmp_path / "empty.csv"
    empty.write_text("text\n\n\n", encoding="utf-8")
    short = tmp_path / "short.csv"
    short.write_text("text\nab\ncd\nef\n", encoding="utf-8")
    one_row = tmp_path / "one.csv"
    one_row.write_text("text\nonly one row here\n", encoding="utf-8")
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"text\n\xff\xfe\x00\x81\n")
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    cases = [
        (["--corpus_path", str(tmp_path / "nope.csv")], "no corpus at"),
        (["--corpus_path", str(corpus), "--corpus_column", "body"], "has no column 'body'; its columns are ['id', 'text']"),
        (["--corpus_path", str(empty)], "holds no text"),
        (["--corpus_path", str(short)], "fewer than one window"),
        (["--corpus_path", str(one_row)], "cannot be split"),
        (["--corpus_path", str(binary)], "not UTF-8"),
        (["--corpus_path", str(corpus), "--checkpoint", str(blocked / "ck")], "cannot write checkpoints"),
        (["--epochz", "3"], "unrecognized arguments: --epochz"),
        (["--epochs", "three"], "invalid int value: 'three'"),
        (["--seq_len", "64"], "seq_len (64) must not exceed context_len (32)"),
        (["--top_p", "1.5"], "top_p must be in (0, 1]"),
        (["--dtype", "float16"], "dtype must be float32 or float64"),
        (["--processes", "-1"], "processes must be 0 (chosen from the model's size) or more"),
        (["--resume", "--checkpoint", str(tmp_path / "none")], "nothing to resume"),
    ]
    for args, message in cases:
        line = one_line_error(run_script("train.py", *args, "--checkpoint", str(tmp_path / "ck"))
                              if "--checkpoint" not in args else run_script("train.py", *args))
        assert message in line, (args, line)
    assert not (tmp_path / "ck" / "model.npz").exists()  # nothing was trained by a bad command


def test_bad_input_does_not_touch_an_earlier_checkpoint(trained, tmp_path):
    before = {p.name: p.read_bytes() for p in trained.iterdir() if p.is_file()}
    one_line_error(run_script("train.py", "--corpus_path", str(tmp_path / "missing.csv"), "--checkpoint", str(trained)))
    assert {p.name: p.read_bytes() for p in trained.iterdir() if p.is_file()} == before


def test_help_lists_every_setting_with_its_comment():
    result = run_script("train.py", "--help")
    assert result.returncode == 0
    for name in config.defaults():
        assert f"--{name}" in result.stdout, name
    assert "decoupled weight decay" in result.stdout and "--resume" in result.stdout
