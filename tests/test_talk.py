"""Tests of talk.py, its main() run in this process with its input piped (conftest's run_main), on the tiny
checkpoint that conftest trains once, and on a home folder of runs as train.py leaves them; and once as a
person starts it."""

import builtins
import io
import json
import os
import shutil
import sys
import types

import numpy as np
import pytest

from conftest import greedy_text, run_main, run_script, tiny_corpus_rows
from engineering import checkpoint
from engineering import prompting
import transformer
import talk

BANNER_LINES = 2  # the line about the model and the hint
DEFAULTS = "temperature 0.8, top_k 0 (off), top_p 0.9, up to 50 new tokens, seed 42, window 8 tokens"


def run_talk(folder, text, *args):
    return run_main("talk.py", "--checkpoint", folder, *args, stdin=text)


def replies(result):
    """The lines of stdout after the banner."""
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()[BANNER_LINES:]


def test_the_banner_describes_the_model(tiny_checkpoint):
    result = run_talk(tiny_checkpoint, "")
    about, hint = result.stdout.splitlines()
    model = checkpoint.load(tiny_checkpoint)
    best = min(model.meta["history"], key=lambda entry: entry["val_loss"])
    characters = len("\n".join(tiny_corpus_rows()) + "\n")  # the rows of corpus.csv, 8,850 characters
    assert about.startswith(f"model {tiny_checkpoint.name}: {sum(p.size for p in model.params.values()):,} "
                            f"parameters, {model.cfg.vocab_size} tokens; trained {model.meta['trained_at']} on ")
    assert about.endswith(f"corpus.csv ({characters:,} characters with each row's newline, "
                          f"{model.meta['corpus']['validation_characters']} held out); "
                          f"best validation loss {best['val_loss']:.3f} (step {best['step']:,})")
    assert "up to the end of its row;" in hint and "/help" in hint and "/quit" in hint
    assert result.returncode == 0 and result.stderr == ""  # end of input: a clean exit


def greedy_row(folder, prompt, max_new_tokens):
    """The prompt and its greedy continuation up to the first newline; it asserts that a newline
    comes before max_new_tokens, so the stop is really exercised."""
    row, newline, _ = greedy_text(folder, prompt, max_new_tokens).partition("\n")
    assert newline, f"the model wrote no newline in {max_new_tokens} tokens after {prompt!r}"
    return row


def test_each_prompt_gets_one_row(tiny_checkpoint):
    # /len 200 is far longer than a row: the continuation stops at the row's newline
    lines = replies(run_talk(tiny_checkpoint, "/temp 0\n/len 200\nthe cat\na bird\n"))
    assert lines[2:] == [greedy_row(tiny_checkpoint, "the cat", 200), greedy_row(tiny_checkpoint, "a bird", 200)]
    assert len(lines[2]) > len("the cat") and len(lines[3]) > len("a bird")
    assert not any(line.startswith("> ") for line in lines)  # no prompt shown when the input is piped


GREEDY = DEFAULTS.replace("temperature 0.8", "temperature 0")  # /settings after /temp 0


def test_full_writes_len_tokens_past_the_end_of_the_row(tiny_checkpoint):
    whole = greedy_text(tiny_checkpoint, "the cat", 40)
    assert whole.count("\n") >= 2  # past the end of more than one row
    result = run_talk(tiny_checkpoint, "/temp 0\n/len 40\nthe cat\n", "--full")
    assert result.returncode == 0, result.stderr
    after_banner = result.stdout.split("\n", BANNER_LINES)[-1]
    assert after_banner == f"{GREEDY}\n{GREEDY.replace('50', '40')}\n{whole}\n"


def test_len_caps_the_continuation_at_that_many_tokens(tiny_checkpoint):
    # with --full, so that /len alone ends a continuation, wherever the model ends its rows
    prompt = "the cat sat"
    result = run_talk(tiny_checkpoint, f"/temp 0\n/len 1\n{prompt}\n/len 3\n{prompt}\n", "--full")
    assert result.returncode == 0, result.stderr
    one, three = greedy_text(tiny_checkpoint, prompt, 1), greedy_text(tiny_checkpoint, prompt, 3)
    assert result.stdout.split("\n", BANNER_LINES)[-1] == (f"{GREEDY}\n{GREEDY.replace('50 new tokens', '1 new token')}\n{one}\n"
                                                          f"{GREEDY.replace('50', '3')}\n{three}\n")
    assert len(prompt) < len(one) < len(three)


def test_a_seed_repeats_a_continuation(tiny_checkpoint):
    text = "/seed 3\nthe dog\n/seed 3\nthe dog\n/seed 4\nthe dog\n"
    lines = replies(run_talk(tiny_checkpoint, text, "--temperature", "1.5", "--top_p", "1"))
    first, again, other = lines[1], lines[3], lines[5]
    assert first == again and first != other
    fresh = replies(run_talk(tiny_checkpoint, "the dog\n", "--temperature", "1.5", "--top_p", "1", "--seed", "3"))
    assert fresh == [first]  # /seed 3 restarts the draws exactly as --seed 3 starts them


def test_commands_change_the_settings(tiny_checkpoint):
    changes = "/temp 0.5\n/topk 5\n/topp 0.7\n/len 12\n/seed 9\n"
    lines = replies(run_talk(tiny_checkpoint, f"/settings\n{changes}/settings\n"))
    assert lines[0] == DEFAULTS  # config.py's values, and the window the checkpoint was trained with
    assert lines[-1] == "temperature 0.5, top_k 5, top_p 0.7, up to 12 new tokens, seed 9, window 8 tokens"
    overridden = replies(run_talk(tiny_checkpoint, "/settings\n", "--temperature", "0.3", "--window", "4"))
    assert overridden == [DEFAULTS.replace("0.8", "0.3").replace("window 8", "window 4")]


def test_the_window_is_the_trained_seq_len_unless_given(tiny_checkpoint, tmp_path):
    folder = tmp_path / "checkpoint"
    shutil.copytree(tiny_checkpoint, folder)
    edit_description(lambda meta: meta["settings"].update(seq_len=5))(folder)  # as if trained on windows of 5
    assert replies(run_talk(folder, "/settings\n")) == [DEFAULTS.replace("window 8", "window 5")]
    assert replies(run_talk(folder, "/settings\n", "--window", "7")) == [DEFAULTS.replace("window 8", "window 7")]


def test_help_names_every_command(tiny_checkpoint):
    help_text = "\n".join(replies(run_talk(tiny_checkpoint, "/help\n")))
    for command in ("/temp X", "/topk N", "/topp P", "/len N", "/seed N", "/settings", "/models", "/help", "/quit",
                    "Ctrl-C", "--full", "--exact", "--strict"):
        assert command in help_text
    assert "newline" in help_text  # it says where a continuation stops
    assert "drawn again as tokens that start with the same text" in help_text  # and what healing does


def test_exact_continues_the_prompts_tokens_as_they_are(tiny_checkpoint):
    """'the cat' is 'the c', 'at' here: healed, 'at' is drawn again and the model goes on with the row it
    learned ('the cat sat on ...'); with --exact it continues after 'at', where it ends the row at once."""
    model = checkpoint.load(tiny_checkpoint)
    ids = model.tokenizer.encode("the cat")
    greedy = transformer.Sampling(0, 0, 1.0)
    new_ids = transformer.generate(model.params, model.cfg, ids, 30, 8, greedy, np.random.default_rng(0))
    exact_row = model.tokenizer.decode(ids + list(new_ids)).partition("\n")[0]
    healed_row = greedy_row(tiny_checkpoint, "the cat", 30)
    assert exact_row != healed_row  # so that the two tell healing from none
    assert replies(run_talk(tiny_checkpoint, "/temp 0\n/len 30\nthe cat\n", "--exact"))[2:] == [exact_row]
    assert replies(run_talk(tiny_checkpoint, "/temp 0\n/len 30\nthe cat\n"))[2:] == [healed_row]


def test_unknown_characters_are_left_out_with_a_warning(tiny_checkpoint):
    result = run_talk(tiny_checkpoint, "the cat Z@\nZZZ\nthe dog\n")
    lines = replies(result)
    assert len(lines) == 2  # nothing for ZZZ
    assert lines[0].startswith("the cat ") and "Z" not in lines[0] and "@" not in lines[0]
    assert lines[1].startswith("the dog")
    warnings = result.stderr.splitlines()
    assert warnings[0] == "left out 'Z', '@': the model has never seen these characters"
    assert warnings[1] == "left out 'Z': the model has never seen this character"
    assert warnings[2].startswith("nothing is left to continue")


def test_a_byte_that_is_not_utf8_is_said_as_generate_says_it(tiny_checkpoint):
    """talk.py reads its input with errors="replace": a byte that is not UTF-8 arrives as U+FFFD; generate.py's
    command line gives it as U+DCE9 (tests/test_generate.py). Both are said in the same words."""
    result = run_talk(tiny_checkpoint, "the cat\ufffd\ufffdZ\n")
    assert result.stderr.splitlines()[0] == "left out a byte that is not UTF-8, 'Z': the model has never seen these " \
                                            "characters"


def test_strict_refuses_a_line_with_unknown_characters_and_goes_on(tiny_checkpoint):
    text = "/temp 0\nthe Zcat\nthe cat\n"
    strict = run_talk(tiny_checkpoint, text, "--strict")
    assert replies(strict)[1:] == replies(run_talk(tiny_checkpoint, "/temp 0\nthe cat\n"))[1:]  # no reply to it
    assert strict.stderr.count("\n") == 1 and strict.stderr.startswith("the prompt has 'Z': the model has never seen")


def test_bad_commands_and_values_keep_the_session_going(tiny_checkpoint):
    bad = ["/foo", "/", "/temp -1", "/temp abc", "/temp", "/temp 1 2", "/topk 2.5", "/topk -1", "/topp 0",
           "/topp 1.5", "/len 0", "/len 2.5", "/seed -3"]
    result = run_talk(tiny_checkpoint, "\n".join(bad) + "\n/settings\nthe cat\n")
    lines = replies(result)
    assert lines[0] == DEFAULTS  # nothing changed
    assert lines[1].startswith("the cat")
    messages = result.stderr.splitlines()
    assert len(messages) == len(bad)
    assert all("the commands are" in m for m in messages[:2])  # an unknown command lists the commands
    assert all("nothing changed. Usage: /" in m for m in messages[2:])  # a bad value says what is accepted
    assert "top_k must be a whole number, 0 (off) or more, got 2.5" in messages[6]


def test_empty_lines_do_nothing(tiny_checkpoint):
    result = run_talk(tiny_checkpoint, "\n\n   \n")
    assert replies(result) == [] and result.stderr == ""


def test_quit_ends_the_session_at_once(tiny_checkpoint):
    result = run_talk(tiny_checkpoint, "/quit\nthe cat\n")
    assert replies(result) == [] and result.stderr == ""


def test_the_last_line_needs_no_newline(tiny_checkpoint):
    assert replies(run_talk(tiny_checkpoint, "the cat"))[0].startswith("the cat")


# --- a model of a play ------------------------------------------------------------------------------

def test_a_reply_of_a_model_of_a_play_is_the_rest_of_its_speech(tiny_play_checkpoint):
    prompt = "the moon is high"  # ends inside a token, as typed text does: the model writes the rest of the line
    whole = greedy_text(tiny_play_checkpoint, prompt, 60)
    speech, blank, _ = whole.partition("\n\n")
    assert blank and speech.count("\n") >= 1, whole  # more than one line, then a blank line, within 60 tokens
    result = run_talk(tiny_play_checkpoint, f"/temp 0\n/len 60\n{prompt}\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n", BANNER_LINES + 2)[-1] == speech + "\n"  # the lines, and no more
    assert "up to the end of its paragraph;" in result.stdout.splitlines()[1]
    assert "a blank line" in "\n".join(replies(run_talk(tiny_play_checkpoint, "/help\n")))


# --- runs by name, the run read by default, and the list of them ---------------------------------

MODEL_FILES = ("model.json", "model.npz", "model.tok.json")
SAVED = ["broken", "halfway", "shakespeare", "interrupted", "shakespeare-sonnets", "20261201-0230-corpus"]


@pytest.fixture
def home_of_runs(tiny_checkpoint, tiny_play_checkpoint, tmp_path):
    """A folder holding checkpoints/ as train.py leaves it, its runs saved an hour apart in the order of SAVED,
    the first the last saved: broken (finished, its weights cut short since), halfway (a model of the rows
    saved at a validation, interrupted after it), shakespeare (the play's, finished), interrupted (before its
    first validation: no model), shakespeare-sonnets and 20261201-0230-corpus (the rows', finished). Returns
    the folder, from which talk.py finds the runs by name; what it reads by default is shakespeare."""
    runs = tmp_path / "checkpoints" / "runs"
    for name, source in (("20261201-0230-corpus", tiny_checkpoint), ("shakespeare-sonnets", tiny_checkpoint),
                         ("shakespeare", tiny_play_checkpoint), ("halfway", tiny_checkpoint),
                         ("broken", tiny_checkpoint)):
        shutil.copytree(source, runs / name)
    edit_json(runs / "halfway" / "resume.json", lambda progress: stopped_at(progress, 200))
    truncate_weights(runs / "broken")
    (runs / "interrupted").mkdir()
    for name in ("resume.npz", "resume.json"):  # its resume state is whole, and no model yet
        shutil.copy(tiny_checkpoint / name, runs / "interrupted")
    edit_json(runs / "interrupted" / "resume.json", lambda progress: stopped_at(
        progress, 40, total_steps=2200, settings={"corpus_path": "data/poems.txt"}))
    for age, name in enumerate(SAVED):
        for file in (runs / name).iterdir():  # an hour apart, the first named the last saved
            os.utime(file, (1_800_000_000 - 3600 * age,) * 2)
    return tmp_path


def stopped_at(progress, step, **changes):
    """A resume.json's progress made that of the same run interrupted after step."""
    progress.update(step=step, done=False, step_losses=progress["step_losses"][:step],
                    history=[entry for entry in progress["history"] if entry["step"] <= step], **changes)


def run_talk_in(folder, text, *args):
    """talk.py run from folder, whose checkpoints/ is the home it finds runs in by name."""
    return run_main("talk.py", *args, stdin=text, cwd=folder)


@pytest.mark.parametrize("name, run", [("shakespeare", "shakespeare"),  # a name that starts another's too
                                       ("shakespeare-s", "shakespeare-sonnets"), ("2026", "20261201-0230-corpus")])
def test_a_run_by_its_name_or_the_start_of_it(home_of_runs, name, run):
    result = run_talk_in(home_of_runs, "/temp 0\nthe cat sat\n", "--checkpoint", name)
    folder = home_of_runs / "checkpoints" / "runs" / run
    assert result.returncode == 0, result.stderr
    about = result.stdout.splitlines()[0]
    assert about.startswith(f"model {run}: ") and about.endswith(describe_line(folder))
    assert result.stdout.splitlines()[-1] == run_talk(folder, "/temp 0\nthe cat sat\n").stdout.splitlines()[-1]


def describe_line(folder):
    """The end of the banner's first line for the model in folder: what tells two models apart."""
    return prompting.describe(checkpoint.load(folder)).rsplit(";", 1)[1]


@pytest.mark.parametrize("removed, read", [
    ([], "shakespeare"),  # the latest finished run: not the broken one saved since, nor the unfinished halfway
    (["shakespeare", "shakespeare-sonnets", "20261201-0230-corpus"], "halfway"),  # none finished: the latest whole
    (["shakespeare", "shakespeare-sonnets", "20261201-0230-corpus", "halfway"], None),  # no whole model at all
], ids=["latest-finished", "latest-whole", "none"])
def test_without_a_name_talk_reads_the_latest_finished_run(home_of_runs, removed, read):
    for name in removed:
        shutil.rmtree(home_of_runs / "checkpoints" / "runs" / name)
    if read is None:  # talk.py as a person starts it, in a fresh interpreter: one line on stderr, exit status 2
        result = run_script("talk.py", cwd=home_of_runs, stdin="/temp 0\nthe cat sat\n")
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr == "error: no model in checkpoints/ yet: train one with `python train.py`\n"
        return
    result = run_talk_in(home_of_runs, "/temp 0\nthe cat sat\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith(f"model {read}: ")
    named = run_talk_in(home_of_runs, "/temp 0\nthe cat sat\n", "--checkpoint", read)
    assert result.stdout == named.stdout  # the same model, the same reply
    home = run_talk_in(home_of_runs, "/temp 0\nthe cat sat\n", "--checkpoint", "checkpoints")
    assert home.stdout == named.stdout  # --checkpoint naming the home reads its default run too


def test_the_old_model_of_a_plain_checkpoint_folder_still_loads(tiny_checkpoint, tmp_path):
    """A checkpoints/ of before run folders: the model's three files in it, no runs/."""
    (tmp_path / "checkpoints").mkdir()
    for name in MODEL_FILES:
        shutil.copy(tiny_checkpoint / name, tmp_path / "checkpoints" / name)
    result = run_talk_in(tmp_path, "/temp 0\nthe cat sat\n")
    assert result.returncode == 0, result.stderr
    about = result.stdout.splitlines()[0]
    assert about.startswith("model checkpoints: ") and about.endswith(describe_line(tiny_checkpoint))
    assert result.stdout.splitlines()[-1] == run_talk(tiny_checkpoint, "/temp 0\nthe cat sat\n").stdout.splitlines()[-1]


@pytest.mark.parametrize("name, message", [
    ("shake", "'shake' starts the names of 2 runs in checkpoints/runs/: shakespeare, shakespeare-sonnets; "
              "give more of the name"),
    ("hamlet", "no run in checkpoints/runs/ is named 'hamlet' or starts so; "
               "python talk.py --list lists the runs, python train.py trains one"),
])
def test_a_name_that_names_no_run_or_two_is_one_line(home_of_runs, name, message):
    for script, prompt in (("talk.py", []), ("generate.py", ["the cat"])):
        result = run_main(script, *prompt, "--checkpoint", name, cwd=home_of_runs)
        assert result.returncode == 2 and result.stdout == "", result.stderr
        assert result.stderr == f"error: {message}\n"


def test_list_shows_every_run_the_last_saved_first_its_state_and_the_default(home_of_runs):
    result = run_talk_in(home_of_runs, "", "--list")
    assert result.returncode == 0, result.stderr
    heading, columns, *rows, damaged, removal = result.stdout.splitlines()
    assert removal == "python train.py --remove NAME removes a run, its folder and every file in it"
    assert heading == ("runs in checkpoints/runs/, the last saved first (* is what talk.py reads without "
                       "--checkpoint: the latest finished run)")
    assert columns.split() == ["name", "saved", "(UTC)", "corpus", "steps", "state", "best", "bits/char"]
    runs = home_of_runs / "checkpoints" / "runs"
    play, rows_model = checkpoint.load(runs / "shakespeare"), checkpoint.load(runs / "20261201-0230-corpus")
    play_steps, rows_steps = steps_of(runs / "shakespeare"), steps_of(runs / "20261201-0230-corpus")
    assert [row.split() for row in rows] == [
        ["broken", "2027-01-15", "08:00", "corpus.csv", rows_steps, "DAMAGED", f"{bpc(rows_model):.3f}"],
        ["halfway", "2027-01-15", "07:00", "corpus.csv", f"200/{rows_steps.split('/')[1]}", "interrupted",
         f"{bpc(rows_model):.3f}"],
        ["*", "shakespeare", "2027-01-15", "06:00", "play.txt", play_steps, "finished", f"{bpc(play):.3f}"],
        ["interrupted", "2027-01-15", "05:00", "poems.txt", "40/2,200", "interrupted", "not", "yet"],
        ["shakespeare-sonnets", "2027-01-15", "04:00", "corpus.csv", rows_steps, "finished", f"{bpc(rows_model):.3f}"],
        ["20261201-0230-corpus", "2027-01-15", "03:00", "corpus.csv", rows_steps, "finished", f"{bpc(rows_model):.3f}"],
    ]
    assert damaged == ("broken is damaged: checkpoints/runs/broken/model.npz is damaged (it is not the file model.json "
                       "was saved with: a partial copy, an edit, or files from two runs mixed): restore it from a "
                       "copy, or remove its run (python train.py --remove broken) and train again")
    inside = replies(run_talk_in(home_of_runs, "/models\n", "--checkpoint", "shakespeare"))
    assert inside == result.stdout.splitlines()  # /models lists the same runs, from within a conversation


def steps_of(run):
    """A finished run's steps as the listing shows them: "375/375"."""
    progress = json.loads((run / "resume.json").read_text())
    return f"{progress['step']:,}/{progress['total_steps']:,}"


def bpc(model):
    """Bits per character of the model's best validation, from its history."""
    return {entry["step"]: entry for entry in model.meta["history"]}[model.meta["best_step"]]["val_bpc"]


def test_list_with_no_runs_says_how_to_train_one(tmp_path):
    result = run_talk_in(tmp_path, "", "--list")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == ("error: there are no runs in checkpoints/runs/ yet: train one with `python train.py`, "
                             "named with --name NAME if you like\n")


# --- broken checkpoints -------------------------------------------------------------------------

def truncate_weights(folder):
    data = (folder / "model.npz").read_bytes()
    (folder / "model.npz").write_bytes(data[: len(data) // 2])


def edit_json(path, change):
    """Rewrite the JSON file at path as change, called with its contents, leaves them."""
    contents = json.loads(path.read_text())
    change(contents)
    path.write_text(json.dumps(contents))


def edit_description(change):
    return lambda folder: edit_json(folder / "model.json", change)


@pytest.mark.parametrize("damage, said", [
    (lambda folder: shutil.rmtree(folder), "there is no folder {folder}/: give a run's folder that exists"),
    (lambda folder: (folder / "model.json").unlink(), "no model in {folder}/"),
    (lambda folder: (folder / "model.tok.json").unlink(),
     "{folder}/model.tok.json is damaged (it is missing): restore it from a copy"),
    (truncate_weights, "{folder}/model.npz is damaged (it is not the file model.json was saved with"),
    (lambda folder: (folder / "model.json").write_text('{"format": "numpy-gpt-checkpoint", "vers'),
     "{folder}/model.json is damaged (not valid JSON"),
    (edit_description(lambda meta: meta.update(format="another-project")),  # foreign
     "{folder}/model.json is not a numpy-gpt checkpoint; give a run's folder or name"),
    (edit_description(lambda meta: meta["model"].update(emb_dim=64)),  # the weights do not fit it
     "{folder}/model.npz is damaged (tok_emb has shape ({V}, 16), model.json says ({V}, 64)"),
    (edit_description(lambda meta: meta.update(history=[])), "{folder}/model.json is damaged (it lacks what training"),
    (edit_description(lambda meta: meta.pop("best_step")), "{folder}/model.json is damaged (it lacks what training"),
    (edit_description(lambda meta: meta.update(corpus={"path": "corpus.txt", "rows": 300})),  # before characters
     "{folder}/model.json is damaged (it lacks what training"),
    (lambda folder: (folder / "model.tok.json").write_text('{"format": "numpy-gpt-bpe"}'),  # mixed files
     "{folder}/model.tok.json is damaged (it is not the file model.json was saved with"),
    (edit_description(lambda meta: meta.update(version=9)),  # written by a later version of the code
     "{folder}/model.json has format version 9"),
], ids=["missing", "no-description", "no-tokenizer", "truncated-weights", "truncated-json", "foreign",
        "mismatched-shapes", "no-history", "no-best-step", "corpus-in-rows", "other-tokenizer", "later-version"])
def test_a_broken_checkpoint_is_one_line_and_exit_2(tiny_checkpoint, tmp_path, damage, said):
    folder = tmp_path / "checkpoint"
    shutil.copytree(tiny_checkpoint, folder)
    damage(folder)
    result = run_talk(folder, "the cat\n")
    assert result.returncode == 2 and result.stdout == ""
    said = said.format(folder=folder, V=checkpoint.load(tiny_checkpoint).cfg.vocab_size)
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: " + said), result.stderr
    if said.startswith("no model"):  # it says what to do (a damaged file's: tests/test_train.py)
        assert "train one with `python train.py`" in result.stderr


# --- Ctrl-C -------------------------------------------------------------------------------------

def test_ctrl_c_at_the_prompt_returns_to_it(tiny_checkpoint, monkeypatch):
    typed = iter([KeyboardInterrupt, "the cat"])  # Ctrl-C while it waits for a line, then a line

    def read_line(prompt=""):
        line = next(typed, EOFError)
        if isinstance(line, type):
            raise line
        return line
    monkeypatch.setattr(builtins, "input", read_line)
    result = run_talk(tiny_checkpoint, "")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert result.stdout.splitlines()[BANNER_LINES:BANNER_LINES + 2] == ["", "(interrupted; /quit or Ctrl-D leaves)"]
    assert replies(result)[2].startswith("the cat")  # the session went on


class FlushRecorder(io.StringIO):
    """A stdout that remembers what had been written at its last flush."""

    flushed = ""

    def flush(self):
        self.flushed = self.getvalue()


def test_ctrl_c_during_a_continuation_returns_to_the_prompt(tiny_checkpoint, monkeypatch):
    """In process, with generate replaced by one that is interrupted after its second token; it also
    checks that each token is printed and flushed before the next is drawn."""
    model = checkpoint.load(tiny_checkpoint)
    sat = model.tokenizer.encode("at sat on")  # what the fake generate draws after "the c"
    shown = model.tokenizer.decode(prompting.heal_prompt(model.tokenizer, model.tokenizer.encode("the cat"))[0])
    assert shown == "the c"  # the prompt's last token, "at", is taken back, for the first draw to redo
    stdout = FlushRecorder()
    flushed_before_second = []

    def interrupted_generate(*args, **kwargs):
        yield sat[0]
        flushed_before_second.append(stdout.flushed)
        yield sat[1]
        raise KeyboardInterrupt

    monkeypatch.setattr(prompting, "generate", interrupted_generate)
    monkeypatch.setattr(sys, "stdin", io.StringIO("the cat\n/settings\n"))
    monkeypatch.setattr(sys, "stdout", stdout)
    talk.main(["--checkpoint", str(tiny_checkpoint)])
    assert flushed_before_second[0].endswith("\n" + shown + model.tokenizer.decode(sat[:1]))  # streamed
    assert stdout.getvalue().splitlines()[BANNER_LINES:] == [
        shown + model.tokenizer.decode(sat[:2]), "(interrupted; /quit or Ctrl-D leaves)", DEFAULTS]


# --- what a newcomer met (issue 32): /seed and /models whatever the model ------------------------------

def test_the_seed_command_refuses_a_bad_seed_and_changes_nothing(capsys):
    session = types.SimpleNamespace(seed=5, rng=None)
    assert talk.run_command(session, "/seed -3")
    assert session.seed == 5 and "seed must be a whole number from 0" in capsys.readouterr().err


def test_models_is_one_line_where_the_home_holds_no_runs(tmp_path, capsys):
    session = types.SimpleNamespace(home=tmp_path)  # a GPT-2 folder's, or a run's moved out of checkpoints/
    assert talk.run_command(session, "/models")  # the conversation goes on
    assert capsys.readouterr().err == (f"there are no runs in {tmp_path}/runs/ yet: train one with `python train.py`, "
                                       f"named with --name NAME if you like\n")


def test_models_lists_config_pys_runs_for_a_run_moved_out_of_them(tiny_checkpoint, tmp_path):
    shutil.copytree(tiny_checkpoint, tmp_path / "checkpoints" / "runs" / "kept")
    shutil.copytree(tiny_checkpoint, tmp_path / "moved")
    result = run_main("talk.py", "--checkpoint", tmp_path / "moved", stdin="/models\n", cwd=tmp_path)
    assert result.stderr == "" and "runs in checkpoints/runs/" in result.stdout and " kept " in result.stdout
