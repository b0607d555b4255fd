"""train.py: the corpus, evaluation, learning, reproducibility, resuming, checkpoints, and bad input.

Training runs in this process (train.train, or train.main through conftest's run_main) on a small corpus:
short enough that a whole run takes a second or two. One test runs train.py as a person starts it, for
what only a process shows: Ctrl-C from the terminal, with the reader of its stdout gone.
"""

import errno
import json
import os
import re
import shutil
import signal
import sys
import types
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

import config
from conftest import WORDS, one_line_error, run_main, run_script, started, tiny_args, tiny_settings, write_corpus
from engineering import checkpoint, corpus, files, gpt2, parallel, run_log, runs, settings, wording
from engineering.errors import InputError
from engineering.settings import SettingsParser
import train
import transformer
from engineering.corpus import read_corpus, read_rows, read_text, split_rows, split_text
from transformer import ModelConfig, forward


def run_folder(home):
    """The folder of the latest run in a home folder."""
    return runs.summarize_runs(home)[0].folder


def read(path, s):
    """The corpus at path, read with the settings s, as train.py reads it."""
    return read_corpus(path, s.corpus_column, s.max_rows, s.val_fraction, s.seed)


def ctrl_c_at(monkeypatch, step):
    """Press Ctrl-C during step `step` (1, 2, ...): SIGINT to this process, as a terminal sends it."""
    real_schedule = train.lr_schedule

    def schedule(at, *args):
        if at == step:
            os.kill(os.getpid(), signal.SIGINT)
        return real_schedule(at, *args)
    monkeypatch.setattr(train, "lr_schedule", schedule)


# --- the corpus ---------------------------------------------------------------------------------

def test_split_is_seeded_disjoint_and_keeps_corpus_order():
    rows = [f"row {i}" for i in range(20)]
    train_rows, val_rows = split_rows(rows, 0.25, seed=3)
    assert len(val_rows) == 5 and sorted(train_rows + val_rows, key=rows.index) == rows
    assert train_rows == sorted(train_rows, key=rows.index)
    assert split_rows(rows, 0.25, seed=3) == (train_rows, val_rows)
    assert split_rows(rows, 0.25, seed=4) != (train_rows, val_rows)


def test_txt_corpus_is_the_exact_text(tmp_path):
    text = "TITLE\n\n  Ber. Who's there?  \n\n\nFran.\tNay, answer me.\n   \nend without newline"
    path = tmp_path / "c.txt"
    path.write_bytes(text.replace("\n", "\r\n").encode("utf-8"))  # Windows line ends become \n, nothing else changes
    assert read_text(path) == text


def test_txt_split_holds_out_the_end_from_a_line_start_and_drops_nothing():
    assert split_text("ab\ncd\nef\ngh\n", 0.4) == ("ab\ncd\nef\n", "gh\n")
    assert split_text("ab\ncd\nef\n", 2 / 3) == ("ab\n", "cd\nef\n")  # the cut falls right after a line's end
    text = "".join(f"line {i}\n" + "\n" * (i % 3) for i in range(100))
    train_text, val_text = split_text(text, 0.1)
    assert train_text + val_text == text
    assert 0.08 < len(val_text) / len(text) < 0.12
    assert train_text.endswith("\n") and not val_text.startswith("\n")  # a line and its blank lines stay together


def test_txt_split_at_its_edges():
    assert split_text("\nabc", 0.9) == ("\n", "abc")  # a line that starts at character 1
    for text, val_fraction in (("abc", 0.9), ("abc", 0.0)):  # no line start: the cut at 0, or at the very end
        with pytest.raises(ValueError, match="3 characters cannot be split into training and validation text"):
            split_text(text, val_fraction)
    with pytest.raises(ValueError, match="^1 character cannot be split"):  # one, not "1 characters"
        split_text("a", 0.5)


def test_txt_corpus_trains_on_the_start_and_validates_on_the_end(tmp_path):
    path = tmp_path / "book.txt"
    text = "".join(f"Line {i} of the book.\n\n" for i in range(200))
    path.write_text(text, encoding="utf-8")
    corpus = read(path, tiny_settings(tmp_path, path))
    assert corpus.train_text + corpus.val_text == text and corpus.val_text.startswith("Line 18")
    assert "Line 190 of" in corpus.val_text and "Line 190 of" not in corpus.train_text


def test_a_whole_txt_file_round_trips_through_its_tokenizer(tmp_path):
    rng = np.random.default_rng(0)
    speeches = []
    for i in range(300):
        words = " ".join(rng.choice(WORDS, size=rng.integers(3, 12)))
        speeches.append(f"{'Ber.' if i % 2 else 'Fran.'}\n  {words.capitalize()}, caf\u00e9 \u2014 {i}.  \n")
    text = "\n".join(speeches) + "\n\n\n   the end, with no newline"
    path = tmp_path / "play.txt"
    path.write_text(text, encoding="utf-8")
    s = tiny_settings(tmp_path, path, num_merges=80)
    corpus = read(path, s)
    _, _, tokenizer = train.start_model(corpus, s)
    val_stream = train.prepare_data(corpus, tokenizer, s).val_stream
    ids = tokenizer.encode(read_text(path))
    assert tokenizer.decode(ids) == text
    assert tokenizer.decode(list(val_stream)) == corpus.val_text  # the held-out ids, exactly its text


def test_max_rows_says_how_many_rows_are_used_and_zero_uses_all(tmp_path):
    path = write_corpus(tmp_path / "c.csv", rows=300)
    cut = read(path, tiny_settings(tmp_path, path, max_rows=100))
    assert "the first 100 of 300 rows" in cut.described and "--max_rows 0 uses them all" in cut.described
    every = read(path, tiny_settings(tmp_path, path, max_rows=0))
    assert every.described.startswith("300 rows") and "first" not in every.described
    assert len((every.train_text + every.val_text).splitlines()) == 300


def test_train_and_talk_count_a_csvs_characters_the_same_way(tmp_path, corpus, tiny_checkpoint):
    read_in = read(corpus, tiny_settings(tmp_path, corpus))
    characters = len(read_in.train_text) + len(read_in.val_text)  # what model.json records and talk.py says
    assert read_in.described == f"40 rows, {characters:,} characters with each row's newline"
    assert characters == sum(len(row) + 1 for row in read_rows(corpus, "text", 0)[0])
    assert read_in.kind == "rows"
    assert checkpoint.read_record(tiny_checkpoint / "model.json")["corpus"]["kind"] == "rows"  # a run of a CSV


@pytest.mark.parametrize("name", ["notes.md", "book.text", "README", "play.TXT"])
def test_any_file_but_a_csv_trains_as_text(tmp_path, name):
    path = tmp_path / name
    text = "".join(f"Line {i}, with, commas; and \"quotes\".\n\n" for i in range(120))  # a CSV reader would choke
    path.write_text(text, encoding="utf-8")
    read_in = read(path, tiny_settings(tmp_path, path))
    assert read_in.kind == "text" and read_in.train_text + read_in.val_text == text


@pytest.mark.parametrize("encoding, said", [("utf-16", "UTF-16 text"), ("utf-16-le", "UTF-16 text"),
                                             ("utf-32", "UTF-32 text"), ("cp1252", "in another encoding")])
def test_a_text_in_another_encoding_is_named_with_the_fix(tmp_path, encoding, said):
    path = tmp_path / "notes.txt"
    path.write_bytes("Zo\u00eb sang.\nThe end.\n".encode(encoding))
    with pytest.raises(ValueError, match=rf"cannot read .*notes.txt: it is {re.escape(said)}.*, not UTF-8; save it as "
                                         rf"UTF-8, in an editor or with iconv -f \S+ -t UTF-8 {re.escape(str(path))} > "
                                         rf"{re.escape(str(tmp_path / 'notes-utf8.txt'))}"):
        read_text(path)


@pytest.mark.parametrize("data, said", [
    (b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 8, "is an executable (ELF), not text"),
    (b"PK\x03\x04" + bytes(100), "is a zip archive"),
    (bytes([0, 1, 0, 2, 0, 3, 0, 255]) * 400, "holds NUL bytes, so it is binary data, not text"),  # not UTF-16: 0s and 1s
])
def test_a_file_that_is_not_text_is_called_what_it_is(tmp_path, data, said):
    path = tmp_path / "my.txt"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=re.escape(said)):
        read_text(path)


def test_an_executable_is_not_called_utf16():
    data = Path(sys.executable).resolve().read_bytes()[:20_000]  # the case: the start of a program
    assert "UTF-16" not in str(corpus.not_utf8(Path("python.bin"), data))


def test_a_small_csv_is_told_in_words_that_read_right(tmp_path):
    path = tmp_path / "three.csv"
    path.write_text("text\nThe cat sat.\n\"\"\nThe dog ran off.\n", encoding="utf-8")
    described = read(path, tiny_settings(tmp_path, path, val_fraction=0.5)).described
    assert described.startswith("2 rows, ") and "(1 empty row left out)" in described and "first" not in described


def test_plural_says_one_and_many():
    assert [wording.plural(n, "merge") for n in (0, 1, 2, 2000)] == ["0 merges", "1 merge", "2 merges", "2,000 merges"]


# --- evaluation ---------------------------------------------------------------------------------

def test_evaluate_scores_every_token_after_the_first_once(tiny_cfg, tiny_params):
    stream = np.array([1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 6])  # 10 targets: windows of 4, 4, then the last 2
    token_chars = np.array([1, 2, 3, 1, 2, 3, 4])
    nats, bpc = train.evaluate(tiny_params, tiny_cfg, stream, 4, token_chars)
    total = 0.0
    for start, stop in ((0, 4), (4, 8), (8, 10)):
        logits, _ = forward(tiny_params, stream[start: stop], tiny_cfg)
        log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        total -= log_probs[np.arange(stop - start), stream[start + 1: stop + 1]].sum()
    assert nats == pytest.approx(total / 10, rel=1e-12)
    assert bpc == pytest.approx(total / np.log(2) / token_chars[stream[1:]].sum(), rel=1e-12)  # the targets' characters


def test_evaluate_on_a_seeded_choice_of_windows(tiny_cfg, tiny_params):
    stream = np.arange(41) % 7
    token_chars = np.ones(7, dtype=int)
    chosen = train.evaluate(tiny_params, tiny_cfg, stream, 4, token_chars, max_tokens=12, seed=3)
    assert chosen == train.evaluate(tiny_params, tiny_cfg, stream, 4, token_chars, max_tokens=12, seed=3)
    assert chosen != train.evaluate(tiny_params, tiny_cfg, stream, 4, token_chars)


def test_evaluate_chooses_whole_windows_only_when_max_tokens_is_fewer_than_the_tokens(tiny_cfg, tiny_params):
    stream = np.array([1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 6])  # 10 targets: windows of 4, 4, then the last 2
    token_chars = np.ones(7, dtype=int)
    every = train.evaluate(tiny_params, tiny_cfg, stream, 4, token_chars)
    assert train.evaluate(tiny_params, tiny_cfg, stream, 4, token_chars, max_tokens=10) == every  # all 10: every one
    one = train.evaluate(tiny_params, tiny_cfg, stream, 4, token_chars, max_tokens=1)
    assert one == train.evaluate(tiny_params, tiny_cfg, stream, 4, token_chars, max_tokens=4)  # at least one window
    assert one != train.evaluate(tiny_params, tiny_cfg, stream, 4, token_chars, max_tokens=8) != every  # two windows


# --- training -----------------------------------------------------------------------------------

def test_training_loss_falls_well_below_its_start(tmp_path, corpus):
    run = train.train(tiny_settings(tmp_path / "ck", corpus, max_steps=200, eval_interval=100, lr_max=1e-2))
    progress = checkpoint.read_record(run / "resume.json")
    losses = progress["step_losses"]
    assert np.mean(losses[-10:]) < 0.7 * np.mean(losses[:5])  # about 0.5 here; a step that does not descend stays at 1
    history = progress["history"]
    assert history[-1]["val_loss"] < history[0]["val_loss"]


def test_same_seed_gives_bit_identical_checkpoints(tmp_path, corpus):
    folders = [train.train(tiny_settings(tmp_path / name, corpus, max_steps=20, eval_interval=10)) for name in "ab"]
    for file in ("model.npz", "model.tok.json", "resume.npz", "losses.csv"):
        assert (folders[0] / file).read_bytes() == (folders[1] / file).read_bytes(), file
    assert sorted(path.name for path in (tmp_path / "a").iterdir()) == ["runs"]  # nothing is written beside the runs
    meta = [checkpoint.read_record(run / "model.json") for run in folders]
    for m in meta:
        m.pop("trained_at"), m.pop("run")
        m["settings"].pop("checkpoint")
    assert meta[0] == meta[1]


def test_a_saved_state_streams_into_its_file_as_the_archive_numpy_reads(tmp_path):
    """save_resume_state writes the .npz straight into its file, holding no second copy of the arrays (a
    GPT-2 124M's state is 1.9 GB), in the bytes of zipfile's writestr of each array's .npy, as before."""
    import io
    import tracemalloc
    import zipfile
    params = {"W": np.arange(600_000, dtype=np.float32).reshape(1000, 600), "b": np.ones(600, np.float32)}
    opt_state = {"m": np.full(600_600, 0.5, np.float32), "v": np.full(600_600, 0.25, np.float32), "t": 3}
    tracemalloc.start()
    try:
        checkpoint.save_resume_state(tmp_path, params, opt_state, {"step": 3})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    total = sum(a.nbytes for a in params.values()) + opt_state["m"].nbytes + opt_state["v"].nbytes  # 7.2 MB
    assert peak < total / 2, (peak, total)  # numpy writes an array in pieces of up to 16 MiB: here W, 2.4 MB
    expected = io.BytesIO()
    arrays = {**{f"param.{name}": a for name, a in params.items()}, "adam.m": opt_state["m"], "adam.v": opt_state["v"]}
    with zipfile.ZipFile(expected, "w", zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, array, allow_pickle=False)
            archive.writestr(zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0)), member.getvalue())
    assert (tmp_path / "resume.npz").read_bytes() == expected.getvalue()
    assert checkpoint.read_record(tmp_path / "resume.json")["resume_sha256"] == checkpoint.sha256_of(tmp_path / "resume.npz")
    with np.load(tmp_path / "resume.npz") as loaded:
        assert np.array_equal(loaded["param.W"], params["W"]) and loaded["adam.m"].dtype == np.float32


def test_two_slices_give_bit_identical_checkpoints_on_threads_or_processes_and_are_recorded(tmp_path, corpus,
                                                                                            monkeypatch):
    # the batch is cut into two slices, one per thread or process: the result must be the same every run, either way
    one = train.train(tiny_settings(tmp_path / "one", corpus, max_steps=10, eval_interval=10))
    assert checkpoint.read_record(one / "model.json")["slices"] == 1  # 0 chose one thread for this tiny model
    monkeypatch.setattr(parallel, "threads_for", lambda *args, **kwargs: 2)  # as for a larger model
    folders = [train.train(tiny_settings(tmp_path / name, corpus, max_steps=10, eval_interval=10, processes=processes))
               for name, processes in (("a", 0), ("b", 0), ("c", 2))]  # two threads, twice; two processes
    for folder in folders[1:]:
        for file in ("model.npz", "resume.npz", "losses.csv"):
            assert (folders[0] / file).read_bytes() == (folder / file).read_bytes(), file
        assert checkpoint.read_record(folder / "model.json")["slices"] == 2
    assert (one / "model.npz").read_bytes() != (folders[0] / "model.npz").read_bytes()
    # (the two runs differ in float32 rounding, which Adam blows up where a gradient is pure rounding,
    # as bk's is; tests/test_parallel.py checks the sliced gradients against the whole batch's)


@pytest.mark.parametrize("stop_step, length, threads", [(7, {"epochs": 2}, 1), (100, {"epochs": 2}, 1),  # epochs 1, 2
                                                        (13, {"max_steps": 30, "eval_interval": 10}, 1),  # mid-epoch
                                                        (13, {"max_steps": 30, "eval_interval": 10}, 2),  # 2 threads
                                                        (13, {"max_steps": 30, "eval_interval": 10, "norm": "rmsnorm",
                                                              "positions": "rope", "mlp": "swiglu", "kv_heads": 1,
                                                              "qk_norm": True, "bias": False, "tied_head": True},
                                                         1)])  # today's options
def test_interrupted_and_resumed_equals_uninterrupted(tmp_path, corpus, stop_step, length, threads, monkeypatch):
    monkeypatch.setattr(parallel, "threads_for", lambda *args, **kwargs: threads)  # every batch shared by so many
    whole = train.train(tiny_settings(tmp_path / "whole", corpus, patience=0, **length))
    progress = checkpoint.read_record(whole / "resume.json")
    every = progress["total_steps"] // 2 if "epochs" in length else length["eval_interval"]  # each epoch's end, or 10
    validated = [*range(every, progress["total_steps"], every), progress["total_steps"]]
    assert [entry["step"] for entry in progress["history"]] == validated
    s = tiny_settings(tmp_path / "parts", corpus, patience=0, **length)
    with monkeypatch.context() as pressing:
        ctrl_c_at(pressing, stop_step)
        with pytest.raises(SystemExit) as stopped:
            train.train(s)
    assert stopped.value.code == 130
    parts = run_folder(tmp_path / "parts")
    assert checkpoint.read_record(parts / "resume.json")["step"] == stop_step
    train.train(s, resume_from=parts)
    for file in ("model.npz", "resume.npz", "losses.csv"):
        assert (whole / file).read_bytes() == (parts / file).read_bytes(), file


def test_resume_takes_a_name_or_the_latest_interrupted_run_and_refuses_a_finished_one(tmp_path, corpus,
                                                                                        monkeypatch, capsys):
    s = tiny_settings(tmp_path / "ck", corpus, max_steps=20, eval_interval=10)
    finished = train.train(s, name="finished")
    with pytest.raises(ValueError, match="no interrupted run in .* to resume"):
        runs.resume_settings(s, [], "", SettingsParser(config, "test"))
    with pytest.raises(ValueError, match="the run finished is finished"):
        runs.resume_settings(s, [], "fin", SettingsParser(config, "test"))  # by the start of its name
    ctrl_c_at(monkeypatch, 5)
    with pytest.raises(SystemExit):
        train.train(s, name="cut")
    monkeypatch.undo()
    said = (f"interrupted after step 5 of 20; the state is saved in {tmp_path}/ck/runs/cut/. Resume with: python "
            f"train.py --resume cut --checkpoint {tmp_path}/ck\nit had not validated a model yet, so there is none "
            f"to talk to\n")
    out, err = capsys.readouterr()
    assert err.endswith(said) and out.endswith("\n" + said)  # on stderr, and in the log where stdout is one
    train.train(s, name="later")  # a run after the interrupted one: --resume still finds the interrupted one
    _, folder = runs.resume_settings(s, [], "", SettingsParser(config, "test"))
    assert folder == tmp_path / "ck" / "runs" / "cut" != finished
    assert runs.resume_settings(s, [], "cut", SettingsParser(config, "test"))[1] == folder
    moved = tmp_path / "elsewhere" / "my run"
    moved.parent.mkdir()
    folder.replace(moved)
    monkeypatch.chdir(tmp_path)
    for spelling in (str(moved), "elsewhere/my run", "./elsewhere/../elsewhere/my run"):
        resumed, found = runs.resume_settings(tiny_settings("ck", corpus), [spelling], spelling,
                                              SettingsParser(config, "test"))
        assert found == Path(spelling) and resumed.max_steps == 20
    resumed = run_main("train.py", "--resume", "elsewhere/my run")
    assert resumed.returncode == 0 and "resuming the run my run at step 5 of 20" in resumed.stdout, resumed.stderr
    assert checkpoint.read_record(moved / "resume.json")["step"] == 20
    assert checkpoint.load(moved).meta["steps"] == 20  # its best model, saved in the folder it was moved to


def test_progress_off_a_terminal_is_plain_lines_not_redraws(tmp_path, corpus, capsys, monkeypatch):
    monkeypatch.setattr(run_log, "LOG_SECONDS", 0.0)  # a line at every step, where it would be one every 10 s
    train.train(tiny_settings(tmp_path / "ck", corpus, max_steps=12, eval_interval=6))
    progress = capsys.readouterr().err  # captured: not a terminal
    assert "\r" not in progress and "\033" not in progress
    lines = progress.splitlines()
    assert len(lines) >= 10 and all(line.startswith("step ") and "tok/s" in line and "to go" in line for line in lines)


def test_max_steps_fixes_the_run_and_validates_every_eval_interval(tmp_path, corpus):
    run = train.train(tiny_settings(tmp_path / "ck", corpus, max_steps=25, eval_interval=10))
    progress = checkpoint.read_record(run / "resume.json")
    assert progress["step"] == progress["total_steps"] == 25 and len(progress["step_losses"]) == 25
    assert [entry["step"] for entry in progress["history"]] == [10, 20, 25]  # and the last step
    model = checkpoint.load(run)
    saved = np.load(run / "model.npz")
    assert list(model.params) == list(saved.files)
    assert all(np.array_equal(model.params[k], saved[k]) and model.params[k].dtype == np.float32 for k in saved.files)
    assert model.meta["corpus"]["sha256"] == checkpoint.sha256_of(corpus)
    assert model.meta["versions"]["numpy"] == np.__version__


@pytest.fixture
def trained(tmp_path, tiny_checkpoint):
    """A home folder holding one finished run: a copy of the tiny checkpoint's."""
    shutil.copytree(tiny_checkpoint.parent.parent, tmp_path / "ck")
    return tmp_path / "ck"


def test_a_damaged_file_is_called_damaged_with_what_to_do(trained):
    run = run_folder(trained)
    (run / "model.npz").write_bytes((run / "model.npz").read_bytes()[:-10])
    with pytest.raises(ValueError, match=rf"{run}/model.npz is damaged \(.*\): restore it from a copy, or remove its "
                                         rf"run \(python train.py --remove {run.name} --checkpoint {trained}\) and "
                                         rf"train again"):
        checkpoint.load(run)
    assert "train a model" not in runs.runs_table(trained)


def test_failed_write_leaves_the_previous_checkpoint_loadable(trained, monkeypatch):
    run = run_folder(trained)
    before = checkpoint.load(run)

    def disk_full(fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", disk_full)
    params = {k: v + 1 for k, v in before.params.items()}
    with pytest.raises(OSError):
        checkpoint.save_model(run, params, before.cfg, before.tokenizer, {"note": "never written"})
    monkeypatch.undo()
    after = checkpoint.load(run)
    assert all(np.array_equal(before.params[k], after.params[k]) for k in before.params)


@pytest.mark.parametrize("renames_before_the_kill", [1, 2])
def test_a_save_cut_between_its_renames_is_read_whole_and_finished_by_the_next_save(trained, monkeypatch, renames_before_the_kill):
    run = run_folder(trained)
    before = checkpoint.load(run)
    real_replace, renamed = os.replace, []

    def replace_then_stop(source, target):
        real_replace(source, target)
        renamed.append(target)
        if len(renamed) == renames_before_the_kill:
            raise KeyboardInterrupt  # as a kill right there would leave the folder
    monkeypatch.setattr(os, "replace", replace_then_stop)
    params = {k: v + 1 for k, v in before.params.items()}
    with pytest.raises(KeyboardInterrupt):
        checkpoint.save_model(run, params, before.cfg, before.tokenizer, {"note": "the new best"})
    monkeypatch.undo()
    assert checkpoint.sha256_of(run / "model.npz") != checkpoint.read_record(run / "model.json")["weights_sha256"]
    after = checkpoint.load(run)  # reads the save as it was: model.json's new version waits under its staged name
    assert after.meta["note"] == "the new best" and all(np.array_equal(params[k], after.params[k]) for k in params)


def test_every_run_keeps_its_model_and_talk_reads_the_latest_finished(trained, corpus, monkeypatch):
    first = run_folder(trained)
    first_weights = (first / "model.npz").read_bytes()
    second = train.train(tiny_settings(trained, corpus, max_steps=10, eval_interval=10, seed=7))
    assert runs.default_run(trained) == second and (first / "model.npz").read_bytes() == first_weights
    ctrl_c_at(monkeypatch, 15)  # a third run, interrupted after its first validation: it does not become the default
    with pytest.raises(SystemExit):
        train.train(tiny_settings(trained, corpus, max_steps=30, eval_interval=10, seed=8))
    third = run_folder(trained)
    assert third not in (first, second) and (third / "model.json").exists()
    assert runs.default_run(trained) == second
    assert sorted(path.name for path in trained.iterdir()) == ["runs"]  # nothing is written beside the runs


def test_a_model_from_before_run_folders_still_loads_and_is_never_touched(trained, corpus):
    run = run_folder(trained)
    for name in ("model.npz", "model.tok.json", "model.json"):  # an old home: the model on top, no runs/
        (run / name).replace(trained / name)
    shutil.rmtree(trained / "runs")
    old = {name: (trained / name).read_bytes() for name in ("model.npz", "model.tok.json", "model.json")}
    assert runs.default_run(trained) == trained and checkpoint.load(trained).folder == trained
    new = train.train(tiny_settings(trained, corpus, max_steps=10, eval_interval=10, seed=7))
    assert runs.default_run(trained) == new
    assert {name: (trained / name).read_bytes() for name in old} == old


def test_a_diverging_run_says_so_and_leaves_the_earlier_runs(trained, corpus, capsys):
    run = run_folder(trained)
    before = (run / "model.npz").read_bytes()
    with pytest.raises(ValueError, match="had not validated a model yet, so there is none to talk to") as error:
        train.train(tiny_settings(trained, corpus, epochs=1, lr_max=1e9, grad_clip=1e9))
    assert "the loss became" in str(error.value)
    assert (run / "model.npz").read_bytes() == before and runs.default_run(trained) == run
    assert "Warning" not in capsys.readouterr().err  # one line, no numpy overflow warnings on the way
    assert sorted(path.name for path in (trained / "runs").iterdir()) == [run.name]  # it saved nothing: no folder


def test_a_run_that_crashed_before_it_saved_leaves_no_folder(tmp_path, corpus, monkeypatch):
    s = tiny_settings(tmp_path / "ck", corpus, max_steps=50, eval_interval=25)
    calls = []
    real_clip = train.clip_grad_norm

    def crashing_clip(grads, max_norm):
        calls.append(max_norm)
        if len(calls) == 3:
            raise RuntimeError("a bug at step 3")
        return real_clip(grads, max_norm)

    monkeypatch.setattr(train, "clip_grad_norm", crashing_clip)
    with pytest.raises(RuntimeError, match="a bug at step 3"):  # a bug keeps its exception
        train.train(s)
    assert list((tmp_path / "ck" / "runs").iterdir()) == []


def test_a_run_stops_once_patience_validations_did_not_beat_the_best(tmp_path, corpus, monkeypatch):
    val_losses = iter([3.0, 2.0, 2.5, 2.1, 2.2, 1.0, 0.5])  # the best is the second: three worse ones after it stop

    def scripted(*args):
        return next(val_losses), 1.0
    monkeypatch.setattr(train, "evaluate", scripted)
    run = train.train(tiny_settings(tmp_path / "ck", corpus, max_steps=70, eval_interval=10, patience=3))
    progress = checkpoint.read_record(run / "resume.json")
    assert progress["step"] == 50 and progress["done"] and progress["total_steps"] == 70
    assert checkpoint.load(run).meta["best_step"] == 20
    assert runs.default_run(tmp_path / "ck") == run  # a finished run
    with pytest.raises(ValueError, match="is finished"):
        runs.run_to_resume(tmp_path / "ck", run.name)


# --- runs by name -------------------------------------------------------------------------------

def test_a_run_takes_its_name_and_a_default_name_says_when_and_on_what(tmp_path, corpus):
    s = tiny_settings(tmp_path / "ck", corpus, max_steps=5, eval_interval=5)
    named = train.train(s, name="village")
    assert named == tmp_path / "ck" / "runs" / "village" and checkpoint.load(named).meta["run"] == "village"
    default = train.train(s)
    assert re.fullmatch(r"\d{8}-\d{4}-corpus", default.name), default.name  # corpus.csv's run, to the minute
    again = train.train(s)
    assert again.name in (f"{default.name}-2", runs.default_run_name(corpus, datetime.now(timezone.utc)))


def test_default_run_name_docstring_example():
    at = datetime(2026, 12, 1, 2, 30, 59, tzinfo=timezone.utc)
    assert runs.default_run_name("data/sample.csv", at) == "20261201-0230-sample"
    assert runs.default_run_name("my notes (v2).txt", at) == "20261201-0230-my-notes-v2"  # a folder name
    assert runs.default_run_name("...txt", at) == "20261201-0230-corpus"


def test_a_bad_or_taken_name_is_one_line_and_overwrites_nothing(trained, corpus):
    run = run_folder(trained)
    before = {path: path.read_bytes() for path in trained.rglob("*") if path.is_file()}
    for name, message in [("a/b", "--name 'a/b' cannot name a run's folder"), ("", "--name '' cannot name"),
                          ("  ", "--name '  ' cannot name"), (".hidden", "--name '.hidden' cannot name"),
                          (run.name, f"there is already a run named {run.name!r} in {trained}/runs/; choose another "
                                     f"--name")]:
        line = one_line_error(run_main("train.py", *tiny_args(trained, corpus), "--name", name))
        assert message in line, (name, line)
    assert {path: path.read_bytes() for path in trained.rglob("*") if path.is_file()} == before
    line = one_line_error(run_main("train.py", "--resume", "--name", "x", "--checkpoint", trained))
    assert "argument --name: not allowed with argument --resume" in line


def test_the_time_to_go_follows_the_recent_speed():
    progress = run_log.Progress(total_steps=1000, first_step=0, tokens_per_step=10)
    start = progress.recent[0][0]
    for step in range(1, 101):  # 100 steps at 10 a second
        rate = progress.rate(start + step / 10, step)
    assert rate == pytest.approx(10)
    for step in range(101, 201):  # then the machine gets busy: 2 a second, for 50 s
        rate = progress.rate(start + 10 + (step - 100) / 2, step)
    assert rate == pytest.approx(2, rel=0.05)  # the last 30 s, where the whole run's mean says 200 / 60 s = 3.3
    assert wording.duration((1000 - 200) / rate) == "6 min 40 s"


def test_the_time_to_go_is_at_most_while_patience_may_stop_the_run(monkeypatch, capsys):
    monkeypatch.setattr(run_log, "LOG_SECONDS", 0)
    for may_stop_early, shown in ((True, "  at most "), (False, "  0 min ")):
        run_log.Progress(100, 0, 256, may_stop_early).update(10, 2.5, 1e-3)
        assert shown in capsys.readouterr().err


def test_what_is_said_after_the_progress_line_starts_a_line_of_its_own(capsys):
    progress = run_log.Progress(100, 0, 256)
    progress.terminal, progress.drawn = True, True  # a progress line is drawn on a terminal
    with pytest.raises(KeyboardInterrupt), progress:  # a second Ctrl-C leaves the loop at once
        raise KeyboardInterrupt
    assert capsys.readouterr().err == "\r\033[K"


@pytest.mark.parametrize("seconds, said", [(239.6, "4 min 00 s"), (59.5, "1 min 00 s"), (59.4, "0 min 59 s"),
                                           (3725, "62 min 05 s"), (0.2, "0 min 00 s")])
def test_duration_never_says_60_s(seconds, said):
    assert wording.duration(seconds) == said


# --- the command line ---------------------------------------------------------------------------

def test_the_command_line_trains_on_the_sample_when_the_default_corpus_is_absent(tmp_path):
    # run from an empty folder, so data/corpus.csv (the default corpus_path) does not exist there
    result = run_main("train.py", "--max_steps", "4", "--eval_interval", "2", "--max_rows", "60", "--num_merges",
                      "20", "--emb_dim", "8", "--checkpoint", tmp_path / "ck", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "training on the bundled sample corpus, sample.csv" in result.stdout
    assert "corpus: 60 rows" in result.stdout
    assert "step      2:" in result.stdout and "bits/char" in result.stdout and "sample:" in result.stdout
    assert checkpoint.load(run_folder(tmp_path / "ck")).cfg.emb_dim == 8


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
    texts = {"empty.txt": b"", "blank.txt": b" \n\n\t\n", "latin1.txt": "caf\u00e9 cr\u00e8me".encode("latin-1"),
             "binary.txt": b"\x89PNG\r\n\x1a\n\x00\x00", "short.txt": b"tiny\n"}
    for name, data in texts.items():
        (tmp_path / name).write_bytes(data)
    cases = [
        (["--corpus_path", str(tmp_path / "nope.csv")], "no corpus at"),
        (["--corpus_path", str(corpus), "--corpus_column", "body"], "has no column 'body'; its columns are ['id', 'text']"),
        (["--corpus_path", str(empty)], "holds no text"),
        (["--corpus_path", str(short)], "fewer than one window"),
        (["--corpus_path", str(one_row)], "cannot be split"),
        (["--corpus_path", str(binary)], "holds NUL bytes, so it is binary data, not text"),
        (["--corpus_path", str(corpus), "--checkpoint", str(blocked / "ck")], "cannot write checkpoints"),
        (["--epochz", "3"], "unrecognized arguments: --epochz"),
        (["--epochs", "three"], "invalid int value: 'three'"),
        (["--seq_len", "64"], "seq_len (64) must not exceed context_len (32)"),
        (["--top_p", "1.5"], "top_p must be in (0, 1]"),
        (["--dtype", "float16"], "dtype must be float32 or float64"),
        (["--processes", "-1"], "processes must be 0 (this process's threads, as many as pay), 1 (this thread "
                                "alone) or more"),
        (["--resume", "--checkpoint", str(tmp_path / "none")], "no interrupted run in"),
        (["--resume", "nosuchrun", "--checkpoint", str(tmp_path / "none")], "no run in"),
        (["--temperature", "-1"], "temperature must be a finite number"),
        (["--corpus_path", str(tmp_path / "empty.txt")], "holds no text"),
        (["--corpus_path", str(tmp_path / "blank.txt")], "holds no text (only whitespace)"),
        (["--corpus_path", str(tmp_path / "latin1.txt")], "in another encoding (Latin-1, Windows-1252?), not UTF-8"),
        (["--corpus_path", str(tmp_path / "binary.txt")], "is a PNG image, not text"),
        (["--corpus_path", str(tmp_path / "short.txt")], "fewer than one window"),
        (["--recipe", "novel"], "there is no recipe 'novel'; the recipes are: book"),
        (["--max_steps", "-1"], "max_steps must be 0 or more"),
        (["--eval_interval", "0"], "eval_interval must be positive"),
        (["--emb_dim", "30", "--num_heads", "4"], "emb_dim (30) must be divisible by num_heads (4)"),
        (["--num_layers", "0"], "num_layers must be a positive integer"),
        (["--vocab_size", "16"], "unrecognized arguments: --vocab_size 16"),
        (["--norm", "batchnorm"], "norm must be 'layernorm' or 'rmsnorm', got 'batchnorm'"),
    ]
    for args, message in cases:
        home = [] if "--checkpoint" in args else ["--checkpoint", tmp_path / "ck"]
        line = one_line_error(run_main("train.py", *args, *home))
        assert message in line, (args, line)
    assert not (tmp_path / "ck" / "runs").exists() or not any((tmp_path / "ck" / "runs").iterdir())  # nothing written


def test_bad_input_does_not_touch_an_earlier_checkpoint(trained, tmp_path):
    before = {path: path.read_bytes() for path in trained.rglob("*") if path.is_file()}
    one_line_error(run_main("train.py", "--corpus_path", tmp_path / "missing.csv", "--checkpoint", trained))
    assert {path: path.read_bytes() for path in trained.rglob("*") if path.is_file()} == before


def test_a_mistyped_setting_suggests_the_nearest(tmp_path):
    for args, suggestion in [(["--max_step", "20"], "(did you mean --max_steps?)"),
                             (["--epochz=3", "--lr", "1"], "(did you mean --epochs for --epochz?)"),
                             (["--resum"], "(did you mean --resume?)")]:
        line = one_line_error(run_main("train.py", *args, "--checkpoint", tmp_path / "ck"))
        assert line == f"train.py: unrecognized arguments: {' '.join(args)} {suggestion} (see --help)", line
    line = one_line_error(run_main("train.py", "--zebra", "1"))
    assert line == "train.py: unrecognized arguments: --zebra 1 (see --help)"  # nothing near: no guess


def test_a_recipe_sets_its_values_and_later_settings_win():
    p = SettingsParser(config, "test")
    s = p.settings(p.parse(["--recipe", "book", "--lr_max", "0.0005"]))
    book = config.RECIPES["book"]
    assert all(getattr(s, name) == value for name, value in book.items() if name != "lr_max")
    assert s.lr_max == 0.0005
    p = SettingsParser(config, "test")
    assert p.settings(p.parse([])).emb_dim == config.emb_dim  # defaults untouched


def test_help_lists_every_setting_with_its_comment_and_each_recipe_on_a_line_of_its_own():
    result = run_main("train.py", "--help")
    assert result.returncode == 0
    for name in settings.defaults(config):
        assert f"--{name}" in result.stdout, name
    assert "decoupled weight decay" in result.stdout and "--resume" in result.stdout
    lines = result.stdout.splitlines()
    for name, use in config.RECIPE_USES.items():
        first = next(line.strip() for line in lines if line.strip().startswith(f"{name}: "))
        assert use.startswith(first[len(name) + 2:])
    assert config.RECIPE_USES.keys() == config.RECIPES.keys()


def test_ctrl_c_saves_a_resumable_state_and_exits_130(tmp_path, corpus):
    """As a person runs it, `python train.py | tee log`, and Ctrl-C, which stops tee too: the signal comes once
    the run has printed its first validation, a run of a million steps that never stops early. Then a --resume
    that changes a setting, refused in one line with exit status 2."""
    home = tmp_path / "ck"
    with started("train.py", *tiny_args(home, corpus, max_steps=10 ** 6, eval_interval=20, patience=0)) as process:
        for line in process.stdout:  # the first validation: a model, and the state to resume, are saved
            if line.startswith("step     20:"):
                break
        else:
            pytest.fail(process.stderr.read())
        process.stdout.close()  # as `| tee log` is when the same Ctrl-C stops tee: what is printed next has no reader
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err and "Broken pipe" not in err and "Exception ignored" not in err, err
    said = re.fullmatch(rf"(?:step .*\n)*interrupted after step ([\d,]+) of 1,000,000; the state is saved in "
                        rf"{home}/runs/(\S+)/\. Resume with: python train\.py --resume \2 --checkpoint {home}\n"
                        rf"its best model \(step ([\d,]+)\) is in {home}/runs/\2/\n", err)
    assert said, err
    step, best = (int(said[group].replace(",", "")) for group in (1, 3))
    assert checkpoint.read_record(home / "runs" / said[2] / "resume.json")["step"] == step >= best >= 20
    assert checkpoint.load(home / "runs" / said[2]).meta["steps"] == best
    for given, run in ((["--lr_max", "0.5"], run_script), (["--lr_max=0.5"], run_main)):  # once as a person runs it
        refused = run("train.py", "--resume", "--checkpoint", home, *given)
        assert refused.returncode == 2 and "drop --lr_max" in refused.stderr
        assert one_line_error(refused).startswith("error: --resume continues with the settings of the interrupted run")


# --- what a newcomer met (issue 32): a seed, a recipe, runs removed, finished or extended --------------

@pytest.mark.parametrize("script, extra", [("train.py", ["--corpus_path", "no-such-corpus.csv"]),
                                           ("generate.py", ["a prompt"]), ("talk.py", [])])
@pytest.mark.parametrize("seed", ["-3", str(2 ** 64)])
def test_a_bad_seed_is_one_line_before_any_work_in_every_script(script, extra, seed, tmp_path):
    result = run_main(script, "--seed", seed, "--checkpoint", tmp_path / "nothing-here", *extra, cwd=tmp_path)
    assert one_line_error(result) == f"error: seed must be a whole number from 0 to {2 ** 64 - 1}, got {seed}"


def settings_of(**changes):
    return types.SimpleNamespace(**{**settings.defaults(config), **changes})


SMALL_GPT2 = ModelConfig(vocab_size=300, context_len=24, emb_dim=16, num_heads=4, num_layers=2, ff_dim=64,
                         ln_eps=1e-5)


def test_a_recipe_that_needs_init_from_says_so_in_one_line(tmp_path):
    # with the recipe's own values in force (seq_len 128, past config.py's context_len), as train.py applies them
    with pytest.raises(settings.SettingError, match="--recipe gpt2 fine-tunes a GPT-2: give its folder with --init_"):
        settings.check(settings_of(recipe="gpt2", **config.RECIPES["gpt2"]), config.RECIPES)
    said = one_line_error(run_main("train.py", "--recipe", "gpt2", cwd=tmp_path))
    assert said.startswith("error: --recipe gpt2 fine-tunes a GPT-2: give its folder with --init_from"), said
    assert not (tmp_path / "checkpoints").exists()


def test_a_gpt2s_own_shape_wins_over_config_and_the_recipe_and_a_recipes_seq_len_yields():
    asked = settings_of(recipe="gpt2", init_from="gpt2", **config.RECIPES["gpt2"])  # seq_len 128, from the recipe
    s = gpt2.adopt_shape(asked, SMALL_GPT2, "gpt2", given=set())
    assert (s.context_len, s.emb_dim, s.num_heads, s.num_layers, s.ff_dim, s.seq_len) == (24, 16, 4, 2, 64, 24)
    assert (asked.context_len, asked.seq_len) == (config.context_len, 128)  # new settings; the ones asked for stay


@pytest.mark.parametrize("typed, refused", [({"context_len": 64}, "--context_len 64 disagrees with the GPT-2"),
                                            ({"seq_len": 128}, "--seq_len 128 is longer than the GPT-2")])
def test_a_shape_the_person_typed_against_the_gpt2_is_refused(typed, refused):
    with pytest.raises(InputError, match=refused):
        gpt2.adopt_shape(settings_of(init_from="gpt2", **typed), SMALL_GPT2, "gpt2", given=set(typed))


def test_the_recipe_line_shows_what_is_in_force():
    s = settings_of(**{**config.RECIPES["book"], "recipe": "book", "num_merges": 200})
    line = train.recipe_line(s, given={"num_merges"})
    assert line.startswith("recipe book: num_layers 1, emb_dim 128,") and "num_merges 200 (typed)" in line
    assert "num_merges 500" not in line


@pytest.fixture
def home(tmp_path, tiny_checkpoint):
    """A home folder with a finished run (done), one killed before its first save (empty), and one killed between
    its model's save and its resume state's (model-only)."""
    runs_folder = tmp_path / "checkpoints" / "runs"
    shutil.copytree(tiny_checkpoint, runs_folder / "done")
    (runs_folder / "empty").mkdir()
    shutil.copytree(tiny_checkpoint, runs_folder / "model-only")
    for name in ("resume.npz", "resume.json"):
        (runs_folder / "model-only" / name).unlink()
    return tmp_path / "checkpoints"


def test_a_run_with_no_model_yet_is_listed_so_with_how_to_free_its_name(home):
    table = runs.runs_table(home)
    assert "no model yet" in next(line for line in table.splitlines() if " empty " in line)
    assert (f"empty has no model yet: if no training is writing to it, python train.py --remove empty --checkpoint "
            f"{home} frees its name") in table
    assert table.splitlines()[-1] == (f"python train.py --remove NAME --checkpoint {home} removes a run, its folder "
                                      f"and every file in it")
    with pytest.raises(InputError, match=f"remove that run first: python train.py --remove empty --checkpoint {home}"):
        runs.check_run_name(home, "empty")  # its name, taken, says how to free it


def test_remove_asks_naming_the_whole_path_or_takes_yes_and_removes_only_a_run_by_its_name(home, monkeypatch):
    monkeypatch.chdir(home.parent)
    relative = Path(home.name)  # --checkpoint checkpoints, as a person types it
    refused = run_main("train.py", "--remove", "done", "--checkpoint", relative)  # stdin is no terminal: it cannot ask
    assert f"--remove would remove the run done, the folder {home}/runs/done/ (finished, " in one_line_error(refused)
    for bad in ("../done", "/tmp", "..", "~", "./done", ""):
        assert "--remove takes a run's name" in one_line_error(run_main("train.py", "--remove", bad, "--checkpoint",
                                                                        home))
    assert (home / "runs" / "done" / "model.npz").exists()
    removed = run_main("train.py", "--remove", "empty", "--yes", "--checkpoint", home)
    assert removed.stdout == f"removed the run empty, the folder {home}/runs/empty/ (no model yet, 0 steps; 0 files, " \
                             f"0.0 MB)\n"
    assert not (home / "runs" / "empty").exists()


def test_remove_refuses_a_run_a_training_writes_to_saying_to_stop_it_first(home):
    with runs.locked(home / "runs" / "done"), pytest.raises(InputError) as refused:
        runs.remove(home, "done", confirmed=True)
    assert str(refused.value) == (f"a training is writing to {home}/runs/done/; stop its training first (Ctrl-C where "
                                  f"it runs: it saves what a resume needs), then remove the run")
    assert (home / "runs" / "done").exists()


def test_a_finished_run_is_extended_by_more_steps(tmp_path, corpus):
    s = tiny_settings(tmp_path / "ck", corpus, max_steps=20, eval_interval=10, patience=0)
    folder = train.train(s, name="short")
    base = ["--checkpoint", tmp_path / "ck", "--resume", "short"]
    assert "To train it further, give it more steps" in one_line_error(run_main("train.py", *base))
    extended = run_main("train.py", *base, "--max_steps", "30")
    assert extended.returncode == 0, extended.stderr
    assert "resuming the run short at step 20 of 30 (it was to take 20: the learning rate follows the cosine of the " \
           "new length)" in extended.stdout
    progress = checkpoint.read_progress(folder)
    assert (progress["step"], progress["total_steps"], progress["done"]) == (30, 30, True)


def test_a_run_without_matplotlib_says_once_how_to_get_losses_png(tmp_path, corpus, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails, as where it is not installed
    folder = train.train(tiny_settings(tmp_path / "ck", corpus, max_steps=30, eval_interval=10))
    assert capsys.readouterr().out.count(run_log.NO_PLOT) == 1 and not (folder / "losses.png").exists()


def test_a_run_being_trained_is_listed_as_training_and_not_resumed(home, capsys):
    with runs.locked(home / "runs" / "done"):  # as a training holds it
        assert runs.summarize(home / "runs" / "done").state() == "training"
        assert "training" in next(line for line in runs.runs_table(home).splitlines() if " done " in line)
        refused = run_main("train.py", "--resume", "done", "--max_steps", "999", "--checkpoint", home)
    assert "the run done is being trained now: wait for its training to finish" in one_line_error(refused)
    assert "corpus:" not in refused.stdout  # refused before the corpus is read
    assert runs.summarize(home / "runs" / "done").state() == "finished"  # the lock let go, and the try left no hold


def test_a_run_whose_resume_state_is_damaged_is_listed_so_and_its_model_still_read(home):
    resume = home / "runs" / "done" / "resume.npz"
    resume.write_bytes(resume.read_bytes()[:1000])  # truncated, as a full disk or a copy cut short leaves it
    run = runs.summarize(home / "runs" / "done")
    assert run.state() == "finished, resume DAMAGED" and not run.damaged
    assert f"done cannot resume: {resume} is damaged (it does not match resume.json)" in runs.runs_table(home)
    assert runs.default_run(home) == home / "runs" / "done"  # its model is whole: talk.py reads it
    with pytest.raises(InputError, match="resume.npz is damaged"):
        runs.run_to_resume(home, "done", extending=True)


@pytest.mark.parametrize("value, said", [("", "--checkpoint '' names nothing"),
                                         ("nowhere/run", "there is no folder nowhere/run/"),
                                         ("./notes.txt", "./notes.txt is a file, not a run's folder")])
def test_a_checkpoint_that_is_no_folder_is_said_to_be_what_it_is(home, value, said, monkeypatch):
    monkeypatch.chdir(home)
    (home / "notes.txt").write_text("not a model")
    with pytest.raises(InputError, match=re.escape(said)):
        runs.find(value, home)
    assert runs.find("runs/done/model.npz", home) == Path("runs/done")  # a model's own file names its folder


def test_yes_without_remove_is_refused_rather_than_training(tmp_path):
    refused = run_main("train.py", "--yes", "--checkpoint", tmp_path / "ck")
    assert one_line_error(refused).startswith("error: --yes goes with --remove NAME")
    assert not (tmp_path / "ck").exists()


@pytest.mark.parametrize("saved", [False, True])
def test_a_second_ctrl_c_says_what_was_kept(tmp_path, saved, capsys):
    folder = tmp_path / "ck" / "runs" / "cut"
    folder.mkdir(parents=True)
    if saved:
        (folder / "resume.json").write_text("{}")
    run = run_log.Run(folder, total_steps=100, corpus={}, step=69)
    with pytest.raises(SystemExit) as stop, run_log.finishing(run):
        raise KeyboardInterrupt
    said = capsys.readouterr().err
    assert stop.value.code == 130 and folder.exists() == saved
    if saved:
        assert f"resumes with: python train.py --resume cut --checkpoint {tmp_path / 'ck'}" in said
    else:
        assert "before the run's first validation: nothing was saved, and the run leaves no folder" in said
        assert "--resume" not in said


# --- a run is found among the runs, read with every file checked, and the system's errors are said -------------------

def test_a_folder_of_the_current_folder_named_like_a_run_survives_remove(home, monkeypatch, tmp_path):
    """The review's: `--remove victimdir --yes` deleted ./victimdir/; `--remove examples`, the project's examples/."""
    monkeypatch.chdir(tmp_path)  # home is tmp_path/checkpoints, named --checkpoint checkpoints as a person types it
    victim = tmp_path / "victimdir"
    victim.mkdir()
    (victim / "notes.txt").write_text("precious\n")
    shutil.copytree(home / "runs" / "done", home / "runs" / "examples")
    shutil.copytree(home / "runs" / "done", tmp_path / "examples")  # a folder here, named as a run is
    refused = one_line_error(run_main("train.py", "--remove", "victimdir", "--yes", "--checkpoint", "checkpoints"))
    assert refused.startswith("error: no run in checkpoints/runs/ is named 'victimdir' or starts so; ")
    assert one_line_error(run_main("train.py", "--remove", "checkpoints", "--yes", "--checkpoint", "checkpoints"))
    removed = run_main("train.py", "--remove", "examples", "--yes", "--checkpoint", "checkpoints")
    assert removed.stdout.startswith(f"removed the run examples, the folder {home}/runs/examples/ (finished")
    assert (victim / "notes.txt").read_text() == "precious\n" and (tmp_path / "examples" / "model.npz").exists()
    assert sorted(path.name for path in (home / "runs").iterdir()) == ["done", "empty", "model-only"]


def test_a_bare_name_is_a_runs_and_a_folder_is_read_where_it_is_written_as_a_path(home, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(home / "runs" / "model-only", tmp_path / "done")  # a folder here, named as a run is
    assert runs.find("done", home) == home / "runs" / "done" and runs.find("do", home) == home / "runs" / "done"
    assert runs.find("./done", home) == Path("done") and runs.find(str(tmp_path / "done"), home) == tmp_path / "done"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert runs.find("~/done", home) == tmp_path / "done"
    (tmp_path / "gpt2").mkdir()  # a GPT-2 folder, given as a bare name
    with pytest.raises(InputError, match=re.escape(f"no run in {home}/runs/ is named 'gpt2' or starts so; the folder "
                                                   f"gpt2/ here is read where it is written as a path: --checkpoint "
                                                   f"./gpt2;")):
        runs.find("gpt2", home)
    assert runs.find("gpt2/", home) == Path("gpt2")
    assert wording.written_as_path("gpt2/") and wording.written_as_path("./gpt2") and not wording.written_as_path("gpt2")
    assert wording.talk_command(Path("done")) == "python talk.py --checkpoint ./done"  # a run moved here, as a path
    assert run_log.resume_command(Path("done")) == "python train.py --resume ./done"


def test_a_folder_in_runs_that_holds_no_run_is_not_removed(home):
    notes = home / "runs" / "mynotes"
    notes.mkdir()
    (notes / "notes.txt").write_text("precious\n")
    refused = one_line_error(run_main("train.py", "--remove", "mynotes", "--yes", "--checkpoint", home))
    assert f"{notes}/ is in {home}/runs/ but is not a run's folder: it holds no model.json or resume.json, and " \
           f"holds what no training writes (notes.txt); nothing was removed" in refused
    assert (notes / "notes.txt").read_text() == "precious\n"
    assert "mynotes is not a run's folder: it holds what no training writes, and --remove leaves it" in \
        runs.runs_table(home)


def test_a_run_that_is_a_link_loses_its_link_and_its_folder_stays(home, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(home / "runs" / "done", elsewhere)
    (home / "runs" / "linked").symlink_to(elsewhere, target_is_directory=True)
    held = sorted(path.name for path in elsewhere.iterdir())
    removed = run_main("train.py", "--remove", "linked", "--yes", "--checkpoint", home)
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout == f"removed the link {home}/runs/linked to {elsewhere}/ (the folder it points to is kept)\n"
    assert not os.path.lexists(home / "runs" / "linked") and sorted(path.name for path in elsewhere.iterdir()) == held


@pytest.mark.parametrize("damage", ["[" * 200_000, '{"format": "numpy-gpt-checkpoint", "steps": 1' + "0" * 5000 + "}"],
                         ids=["nested 200,000 deep", "an integer of 5,001 digits"])
def test_a_run_whose_model_json_is_nested_deep_or_holds_a_huge_integer_blocks_no_other(home, damage):
    """The review's: such a model.json made --list, talk.py and --remove of that very run end in a traceback."""
    bad = home / "runs" / "bad"
    shutil.copytree(home / "runs" / "done", bad)
    (bad / "model.json").write_text(damage)
    (bad / ".model.json.tmp").write_text(damage)  # and the record of a save that a kill stopped before its renames
    listed = run_main("train.py", "--list", "--checkpoint", home)
    assert listed.returncode == 0 and re.search(r"^ +bad +.* DAMAGED", listed.stdout, re.M), listed.stdout
    assert f"bad is damaged: {bad}/model.json is damaged (not valid JSON: " in listed.stdout
    talked = run_main("talk.py", "--checkpoint", home, stdin="/quit\n")
    assert talked.returncode == 0 and talked.stdout.startswith("model done: ")
    assert run_main("train.py", "--remove", "bad", "--yes", "--checkpoint", home).returncode == 0
    assert not bad.exists()


def rewrite_resume_json(folder, change):
    """resume.json of a run with change(its dict) made, as an edit by hand makes it (resume.npz still matches it)."""
    progress = checkpoint.read_record(folder / "resume.json")
    change(progress)
    (folder / "resume.json").write_text(json.dumps(progress))


def without_adam_m(folder):
    """resume.npz written again without AdamW's m, and resume.json told its new sha256, as the review made it."""
    arrays = dict(np.load(folder / "resume.npz"))
    del arrays["adam.m"]
    sha256 = checkpoint.write_npz_staged(folder / "resume.npz", arrays)
    files.publish_staged([folder / "resume.npz"])
    rewrite_resume_json(folder, lambda progress: progress.update(resume_sha256=sha256))


RESUME_DAMAGE = {  # the review's: each gave a traceback on --resume
    "no adam_t": (lambda folder: rewrite_resume_json(folder, lambda p: p.pop("adam_t")), '"adam_t" is missing'),
    "no adam.m": (without_adam_m, "it does not hold this model's parameters (missing ['adam.m'])"),
    "a step of -5": (lambda folder: rewrite_resume_json(folder, lambda p: p.update(step=-5)), "out of range"),
    'a step of "7"': (lambda folder: rewrite_resume_json(folder, lambda p: p.update(step="7")),
                      '"step" is not a whole number'),
    'a history of "x"': (lambda folder: rewrite_resume_json(folder, lambda p: p.update(history="x")),
                         '"history" is not a list'),
    "a history without its losses": (lambda folder: rewrite_resume_json(folder, lambda p: p.update(history=[{"step": 9}])),
                                 '"history" is not validations at steps 1 to'),
}


@pytest.mark.parametrize("damage", RESUME_DAMAGE)
def test_a_damaged_resume_state_is_named_in_one_line_by_resume_and_list(home, damage):
    make, said = RESUME_DAMAGE[damage]
    folder = home / "runs" / "done"
    make(folder)
    refused = one_line_error(run_main("train.py", "--resume", "done", "--max_steps", "9999", "--checkpoint", home))
    assert said in refused and "resume." in refused and f"--remove done --checkpoint {home}" in refused, refused
    assert re.search(r"^\*? +done +", runs.runs_table(home), re.M)  # and the listing still lists it


def npz_of_headers(path, shapes):
    """An .npz whose arrays are headers alone: each says it holds float32 numbers of its shape, and holds none."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, shape in shapes.items():
            with archive.open(f"{name}.npy", "w") as stream:
                np.lib.format.write_array_header_1_0(stream, {"descr": "<f4", "fortran_order": False, "shape": shape})
    return checkpoint.sha256_of(path)


@pytest.mark.parametrize("claim", ["a shape model.json does not say", "the shapes model.json says, of a huge model"])
def test_an_npz_header_that_asks_for_any_memory_is_refused_before_any_array_is_read(home, claim, monkeypatch):
    """The review's: a header of (10^6, 10^6) made loading ask for 3.64 TiB; and one just under free memory would be
    given it. No array is read until every header agrees with model.json, within the bytes of the file."""
    folder = home / "runs" / "done"
    meta = checkpoint.read_record(folder / "model.json")
    if claim == "a shape model.json does not say":
        shapes = {**transformer.param_shapes(ModelConfig(**meta["model"])), "tok_emb": (10 ** 6, 10 ** 6)}
    else:
        meta["model"].update(vocab_size=10 ** 6, emb_dim=10 ** 4, num_heads=1, ff_dim=10 ** 4)
        shapes = transformer.param_shapes(ModelConfig(**meta["model"]))
    meta["weights_sha256"] = npz_of_headers(folder / "model.npz", shapes)
    (folder / "model.json").write_text(json.dumps(meta))

    def read_array(*args, **kwargs):
        raise AssertionError("an array was read before its header was checked")
    monkeypatch.setattr(np.lib.format, "read_array", read_array)
    said = re.escape("tok_emb has shape (1000000, 1000000), model.json says") if claim.startswith("a shape") else \
        r"its headers ask for [\d,]{14,} bytes of numbers, and the file holds [\d,]+\)"
    with pytest.raises(InputError, match=re.escape(f"{folder}/model.npz is damaged (") + said):
        checkpoint.load(folder)


def disk_full_from(monkeypatch, count):
    """The disk fills at the count-th file flushed to it (os.fsync, 1, 2, ...): that flush and every later one fail."""
    real, flushed = os.fsync, []

    def fsync(fd):
        flushed.append(fd)
        if len(flushed) >= count:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)
    monkeypatch.setattr(os, "fsync", fsync)


# a validation's save flushes model.tok.json, model.npz and model.json (where its model is the best so far), then
# resume.npz, resume.json and losses.csv: the 4th flush is the first resume.npz, the 7th the second validation's first
@pytest.mark.parametrize("flush, kept", [(4, "the model of step 10 is kept in {folder}/; free some space, and resume "
                                              "with: python train.py --resume cut --checkpoint {home} (it takes its "
                                              "steps again from the first: the same seed, the same steps)"),
                                         (7, "the model of step 10 and the state to resume from of step 10 are kept in "
                                             "{folder}/; free some space, and resume with: python train.py --resume "
                                             "cut --checkpoint {home}")], ids=["at the first save", "at a later save"])
def test_a_full_disk_says_what_is_kept_and_the_run_resumes_to_the_same_files(tmp_path, corpus, monkeypatch, flush,
                                                                             kept):
    """The review's: a full disk said only `[Errno 28] No space left on device`, and after one at the first save
    --resume said the run could not go on, though its model was kept."""
    s = tiny_settings(tmp_path / "ck", corpus, max_steps=30, eval_interval=10, patience=0)
    whole = train.train(tiny_settings(tmp_path / "whole", corpus, max_steps=30, eval_interval=10, patience=0))
    disk_full_from(monkeypatch, flush)
    with pytest.raises(InputError) as full:
        train.train(s, name="cut")
    monkeypatch.undo()
    folder = tmp_path / "ck" / "runs" / "cut"
    step = 10 if flush == 4 else 20
    assert str(full.value) == f"the disk is full, so the save at step {step} failed: " + \
        kept.format(folder=folder, home=tmp_path / "ck")
    assert not list(folder.glob(".*.tmp"))  # what the failed save had written is gone, and its space with it
    resumed = run_main("train.py", "--resume", "cut", "--checkpoint", tmp_path / "ck")
    assert resumed.returncode == 0, resumed.stderr
    for file in ("model.npz", "resume.npz", "losses.csv"):
        assert (whole / file).read_bytes() == (folder / file).read_bytes(), file


def test_a_folder_that_cannot_be_written_is_said_with_what_was_kept(home, monkeypatch):
    class ReadOnly:  # filelock's FileLock on a read-only disk: the lock file cannot be made
        def __init__(self, path):
            self.path = path

        def acquire(self, timeout):
            raise OSError(errno.EROFS, "Read-only file system", str(self.path))
    monkeypatch.setattr(runs, "FileLock", ReadOnly)
    refused = one_line_error(run_main("train.py", "--remove", "done", "--yes", "--checkpoint", home))
    assert refused == (f"error: cannot write the run's lock, {home}/runs/done/.lock: the file system is read-only; "
                       f"nothing in {home}/runs/done/ was changed: use a folder that can be written, and try again")
    assert (home / "runs" / "done" / "model.npz").exists()


def test_a_name_too_long_for_a_folder_is_said_in_a_short_line(home, corpus, monkeypatch, tmp_path):
    """The review's: a name of 300 characters came back whole in `[Errno 36] File name too long: '...'`."""
    monkeypatch.chdir(tmp_path)
    long = "a" * 300
    for script, *args in [("train.py", "--name", long, "--corpus_path", corpus, "--checkpoint", home),
                          ("train.py", "--remove", long, "--checkpoint", home),
                          ("train.py", "--resume", long, "--checkpoint", home),
                          ("talk.py", "--checkpoint", long), ("generate.py", "the", "--checkpoint", long)]:
        line = one_line_error(run_main(script, *args))
        assert long not in line and "(300 characters)" in line and len(line) < 300, (script, line)


def test_what_a_killed_save_left_is_deleted_at_the_runs_next_listing_or_start(tmp_path, corpus, monkeypatch):
    s = tiny_settings(tmp_path / "ck", corpus, max_steps=30, eval_interval=10)
    ctrl_c_at(monkeypatch, 15)
    with pytest.raises(SystemExit):
        train.train(s, name="cut")
    monkeypatch.undo()
    folder = tmp_path / "ck" / "runs" / "cut"
    stale = [folder / name for name in (".model.npz.tmp", ".model.tok.json.tmp", ".resume.npz.tmp", ".losses.csv.tmp",
                                        ".losses.png.tmp")]
    staged = folder / ".model.json.tmp"  # a record that names the files in place: the next save renames it
    for path in stale:
        path.write_bytes(b"half written by a save that a kill stopped")
    shutil.copy(folder / "model.json", staged)
    with runs.locked(folder):  # a training writing them: a listing leaves them
        runs.runs_table(tmp_path / "ck")
        assert all(path.exists() for path in stale)
    runs.runs_table(tmp_path / "ck")
    assert not any(path.exists() for path in stale) and staged.exists()
    for path in stale:
        path.write_bytes(b"half written by a save that a kill stopped")
    train.train(s, resume_from=folder)  # its start, under its lock
    assert sorted(path.name for path in folder.glob(".*")) == [".lock"]


def test_list_stars_only_the_latest_finished_run(home):
    """* is the latest finished run, as the listing's first line says; with none finished, nothing is starred."""
    assert re.search(r"^\* +done ", runs.runs_table(home), re.M)
    shutil.rmtree(home / "runs" / "done")
    table = runs.runs_table(home)
    assert "*" not in table.split("\n", 1)[1] and re.search(r"^ +model-only +.* interrupted ", table, re.M)
    assert "no run is finished yet: without --checkpoint, talk.py reads model-only, the latest run with a whole " \
           "model" in table


@pytest.mark.parametrize("log", ["> log 2>&1", "> log 2> err"])
def test_ctrl_c_says_interrupted_once_in_each_file(tmp_path, monkeypatch, log):
    # `> log 2>&1`: stdout and stderr are one file, which holds the line once; `> log 2> err`: each file holds it
    run = run_log.Run(tmp_path / "ck" / "runs" / "cut", total_steps=100, corpus={}, step=69)
    settings = types.SimpleNamespace(checkpoint=tmp_path / "ck")
    with open(tmp_path / "log", "w") as out, open(tmp_path / "err", "w") as err:
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", out if log == "> log 2>&1" else err)
        with pytest.raises(SystemExit) as stop:
            run_log.stopped_by_ctrl_c(run, settings)
        monkeypatch.undo()
    assert stop.value.code == 130
    said = {name: (tmp_path / name).read_text().count("interrupted after step 69 of 100") for name in ("log", "err")}
    assert said == ({"log": 1, "err": 0} if log == "> log 2>&1" else {"log": 1, "err": 1})


def test_a_validations_line_names_its_training_loss_the_mean_of_the_steps_that_losses_csv_holds(tmp_path, corpus):
    # losses.csv has each step's loss, one batch's; the line says the mean of the steps since the last validation
    result = run_main("train.py", *tiny_args(tmp_path / "ck", corpus, max_steps=20, eval_interval=10))
    assert result.returncode == 0, result.stderr
    said = re.findall(r"step +(\d+): train (\d\.\d{4}) \(mean of steps (\d+) to (\d+)\)", result.stdout)
    assert [(step, first, last) for step, _, first, last in said] == [("10", "1", "10"), ("20", "11", "20")]
    table = run_log.read_losses(run_folder(tmp_path / "ck"))
    for step, mean, first, _ in said:
        rows = table[(table["step"] >= int(first)) & (table["step"] <= int(step))]
        assert float(mean) == pytest.approx(rows["train_loss"].mean(), abs=5e-5)
