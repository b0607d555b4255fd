"""What a newcomer met (issue 32), each as they met it: a seed, a file that is not text, a recipe, runs that
could not be removed, finished or extended, and messages that misled."""

import io
import shutil
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import config
import gradcheck
import talk
import train
from engineering import checkpoint, corpus, gpt2, prompting, runs, settings
from engineering.errors import InputError, run_script
from transformer import ModelConfig

REPO = Path(__file__).resolve().parent.parent


def said(capsys, main):
    """(exit status, stderr) of a script's main() run as the scripts run it: bad input one line, exit 2."""
    with pytest.raises(SystemExit) as exited:
        run_script(main)
    return exited.value.code, capsys.readouterr().err


# --- 1. a seed that cannot be one, and /models whatever --checkpoint was ----------------------------

@pytest.mark.parametrize("script", [train, talk, __import__("generate")])
@pytest.mark.parametrize("seed", ["-3", str(2 ** 64)])
def test_a_bad_seed_is_one_line_before_any_work(script, seed, tmp_path, capsys):
    argv = ["--seed", seed, "--checkpoint", str(tmp_path / "nothing-here")]
    argv += ["--corpus_path", str(tmp_path / "no-such-corpus.csv")] if script is train else []
    argv += ["a prompt"] if script.__name__ == "generate" else []
    status, err = said(capsys, lambda: script.main(argv))
    assert status == 2 and err == f"error: seed must be a whole number from 0 to {2 ** 64 - 1}, got {seed}\n"


def test_talk_seed_command_refuses_a_bad_seed_and_changes_nothing(capsys):
    session = types.SimpleNamespace(seed=5, rng=None, sampling=None, max_new_tokens=3, window=4)
    assert talk.run_command(session, "/seed -3")
    assert session.seed == 5 and "seed must be a whole number from 0" in capsys.readouterr().err


def test_models_is_one_line_where_the_home_holds_no_runs(tmp_path, capsys):
    session = types.SimpleNamespace(home=tmp_path)  # a GPT-2 folder's, or a run's moved out of checkpoints/
    assert talk.run_command(session, "/models")  # the conversation goes on
    assert capsys.readouterr().err == (f"there are no runs in {tmp_path}/runs/ yet: train one with `python train.py`, "
                                       f"named with --name NAME if you like\n")


def test_models_lists_config_pys_runs_for_a_run_moved_out_of_them(tiny_checkpoint, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(tiny_checkpoint, tmp_path / "checkpoints" / "runs" / "kept")
    shutil.copytree(tiny_checkpoint, tmp_path / "moved")
    monkeypatch.setattr(sys, "stdin", io.StringIO("/models\n"))
    talk.main(["--checkpoint", str(tmp_path / "moved")])
    out, err = capsys.readouterr()
    assert err == "" and "runs in checkpoints/runs/" in out and " kept " in out


# --- 2. a file that is not text ------------------------------------------------------------------

@pytest.mark.parametrize("data, what", [
    (b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 8, "is an executable (ELF), not text"),
    (b"\x89PNG\r\n\x1a\n" + bytes(200), "is a PNG image, not text"),
    (b"PK\x03\x04" + bytes(100), "is a zip archive"),
    # every other byte 0, as in UTF-16's ASCII, but no text: the 0s and 1s of a binary file
    (bytes([0, 1, 0, 2, 0, 3, 0, 255]) * 400, "holds NUL bytes, so it is binary data, not text"),
    ("Zoë\nand a line of text\n".encode("utf-16-le"), "it is UTF-16 text, not UTF-8"),
    ("Zoë\nand a line of text\n".encode("utf-16"), "it is UTF-16 text, not UTF-8"),
    ("Zoë, café\n".encode("latin-1"), "in another encoding (Latin-1, Windows-1252?)"),
])
def test_a_file_that_is_not_utf8_text_is_called_what_it_is(data, what, tmp_path):
    path = tmp_path / "my.txt"
    path.write_bytes(data)
    with pytest.raises(InputError, match=what.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")):
        corpus.read_text(path)


def test_an_executable_is_not_called_utf16():
    data = Path(sys.executable).resolve().read_bytes()[:20_000]  # the case: the start of a program
    assert "UTF-16" not in str(corpus.not_utf8(Path("python.bin"), data))


# --- 3. a recipe yields to what the model and the person say ----------------------------------------

def defaults(**changes):
    return types.SimpleNamespace(**{**settings.defaults(config), **changes})


def test_a_recipe_that_needs_init_from_says_so_in_one_line():
    with pytest.raises(settings.SettingError, match="--recipe gpt2 fine-tunes a GPT-2: give its folder with --init_from"):
        settings.check(defaults(recipe="gpt2"), config.RECIPES)


def test_a_gpt2s_own_shape_wins_over_config_and_the_recipe_and_a_recipes_seq_len_yields():
    small = ModelConfig(vocab_size=300, context_len=24, emb_dim=16, num_heads=4, num_layers=2, ff_dim=64, ln_eps=1e-5)
    s = defaults(recipe="gpt2", init_from="gpt2", **config.RECIPES["gpt2"])  # seq_len 128 from the recipe
    gpt2.adopt_shape(s, small, "gpt2", given=set())
    assert (s.context_len, s.emb_dim, s.num_heads, s.num_layers, s.ff_dim, s.seq_len) == (24, 16, 4, 2, 64, 24)


@pytest.mark.parametrize("typed, refused", [({"context_len": 64}, "--context_len 64 disagrees with the GPT-2"),
                                            ({"seq_len": 128}, "--seq_len 128 is longer than the GPT-2")])
def test_a_shape_the_person_typed_against_the_gpt2_is_refused(typed, refused):
    small = ModelConfig(vocab_size=300, context_len=24, emb_dim=16, num_heads=4, num_layers=2, ff_dim=64, ln_eps=1e-5)
    with pytest.raises(InputError, match=refused):
        gpt2.adopt_shape(defaults(init_from="gpt2", **typed), small, "gpt2", given=set(typed))


def test_the_recipe_line_shows_what_is_in_force():
    s = defaults(**{**config.RECIPES["book"], "recipe": "book", "num_merges": 200})
    line = train.recipe_line(s, given={"num_merges"})
    assert line.startswith("recipe book: num_layers 1, emb_dim 128,") and "num_merges 200 (typed)" in line
    assert "num_merges 500" not in line


# --- 4. runs that could not be removed, finished or extended --------------------------------------

@pytest.fixture
def home(tmp_path, tiny_checkpoint):
    """A home folder with a finished run (done), one killed before its first save (empty), one killed between its
    model's save and its resume state (model-only)."""
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
    assert f"empty has no model yet: if no training is writing to it, python train.py --remove empty --checkpoint " \
           f"{home} frees its name" in table
    assert table.splitlines()[-1] == f"python train.py --remove NAME --checkpoint {home} removes a run, its folder " \
                                     f"and every file in it"


def test_a_taken_name_says_how_to_free_it(home):
    with pytest.raises(InputError, match=f"remove that run first: python train.py --remove empty --checkpoint {home}"):
        runs.check_run_name(home, "empty")


def test_remove_asks_or_takes_yes_and_removes_only_a_run_by_name(home, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # not a terminal: it cannot ask
    with pytest.raises(InputError, match="add --yes to remove it without being asked"):
        train.main(["--remove", "done", "--checkpoint", str(home)])
    assert (home / "runs" / "done" / "model.npz").exists()
    for bad in ("../done", "/tmp", ".."):
        with pytest.raises(InputError, match="--remove takes a run's name"):
            train.main(["--remove", bad, "--checkpoint", str(home)])
    train.main(["--remove", "empty", "--yes", "--checkpoint", str(home)])
    assert not (home / "runs" / "empty").exists()
    assert capsys.readouterr().out.startswith(f"removed the run empty in {home}/runs/ (no model yet, 0 steps; 0 files")


def test_remove_refuses_a_run_a_training_writes_to(home):
    with runs.locked(home / "runs" / "done"):
        with pytest.raises(InputError, match="another training is writing to"):
            runs.remove(home, "done", confirmed=True)
    assert (home / "runs" / "done").exists()


def test_a_run_without_its_resume_state_is_said_to_have_a_whole_model(home):
    with pytest.raises(InputError) as refused:
        runs.run_to_resume(home, "model-only")
    assert "saved its model but no state to resume from" in str(refused.value)
    assert f"its model is whole: python talk.py --checkpoint {home}/runs/model-only" in str(refused.value)
    assert checkpoint.load(home / "runs" / "model-only").meta["steps"] > 0  # and it is


def test_a_finished_run_can_be_extended_by_steps(tmp_path, capsys):
    from conftest import tiny_corpus_rows, train_tiny
    rows = "text\n" + "\n".join(tiny_corpus_rows()) + "\n"
    folder = train_tiny(tmp_path, "corpus.csv", rows, epochs=1, max_steps=20, eval_interval=10, patience=0)
    base = ["--checkpoint", str(folder.parent.parent), "--resume", folder.name]
    with pytest.raises(InputError, match="is finished; .* To train it further, give it more steps"):
        train.main(base)
    train.main([*base, "--max_steps", "30"])
    progress = checkpoint.read_progress(folder)
    assert (progress["step"], progress["total_steps"], progress["done"]) == (30, 30, True)
    assert "resuming the run" in capsys.readouterr().out


# --- 5. messages that said more than they knew ----------------------------------------------------

def test_the_time_to_go_is_at_most_while_patience_may_stop_the_run(monkeypatch, capsys):
    monkeypatch.setattr(runs, "LOG_SECONDS", 0)
    for may_stop_early, shown in ((True, "  at most "), (False, "  0 min ")):
        progress = runs.Progress(100, 0, 256, may_stop_early)
        progress.update(10, 2.5, 1e-3)
        assert shown in capsys.readouterr().err


def test_a_line_said_after_the_progress_line_starts_a_line_of_its_own(capsys):
    progress = runs.Progress(100, 0, 256)
    progress.terminal, progress.drawn = True, True  # a progress line is drawn on a terminal
    with pytest.raises(KeyboardInterrupt), progress:  # a second Ctrl-C leaves the loop at once
        raise KeyboardInterrupt
    assert capsys.readouterr().err == "\r\033[K"


def test_a_gpt2_folder_without_config_json_is_told_so(tmp_path):
    (tmp_path / "vocab.json").write_text("{}", encoding="utf-8")
    args = types.SimpleNamespace(checkpoint=str(tmp_path), window=0)
    with pytest.raises(InputError, match="config.json is missing: a GPT-2 folder holds"):
        prompting.load_for_sampling(args, "checkpoints")


def test_gradcheck_names_an_unknown_option_as_an_option(capsys):
    assert gradcheck.main(["--bogus"]) == 2
    assert capsys.readouterr().err.startswith("gradcheck.py: no option --bogus;")


def test_a_run_without_matplotlib_says_once_how_to_get_losses_png(tmp_path, monkeypatch, capsys):
    from conftest import tiny_corpus_rows, train_tiny
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails, as where it is not installed
    rows = "text\n" + "\n".join(tiny_corpus_rows()) + "\n"
    folder = train_tiny(tmp_path, "corpus.csv", rows, max_steps=30, eval_interval=10)
    assert capsys.readouterr().out.count(runs.NO_PLOT) == 1 and not (folder / "losses.png").exists()


def test_the_readme_says_what_ctrl_c_does_in_each_script():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ctrl_c = readme[readme.index("What Ctrl-C does"):]
    for script in ("train.py", "generate.py", "talk.py"):
        assert f"In `{script}`" in ctrl_c.split("\n\n")[0], script
