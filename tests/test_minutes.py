"""--minutes: the planner's choice, the schedule planned for the time, a run kept to its time, bad input.

No test reads the wall clock: the budget's clock (planner.clock) is a fake one here, which moves only
when a step's loss and gradients are computed, by the seconds the test says that step takes. So a test
says "this machine takes 0.05 s a step, then 0.5 s" and checks what the planner and the run do with it.
A step is one call of loss_and_grads there: the batch is not shared by threads (but in the test of that).
"""

import json
import math
import re
import types

import pytest

import config
from conftest import TINY, one_line_error, run_main, tiny_args, tiny_settings
from engineering import checkpoint, parallel, planner, runs
import train
import transformer


class FakeClock:
    """A clock that stands still but for what a test adds: clock() -> the seconds added so far."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.fixture
def fake_clock(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(planner, "clock", clock)
    monkeypatch.setattr(parallel, "threads_for", lambda *args, **kwargs: 1)  # a step, one call of loss_and_grads
    return clock


def paced(clock, seconds, computed=True):
    """A loss_and_grads that takes seconds(cfg, call) on the fake clock (call: 1, 2, ... for each call); where
    not computed, it only takes the time (the planner's timing does not read what a step returns)."""
    calls = [0]

    def loss_and_grads(params, ids, targets, cfg):
        calls[0] += 1
        clock.now += seconds(cfg, calls[0])
        return transformer.loss_and_grads(params, ids, targets, cfg) if computed else (None, None)
    return loss_and_grads


# Two candidates of this test's own, so that the test holds whatever the measured table says: the larger
# one learns more from each step, and takes ten times as long over it
SHAPES = {"small": planner.SHAPES["1x128"], "large": planner.SHAPES["2x192"]}
TABLE = {"small": [(100, 3.0), (1000, 2.6), (10000, 2.4)], "large": [(100, 3.2), (1000, 2.5), (10000, 2.0)]}
PACE = {128: 0.01, 192: 0.1}  # seconds a step, by the model's width


def corpus_of(text):
    return types.SimpleNamespace(train_text=text[: len(text) * 9 // 10], val_text=text[len(text) * 9 // 10:])


@pytest.mark.parametrize("minutes, chosen", [(1, "small"), (30, "large")])
def test_the_planner_chooses_the_shape_best_in_the_time_at_the_measured_speed(fake_clock, monkeypatch, minutes,
                                                                              chosen):
    # 1 minute: small takes 5,700 steps (2.45 by its line), large 570 (2.67); 30 minutes: small 171,000,
    # large 17,100, both past their last points (2.4 and 2.0)
    monkeypatch.setattr(planner, "SHAPES", SHAPES)
    monkeypatch.setattr(planner, "TABLE", TABLE)
    settings = tiny_settings("home", "corpus.txt")
    budget = planner.Budget(minutes)
    planned = budget.plan(settings, corpus_of("the cat sat on the mat. " * 50), set(), {},
                          paced(fake_clock, lambda cfg, call: PACE[cfg.emb_dim], computed=False))
    assert budget.shape == chosen
    assert budget.timed == {"small": pytest.approx(0.01), "large": pytest.approx(0.1)}
    assert (planned.emb_dim, planned.num_layers) == ((128, 1) if chosen == "small" else (192, 2))
    assert (planned.batch_size, planned.seq_len, planned.lr_max) == (12, 64, 3e-3 if chosen == "small" else 2e-3)


@pytest.mark.parametrize("threads", [1, 2])
def test_the_planner_times_a_step_as_its_run_will_take_it(fake_clock, monkeypatch, threads):
    # shared by two threads, a step of 12 rows is two calls of 6 rows at once: the planner must time that step
    monkeypatch.setattr(parallel, "threads_for", lambda *args, **kwargs: threads)
    monkeypatch.setattr(planner, "SHAPES", {"small": SHAPES["small"]})
    monkeypatch.setattr(planner, "TABLE", {"small": TABLE["small"]})
    rows = []

    def loss_and_grads(params, ids, targets, cfg):
        rows.append(len(ids))
        fake_clock.now += 0.1
        return transformer.loss_and_grads(params, ids, targets, cfg)

    planner.Budget(1).plan(tiny_settings("home", "corpus.txt"), corpus_of("the cat sat on the mat. " * 50), set(), {},
                           loss_and_grads)
    assert set(rows) == {12 // threads}


def test_the_candidates_are_timed_in_turn_so_that_a_load_that_passes_weighs_on_each_alike(fake_clock, monkeypatch):
    # the machine runs 4 times slower for the first 1.5 s of the timing: timed one after the other, the small model
    # would have all its steps in that spell (0.04 s); in rounds, each has a few of its steps there and most after
    monkeypatch.setattr(planner, "SHAPES", SHAPES)
    monkeypatch.setattr(planner, "TABLE", TABLE)
    busy_at_first = lambda cfg, call: PACE[cfg.emb_dim] * (4 if fake_clock.now < 1.5 else 1)  # noqa: E731
    budget = planner.Budget(1)
    budget.plan(tiny_settings("home", "corpus.txt"), corpus_of("the cat sat on the mat. " * 50), set(), {},
                paced(fake_clock, busy_at_first, computed=False))
    assert budget.timed == {"small": pytest.approx(0.01), "large": pytest.approx(0.1)}  # the medians


def test_the_merges_follow_the_texts_length_and_typed_settings_are_kept(fake_clock):
    settings = tiny_settings("home", "corpus.txt", batch_size=4)
    budget = planner.Budget(5)
    planned = budget.plan(settings, corpus_of("a b" * 50_000), {"batch_size"}, {},
                          paced(fake_clock, lambda cfg, call: 0.01, computed=False))
    assert planned.num_merges == 75  # 500 a million characters: 150,000 of them
    assert planned.batch_size == 4


def test_table_reads_a_line_in_log_steps_and_says_when_it_guesses(monkeypatch):
    monkeypatch.setattr(planner, "TABLE", TABLE)
    assert planner.table_bpc("small", 1000) == (2.6, True)
    assert planner.table_bpc("small", 3162)[0] == pytest.approx(2.5, abs=1e-3)  # halfway in log(steps)
    assert planner.table_bpc("large", 100) == (3.2, True)
    assert planner.table_bpc("large", 10) == (pytest.approx(3.9), False)  # the first line, continued
    assert planner.table_bpc("large", 100_000) == (2.0, False)  # the last figure: no gain measured past it


def tiny_budget_run(tmp_path, corpus, monkeypatch, fake_clock, seconds, minutes=1.0):
    """A tiny run of `minutes`, its shape fixed by the settings, each step taking seconds(call) on the fake clock;
    returns (its folder, the (step, total_steps) of every learning rate taken)."""
    monkeypatch.setattr(train, "loss_and_grads", paced(fake_clock, lambda cfg, call: seconds(call)))
    schedule, taken = train.lr_schedule, []

    def recorded(step, total_steps, *args):
        taken.append((step, total_steps))
        return schedule(step, total_steps, *args)
    monkeypatch.setattr(train, "lr_schedule", recorded)
    settings = tiny_settings(tmp_path / "home", corpus, minutes=minutes, eval_tokens=64)
    folder = train.train(settings, given=set(TINY) - {"epochs"} | {"eval_tokens"})  # the shape fixed
    return folder, taken


def test_the_cosine_ends_at_the_last_step_that_fits(tmp_path, corpus, monkeypatch, fake_clock):
    folder, taken = tiny_budget_run(tmp_path, corpus, monkeypatch, fake_clock, lambda call: 0.05)
    last_step, total_steps = taken[-1]
    assert last_step == total_steps  # the run's last step is the cosine's: it took lr_min
    assert 0.85 * 60 <= fake_clock.now <= 60
    saved = json.loads((folder / "model.json").read_text())
    assert saved["steps"] == last_step


def planned_steps(said):
    """The steps the plan line says. Example: "... batch 8, 994 steps (a step timed ..." -> 994"""
    return int(re.search(r"batch \d+, ([\d,]+) steps", said)[1].replace(",", ""))


@pytest.mark.parametrize("slow_from, slow_pace, ends", [
    # twice as slow from 6 s on: each validation (every 198 steps) fits the steps to the pace, and the
    # cosine ends at the last step that fits
    (6, 0.1, "the cosine re-planned"),
    # ten times as slow from 12 s on, just after the first validation: the next would come too late
    (12, 0.5, "out of time")])
def test_a_run_whose_steps_slow_down_stops_at_its_budget(tmp_path, corpus, monkeypatch, fake_clock, capsys,
                                                         slow_from, slow_pace, ends):
    # 0.05 s a step as the planner times it, then slow_pace from slow_from seconds on
    slowing = lambda call: 0.05 if fake_clock.now < slow_from else slow_pace  # noqa: E731
    folder, taken = tiny_budget_run(tmp_path, corpus, monkeypatch, fake_clock, slowing)
    said = capsys.readouterr().out
    planned = planned_steps(said)
    assert 900 < planned < 1100  # about (57 s - 6 validations of 1.04 s) / 0.05 s, as fit() plans it
    assert 0.85 * 60 <= fake_clock.now <= 60
    last_step, total_steps = taken[-1]
    assert last_step < planned
    if ends == "out of time":
        assert last_step < total_steps and f"stopped at step {last_step:,}: out of time" in said
    else:
        assert last_step == total_steps and "stopped" not in said
    assert runs.summarize(folder).state() == "finished"


def test_a_machine_slowed_under_the_run_is_said_once_with_the_steps_and_bits_per_char_now(tmp_path, corpus,
                                                                                          monkeypatch, fake_clock,
                                                                                          capsys):
    # the tiny shape measured by a table of this test's own (3.0 bits/char at 100 steps, 2.5 at 1,000: 3.0 - 0.5
    # log10(steps / 100)) on a text like the table's; timed at 0.125 s a step (after an untimed one), then 4 times
    # slower as soon as the timing is done: the first validation finds a quarter of the plan's steps fit
    monkeypatch.setattr(planner, "SHAPES", {"tiny": {name: TINY[name] for name in planner.SHAPE_SETTINGS}})
    monkeypatch.setattr(planner, "TABLE", {"tiny": [(100, 3.0), (1000, 2.5)]})
    monkeypatch.setattr(planner, "TEXT_K", 0.0)
    monkeypatch.setattr(planner, "MEASURED_TEXTS", 0)
    folder, taken = tiny_budget_run(tmp_path, corpus, monkeypatch, fake_clock,
                                    lambda call: 0.125 if fake_clock.now < 0.125 + planner.TIMING_SECONDS else 0.5)
    said = capsys.readouterr().out
    planned, last_step = planned_steps(said), taken[-1][0]
    slowed = [line for line in said.splitlines() if "slower" in line]
    assert len(slowed) == 1, said
    by_the_table = lambda steps: f"{3.0 - 0.5 * math.log10(steps / 100):.2f} ± 0.15"  # noqa: E731
    assert slowed[0] == (f"minutes 1: this machine runs 4.0 times slower than when it was timed (0.500 s a step, not "
                         f"0.125 s): {last_step} steps fit now, of the {planned} planned; expects "
                         f"{by_the_table(last_step)} bits/char now")
    best = checkpoint.read_record(folder / "model.json")["history"]
    reached = min(best, key=lambda entry: entry["val_loss"])["val_bpc"]
    assert said.splitlines()[-1].endswith(
        f"; --minutes 1 expected {by_the_table(planned)} bits/char for {planned} steps, {by_the_table(last_step)} "
        f"for the {last_step} that fit, and reached {reached:.3f}, outside its ±. Its model is in {folder}/: "
        f"python talk.py --checkpoint {folder}")


def test_bad_minutes_are_one_line(tmp_path, corpus):
    for minutes, said in [("-1", "minutes must be 0 (off) or from 0.1 to 10,080 (a week), got -1.0"),
                          ("nan", "minutes must be 0 (off) or from 0.1"), ("inf", "minutes must be 0 (off)"),
                          ("0.01", "got 0.01"), ("ten", "argument --minutes: invalid float value: 'ten'")]:
        assert said in one_line_error(run_main("train.py", *tiny_args(tmp_path, corpus), "--minutes", minutes))


@pytest.mark.parametrize("extra, said", [
    (["--max_steps", "50"], "--minutes fits the steps to the time, and --max_steps fixes them"),
    (["--epochs", "3"], "--minutes fits the steps to the time, and --epochs fixes them"),
    (["--recipe", "gpt2", "--init_from", "gpt2"], "--minutes plans a model trained from scratch")])
def test_minutes_and_settings_that_fix_the_steps_say_what_conflicts(tmp_path, corpus, extra, said):
    assert said in one_line_error(run_main("train.py", "--corpus_path", corpus, "--checkpoint", tmp_path,
                                           "--minutes", "1", *extra))


def test_minutes_with_a_recipe_keeps_its_shape_and_fits_its_steps_to_the_time(tmp_path, corpus, monkeypatch,
                                                                              fake_clock):
    # 2 s a step here: about 20 steps of the book's model in the minute
    monkeypatch.setattr(train, "loss_and_grads", paced(fake_clock, lambda cfg, call: 2.0))
    result = run_main("train.py", "--recipe", "book", "--minutes", "1", "--processes", "1", "--corpus_path", corpus,
                      "--checkpoint", tmp_path)
    assert result.returncode == 0, result.stderr
    plan = next(line for line in result.stdout.splitlines() if line.startswith("minutes 1:"))
    assert "1 block of width 128 (4 heads, MLP 512, context 64)" in plan  # the recipe's shape, the table's 1x128
    assert "yours 2.000 s" not in plan and "1x128 2.000 s" in plan
    folder = runs.summarize_runs(tmp_path)[0].folder
    saved = json.loads((folder / "model.json").read_text())
    assert saved["settings"]["recipe"] == "book"
    assert saved["settings"]["max_steps"] < config.RECIPES["book"]["max_steps"]  # the recipe's 2,200 do not fit
    assert 20 <= checkpoint.read_progress(folder)["step"] <= 30  # the steps that fit, fitted again at validations


def test_the_progress_line_says_the_time_left_of_the_budget(fake_clock):
    budget = planner.Budget(3)
    fake_clock.now = 50.0
    assert budget.left_said() == "2 min 10 s left of 3 min 00 s"
    fake_clock.now = 200.0
    assert budget.left_said() == "0 min 00 s left of 3 min 00 s"  # never a negative time
