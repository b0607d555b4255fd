"""Bad input and bugs apart: a person's mistake is one line and exit status 2, a bug in the code
keeps its traceback (and so, as a script, exit status 1); Ctrl-C is one line and exit status 130.

A learner who edits transformer.py and gets a shape wrong must see the line that broke, not a
message that reads like a wrong setting. The bugs here are one function of transformer.py replaced
while a script's main() runs in this process (conftest's run_main), as `python train.py` runs it.
"""

import errno
import os
import re
import sys
import threading
import types
from pathlib import Path

import pytest

from conftest import REPO, run_main, tiny_args
import config
from engineering import parallel, settings
from engineering.corpus import corpus_file, read_text
from engineering.parallel import cores
from engineering.errors import InputError, run_script
from engineering.wording import plural
import train
import transformer


def tiny_run(tmp_path):
    return tiny_args(tmp_path / "ck", REPO / "data" / "sample.csv", max_steps=3, eval_interval=3)


def transposed_weight(x, W, b):
    """A learner's slip: the weight used the wrong way round; x @ W.T fails where W is not square."""
    return x @ W.T + b, (x, W)


def wrong_product_backward(dout, cache):
    """A learner's slip in a backward: a matrix product where the chain rule multiplies entry by entry."""
    x, tanh_u = cache
    return dout @ (0.5 * (1.0 + tanh_u))


def test_a_bug_in_the_model_keeps_its_traceback(tmp_path, monkeypatch):
    assert run_main("train.py", *tiny_run(tmp_path)).returncode == 0  # the same run, unbroken, trains
    for function, slip in (("linear_forward", transposed_weight), ("gelu_backward", wrong_product_backward)):
        with monkeypatch.context() as patched:
            patched.setattr(transformer, function, slip)
            with pytest.raises(ValueError, match="matmul") as bug:  # NumPy's own error, not dressed as bad input
                run_main("train.py", *tiny_run(tmp_path))
        assert bug.traceback[-1].name == slip.__name__  # the traceback ends at the line that broke


def test_a_bug_while_generating_keeps_its_traceback(tiny_checkpoint, monkeypatch):
    monkeypatch.setattr(transformer, "linear_forward", transposed_weight)
    with pytest.raises(ValueError, match="matmul") as bug:
        run_main("generate.py", "the cat", "--checkpoint", tiny_checkpoint)
    assert bug.traceback[-1].name == "transposed_weight"


@pytest.mark.parametrize("raised, status", [(InputError("no corpus at x.csv"), 2), (settings.SettingError("bad"), 2),
                                            (FileNotFoundError(2, "No such file", "x.txt"), 2),
                                            (KeyboardInterrupt(), 130)])
def test_run_turns_bad_input_and_ctrl_c_into_one_line(capsys, raised, status):
    def main():
        raise raised
    with pytest.raises(SystemExit) as stop:
        run_script(main)
    assert stop.value.code == status
    err = capsys.readouterr().err
    assert err.startswith("error: " if status == 2 else "interrupted (Ctrl-C)") and err.count("\n") == 1


@pytest.mark.parametrize("raised, said", [
    (OSError(errno.ENOSPC, "No space left on device", f"/ck/runs/{'a' * 300}/model.npz"),
     ("error: the disk is full at /ck/runs/aaa", "a/model.npz (319 characters): free some space, and try again\n")),
    (OSError(errno.EROFS, "Read-only file system", "/ck/runs/x/.lock"),
     ("error: the file system is read-only at /ck/runs/x/.lock: use a folder that can be written, and try again\n",
      "")),
    (OSError(errno.EIO, "Input/output error"), ("error: Input/output error: check the file and its folder, and try "
                                                "again\n", ""))], ids=["a full disk", "a read-only folder", "another"])
def test_an_error_of_the_system_is_said_with_what_to_do_and_never_a_long_name_whole(capsys, raised, said):
    """The review's: `[Errno 28] No space left on device` said nothing to act on, and `[Errno 36] File name too long`
    echoed a name of 300 characters whole."""
    def main():
        raise raised
    with pytest.raises(SystemExit) as stop:
        run_script(main)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith(said[0]) and err.endswith(said[1]) and "a" * 100 not in err, err
    assert err.count("\n") == 1 and len(err) < 200


@pytest.mark.parametrize("raised", [ValueError("matmul: Input operand 1 has a mismatch"), IndexError("index 9"),
                                    TypeError("unsupported operand")])
def test_run_lets_a_bug_through(raised):
    def main():
        raise raised
    with pytest.raises(type(raised)):
        run_script(main)


# --- the learner's own process ------------------------------------------------------------------

def default_run(tmp_path):
    """A short run with the default settings otherwise: the reference model, on as many threads as by default (one)."""
    return ["--max_steps", "3", "--max_rows", "200", "--checkpoint", tmp_path / "ck"]


# --- a setting past what a machine can do, a corpus that is a folder or not UTF-8 -------------------------

@pytest.mark.parametrize("given, said", [
    (["--processes", "999"], f"processes must be at most {2 * cores()}, 2 for each of this machine's {plural(cores(), 'core')}, "
                             f"got 999; 0 chooses for you"),
    (["--max_steps", "99999999999999999999999"], "max_steps must be at most 10,000,000 (hours of training even for "
                                                 "the default model), got 99,999,999,999,999,999,999,999"),
])
def test_a_setting_past_what_a_machine_can_finish_is_refused_before_any_work(tmp_path, given, said):
    result = run_main("train.py", *given, "--checkpoint", tmp_path / "ck")
    assert (result.returncode, result.stderr) == (2, f"error: {said}\n") and not (tmp_path / "ck").exists()


def test_the_bounds_are_those_config_py_names(tmp_path):
    assert "at most 2 per core" in settings.comments(config)["processes"]
    assert "at most 10,000,000" in settings.comments(config)["max_steps"]
    for name, most in [("processes", 2 * cores()), ("max_steps", 10_000_000)]:  # the bound itself is accepted
        settings.check(types.SimpleNamespace(**{**settings.defaults(config), name: most}), config.RECIPES)


def test_a_folder_given_as_the_corpus_is_said_to_be_a_folder(tmp_path):
    folder = tmp_path / "adir"
    folder.mkdir()
    with pytest.raises(InputError, match=f"^{tmp_path}/adir is a folder, not a corpus: give one text file or CSV in "
                                         f"it$"):
        corpus_file(folder, "data/corpus.csv")
    (folder / "book.txt").write_text("text")
    with pytest.raises(InputError, match=re.escape(f"in it (such as --corpus_path {folder}/book.txt)")):
        corpus_file(folder, "data/corpus.csv")


def test_the_encoding_hint_names_the_file_in_the_folder_it_was_given_in(tmp_path, monkeypatch):
    (tmp_path / "bad dir").mkdir()
    (tmp_path / "bad dir" / "latin1.txt").write_bytes("caf\u00e9\n".encode("latin-1"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as refused:
        read_text(Path("bad dir") / "latin1.txt")
    assert str(refused.value).endswith("iconv -f LATIN1 -t UTF-8 'bad dir/latin1.txt' > 'bad dir/latin1-utf8.txt'")


@pytest.mark.parametrize("threads", [1, 2])  # the default model's one thread; two, as a larger model's batch takes
def test_a_breakpoint_in_a_backward_stops_in_the_persons_own_process(tmp_path, monkeypatch, threads):
    stopped_in = []

    def hook(*args, **kwargs):  # what PYTHONBREAKPOINT would name: it notes the process and thread, and leaves
        stopped_in.append((os.getpid(), threading.current_thread()))
        raise SystemExit(7)

    plain_linear_backward = transformer.linear_backward

    def linear_backward(dout, cache):  # a learner's breakpoint() in a backward
        breakpoint()
        return plain_linear_backward(dout, cache)

    monkeypatch.setattr(sys, "breakpointhook", hook)
    monkeypatch.setattr(transformer, "linear_backward", linear_backward)
    monkeypatch.setattr(parallel, "threads_for", lambda *args, **kwargs: threads)
    assert run_main("train.py", *default_run(tmp_path)).returncode == 7
    assert stopped_in == [(os.getpid(), threading.main_thread())]  # the person's process and thread, once


def test_a_shape_bug_in_a_backward_ends_its_traceback_at_the_learners_line(tmp_path, monkeypatch):
    def linear_backward(dout, cache):  # a learner's shape slip in a backward: dx = dout @ W where it is dout @ W.T
        x, W = cache
        dx = dout @ W
        return dx, x.reshape(-1, W.shape[0]).T @ dout.reshape(-1, W.shape[1]), dout.reshape(-1, W.shape[1]).sum(0)

    monkeypatch.setattr(transformer, "linear_backward", linear_backward)
    with pytest.raises(ValueError) as bug:
        run_main("train.py", *default_run(tmp_path))
    assert bug.traceback[-1].name == "linear_backward" and str(bug.traceback[-1].path) == __file__
    assert not any("parallel.py" in str(entry.path) for entry in bug.traceback)  # not a worker's report


# --- Ctrl-C at any moment -------------------------------------------------------------------------

def ctrl_c(*args, **kwargs):
    raise KeyboardInterrupt  # what the terminal's SIGINT raises wherever the script is


def test_ctrl_c_while_generating_is_one_line_and_exit_130(tiny_checkpoint, monkeypatch):
    draws = []
    real_sample_next = transformer.sample_next

    def sample_next(*args):  # Ctrl-C during the third draw
        draws.append(1)
        return ctrl_c() if len(draws) == 3 else real_sample_next(*args)

    monkeypatch.setattr(transformer, "sample_next", sample_next)
    result = run_main("generate.py", "the", "--full", "--checkpoint", tiny_checkpoint)
    assert result.returncode == 130
    assert result.stderr == "interrupted (Ctrl-C); nothing was left half-written\n"
    assert result.stdout.startswith("the") and result.stdout.endswith("\n")  # the continuation's line is ended


@pytest.mark.parametrize("stage", ["read_corpus", "BPETokenizer"])
def test_ctrl_c_while_the_corpus_is_read_or_the_tokenizer_learned_is_one_line_and_exit_130(tmp_path, monkeypatch,
                                                                                            stage):
    monkeypatch.setattr(train, stage, types.SimpleNamespace(train=ctrl_c) if stage == "BPETokenizer" else ctrl_c)
    result = run_main("train.py", "--checkpoint", tmp_path / "ck")
    assert result.returncode == 130 and result.stderr == "interrupted (Ctrl-C); nothing was left half-written\n"
    assert not (tmp_path / "ck").exists()  # nothing half-written: nothing written at all

