"""--minutes M: the best model this machine can train in M minutes, from the command to its exit.

How the choice is made, in four steps a learner can redo by hand:

1. TABLE: the bits per character each candidate shape (SHAPES, trained with RUN's settings) reached on
   the held-out tenth of Shakespeare's tragedies at the end of a run of so many steps, measured on the
   date written there with benchmarks/bench_minutes.py --table. The table counts steps, not seconds, so
   it holds on any machine; between two of its points the bits/char is read off a straight line in
   log(steps); before its first point the first line goes on, and past its last the last figure holds,
   both guesses the plan says are guesses.
2. The text: a text easier to predict than the tragedies reaches fewer bits per character with the same
   model. bz2, the standard library's compressor, is a cheap judge of that: the table's figure is scaled
   by 1 - TEXT_K (1 - z / TEXT_BZ2), z bz2's bits/char on this text (text_factor).
3. This machine: a few steps of each shape are timed here (seconds in all), on the threads or
   processes its run would share each batch between, in rounds of one step of each in turn, and each
   shape's median taken, so that a load that comes or goes meanwhile weighs on all alike; the steps that
   fit are the seconds left, less the validations and saves, over the seconds a step takes.
4. The choice: the shape whose predicted bits/char at the steps that fit it is the lowest. A larger
   model learns more from each step but takes fewer of them in the time, so in a few minutes the small
   one wins, and the larger ones only where the time holds enough of their steps (docs/08-training.md).

Then the run keeps to its time (Budget): the schedule's cosine ends at the last step that fits; at each
validation the steps are fitted again to the pace the run has kept, and the run is done when the time
left holds no other step and a last validation. Where the steps that fit fall below SLOWED of the plan's,
the run says so once (slowed): how much slower the machine runs than when it was timed, the steps that fit
now, and the bits/char to expect now; its last line gives the bits/char expected and reached (outcome).
The expectation assumes the machine keeps the speed it was timed at. Its clock is `clock`, which a test replaces.
"""

import bz2
import contextlib
import math
import time
from datetime import datetime, timedelta

import numpy as np

from engineering.errors import InputError
from engineering.parallel import sharing
from engineering.settings import model_config, replaced
from engineering.wording import duration, plural
from transformer import init_params

clock = time.perf_counter  # the budget's clock: seconds from any start (a test puts a fake one here)

# The candidates, each a model of the same family (the book recipe's is 1x128), and the settings every
# --minutes run starts from: the book recipe's, measured there (config.py), but for its shape and steps.
SHAPES = {
    "1x128": {"num_layers": 1, "emb_dim": 128, "num_heads": 4, "ff_dim": 512},
    "2x128": {"num_layers": 2, "emb_dim": 128, "num_heads": 4, "ff_dim": 512},
    "2x192": {"num_layers": 2, "emb_dim": 192, "num_heads": 6, "ff_dim": 768, "lr_max": 2e-3, "lr_min": 2e-4},
}
RUN = {"context_len": 64, "seq_len": 64, "num_merges": 500, "batch_size": 12, "lr_max": 3e-3, "lr_min": 3e-4,
       "warmup_steps": 100, "beta2": 0.99, "weight_decay": 0.1, "eval_tokens": 8192, "patience": 0}
SHAPE_SETTINGS = ("num_layers", "emb_dim", "num_heads", "ff_dim", "context_len", "seq_len")
MERGES_PER_CHARACTER = RUN["num_merges"] / 1_000_000  # 500 merges for a text of a million characters

# TABLE[shape]: (steps, bits/char) at the end of a run of that many steps, on Shakespeare's eight tragedies
# (1.16 MB, benchmarks/bench_text.py), held-out tenth scored over every character; measured 2026-12-02 on
# a 2-core machine shared with other work (one run a point: a second seed moves a point by about 0.06).
# A shape of SHAPES is a candidate once it has two points here.
TABLE = {
    "1x128": [(500, 2.795), (1500, 2.344), (4500, 2.044), (13500, 2.028)],
    "2x128": [(1500, 2.517), (4500, 2.071)],
    "2x192": [(1500, 2.435), (4500, 2.041), (13500, 2.007)],
}
TEXT_BZ2 = 2.387  # bz2's bits per character on the tragedies, the table's text
# the share of bz2's gap between two texts that the model's bits/char show. Measured on the King James Bible's
# Genesis to Ruth (benchmarks/bench_minutes.py), which bz2 packs into 1.611 bits/char: 1x128 reached 1.762 at
# 1,500 steps and 1.676 at 4,500, where the tragedies reached 2.344 and 2.044, so 1 - 1.762 / 2.344 =
# K (1 - 1.611 / 2.387) gives K = 0.76 at 1,500 steps and 0.55 at 4,500: the mean, which misses each by 0.08
TEXT_K = 0.66
# bits/char: a second seed moves a point by about 0.06, and text_factor misses its points by 0.08; the plans of
# bench_minutes.py's races missed by 0.14 (an older timing of 3 steps), 0.10 and 0.01, and at 10 minutes by 0.03
UNCERTAINTY = 0.15
MEASURED_TEXTS = 500_000  # characters at least in a text the table's figures hold for (its texts have about 1.1 M)

VALIDATIONS = 5  # in a run, at most: each scores eval_tokens held-out tokens, saves the best model and the state
VALIDATING = 0.1  # of the time at most: a short run validates fewer times
END = 0.95  # of the budget, where the last step ends: the last validation, the exit and the pace's noise take the rest
TIMED_ROUNDS = 5  # of one step of each candidate at least, after one untimed step each (first touches of memory)
TIMING_SECONDS = 3.0  # of rounds at least: on a busy machine one step's time varies by half, and more between two
SLOWED = 0.8  # of the steps planned: where fewer fit at a validation, the run says that the machine slowed
FEWEST_STEPS = 20  # a plan that fits fewer is refused: the time is gone on reading and the tokenizer
SAVE_SECONDS = 1.0  # a validation's save (model, state, losses.csv and .png), before one is measured


def table_bpc(shape, steps):
    """(bits/char after a run of `steps` on the tragedies, whether steps lies within the table's points).

    Read off the straight line in log(steps) through the two nearest points; before the first point, the
    first line goes on; past the last, the last figure holds, as no gain was measured there.
    Example: 1x128's points (1500, 2.344), (4500, 2.044): steps 2598 (halfway in log) -> (2.194, True)
    """
    points = TABLE[shape]
    inside = points[0][0] <= steps <= points[-1][0]
    if steps > points[-1][0]:
        return points[-1][1], False
    at = min(max(1, np.searchsorted([count for count, _ in points], steps)), len(points) - 1)
    (steps0, bpc0), (steps1, bpc1) = points[at - 1], points[at]
    slope = (bpc1 - bpc0) / math.log(steps1 / steps0)
    return bpc0 + slope * math.log(max(steps, 1) / steps0), inside


def text_factor(text):
    """How hard the text is to predict next to the table's: 1 - TEXT_K (1 - z / TEXT_BZ2), z bz2's bits/char.

    Example: the King James Bible's Genesis to Ruth, which bz2 packs into 1.611 bits/char -> 0.785
    """
    return 1 - TEXT_K * (1 - bz2_bits_per_character(text) / TEXT_BZ2)


def bz2_bits_per_character(text):
    """Example: a text of 1,000 characters that bz2 packs into 200 bytes -> 1.6"""
    return 8 * len(bz2.compress(text.encode("utf-8"), 9)) / max(1, len(text))


def timed_model(s, vocab_size):
    """(params, ids, targets, cfg): a model of the settings s and a batch of random windows, a step of which is timed."""
    cfg = model_config(s, vocab_size)
    rng = np.random.default_rng(s.seed)
    params = init_params(cfg, rng, dtype=np.dtype(s.dtype))
    ids, targets = rng.integers(0, cfg.vocab_size, (2, s.batch_size, s.seq_len))
    return params, ids, targets, cfg


def seconds_per_step(models, loss_and_grads):
    """{name: the median seconds of a forward and backward pass} of each of models (name: timed_model's four),
    by loss_and_grads[name], timed in rounds of one step of each in turn, so that a load that comes or goes while
    they are timed weighs on each alike: TIMED_ROUNDS rounds at least, or as many as TIMING_SECONDS takes."""
    for name, model in models.items():  # untimed: first touches of memory
        loss_and_grads[name](*model)
    times, started = {name: [] for name in models}, clock()
    while min(map(len, times.values())) < TIMED_ROUNDS or clock() - started < TIMING_SECONDS:
        for name, model in models.items():
            step_started = clock()
            loss_and_grads[name](*model)
            times[name].append(clock() - step_started)
    return {name: float(np.median(seconds)) for name, seconds in times.items()}


def shape_name(s):
    """The name of the shape of SHAPES (with RUN's context) that the settings s give, else "yours"."""
    for name, shape in SHAPES.items():
        if all(getattr(s, key) == {**RUN, **shape}[key] for key in SHAPE_SETTINGS):
            return name
    return "yours"


def shape_words(s):
    """Example: num_layers 1, emb_dim 128, num_heads 4, ff_dim 512, context_len 64 -> "1 block of width 128 ..."""
    return (f"{plural(s.num_layers, 'block')} of width {s.emb_dim} ({plural(s.num_heads, 'head')}, "
            f"MLP {s.ff_dim}, context {s.context_len})")


class Budget:
    """The time of a run: M minutes from the command (0 minutes: no limit, and each method leaves the run as it is).

    plan() and fit() choose the run before it starts; the loop then asks, through the run's log, whether
    it is out_of_time() and, at each validation, where its last step is now (steps_that_fit)."""

    def __init__(self, minutes):
        self.minutes, self.started = minutes, clock()
        self.deadline = self.started + 60 * minutes
        self.end = self.started + END * 60 * minutes  # where the plan puts the last step's end
        self.pace = None  # seconds a step: timed by plan(), then the run's own since its last validation
        self.validation_seconds = None  # a validation with its save: estimated by fit(), then measured
        self.since = None  # (clock, step) the run's pace is measured from: its start, then its last validation
        self.last_step_at = None  # clock when the last step was done: a validation starts there
        self.shape, self.text_factor, self.characters, self.timed, self.spent = None, 1.0, 0, {}, False
        self.planned, self.said_slowed = None, False  # the steps fit() planned; whether slowed() has said its line

    def __bool__(self):  # a budget of 0 minutes is no limit
        return bool(self.minutes)

    def plan(self, settings, corpus, typed, recipe, loss_and_grads):
        """The settings for the time: the shape (the best in the time among SHAPES, or the one the settings fix),
        the merges, the batch and the schedule's settings. typed: the settings typed; recipe: the recipe's
        settings; each of them is kept. One line for a setting that fixes what the time decides."""
        if not self.minutes:
            return settings
        clash = sorted({"max_steps", "epochs"} & typed)
        if clash:
            raise InputError(f"--minutes fits the steps to the time, and --{clash[0]} fixes them: give one or the "
                             f"other")
        fixed, text = typed | set(recipe), corpus.train_text + corpus.val_text
        chosen = {name: value for name, value in RUN.items() if name not in fixed}
        if "num_merges" not in fixed:  # fewer for a shorter text: a merge needs a pair seen often enough to learn
            chosen["num_merges"] = round(MERGES_PER_CHARACTER * min(len(text), 1_000_000))
        settings = replaced(settings, chosen)
        measured = {name: shape for name, shape in SHAPES.items() if len(TABLE.get(name, ())) >= 2}
        shapes = {shape_name(settings): {}} if fixed & set(SHAPE_SETTINGS) else measured
        vocab_size = len(set(text)) + settings.num_merges  # at most: the alphabet and every merge
        self.text_factor, self.characters = text_factor(text), len(text)
        candidates = {name: replaced(settings, shape) for name, shape in shapes.items()}
        models = {name: timed_model(s, vocab_size) for name, s in candidates.items()}
        with contextlib.ExitStack() as stack:  # each on the threads or processes its run will use
            shared = {name: stack.enter_context(sharing(s, models[name][3], loss_and_grads)).loss_and_grads
                      for name, s in candidates.items()}
            self.timed = seconds_per_step(models, shared)
        until_end = self.end - clock()
        self.shape = min(candidates, key=lambda name: self.expected(name, until_end / self.timed[name])[0])
        self.pace = self.timed[self.shape]
        return candidates[self.shape]

    def expected(self, shape, steps):
        """(bits/char expected after `steps` of the shape on this text, whether the table measured such a run);
        (inf, False) for a shape the table has not measured."""
        if len(TABLE.get(shape, [])) < 2:
            return math.inf, False
        bpc, inside = table_bpc(shape, steps)
        return self.text_factor * bpc, inside and self.characters >= MEASURED_TEXTS

    def fit(self, settings, validation_tokens, typed):
        """The settings with the steps that fit the time left (where the cosine ends) and validations every
        so many steps; says the plan in one line. validation_tokens: the held-out tokens there are."""
        if not self.minutes:
            return settings
        scored = min(settings.eval_tokens or validation_tokens, validation_tokens) + settings.max_new_tokens
        # a forward pass is about a third of a step's forward and backward: two thirds, to be safe
        self.validation_seconds = self.pace * scored / (settings.batch_size * settings.seq_len) * 2 / 3 + SAVE_SECONDS
        validations = max(1, min(VALIDATIONS, int(VALIDATING * (self.end - clock()) / self.validation_seconds)))
        steps = self.steps_in(self.end - clock(), validations + 1)
        if steps < FEWEST_STEPS:
            raise InputError(f"--minutes {self.minutes:g} leaves {max(0.0, self.deadline - clock()):.0f} s after "
                             f"reading the corpus and learning the tokenizer: {plural(steps, 'step')} of "
                             f"{self.pace:.3f} s here; give more minutes")
        chosen = {"max_steps": steps, "eval_interval": max(1, steps // validations),
                  "warmup_steps": min(settings.warmup_steps, max(1, steps // 10))}
        settings = replaced(settings, {name: value for name, value in chosen.items()
                                       if name == "max_steps" or name not in typed})
        self.since, self.planned = (clock(), 0), steps
        print(self.plan_line(settings))
        return settings

    def steps_in(self, seconds, validations):
        """The steps that fit in seconds beside that many validations and their saves."""
        return max(0, int((seconds - validations * self.validation_seconds) / self.pace))

    def expected_said(self, steps):
        """The bits/char expected after steps, as a line says it: "2.00 ± 0.15", "about 2.2" (a guess, outside what
        the table measured), or None where the table has not measured the shape."""
        bpc, measured = self.expected(self.shape, steps)
        if not math.isfinite(bpc):
            return None
        return f"{bpc:.2f} ± {UNCERTAINTY:.2f}" if measured else f"about {bpc:.1f}"

    def plan_line(self, s):
        expected, measured = self.expected_said(s.max_steps), self.expected(self.shape, s.max_steps)[1]
        if expected is None:
            expects = "no bits/char expected: the planner's table has not measured this shape"
        elif measured:
            expects = f"expects {expected} bits/char"
        else:
            expects = (f"expects {expected} bits/char, a guess: the table measured runs of "
                       f"{TABLE[self.shape][0][0]:,} to {TABLE[self.shape][-1][0]:,} steps on texts of "
                       f"{MEASURED_TEXTS:,} characters or more")
        ends = datetime.now() + timedelta(seconds=max(0.0, self.deadline - clock()))
        timed = ", ".join(f"{name} {seconds:.3f} s" for name, seconds in self.timed.items())
        return (f"minutes {self.minutes:g}: {shape_words(s)}, {plural(s.num_merges, 'merge')}, batch {s.batch_size}, "
                f"{s.max_steps:,} steps (a step timed here: {timed}; the cosine ends at the last), validating every "
                f"{s.eval_interval:,}; ends by {ends:%H:%M:%S}; {expects}")

    # --- during the run: what the log tells the budget, and what the loop asks of it ---

    def stepped(self, step):
        """A step is done: the run's pace since its last validation."""
        if self.minutes and self.since is not None:
            self.last_step_at = clock()
            self.pace = (self.last_step_at - self.since[0]) / (step - self.since[1])

    def validated(self, step):
        """A validation at step is done and saved: its seconds are those since the step."""
        if self.minutes and self.last_step_at is not None:
            self.since = (clock(), step)
            self.validation_seconds = self.since[0] - self.last_step_at

    def out_of_time(self):
        """Whether the time left before END holds no other step (once spent, it stays spent)."""
        self.spent = self.spent or bool(self.minutes) and self.end - clock() < self.pace
        return self.spent

    def steps_that_fit(self, step, total_steps, validate_every):
        """At a validation: the run's last step, fitted to the pace it has kept, so that the cosine ends on time."""
        if not self.minutes:
            return total_steps
        more = self.steps_in(self.end - clock(), 1)
        return step + max(1, self.steps_in(self.end - clock(), 1 + more // validate_every))

    def slowed(self, steps):
        """Where the steps that fit now fall below SLOWED of the plan's, the line that says so, once a run: how much
        slower this machine runs than when it was timed, the steps that fit and the bits/char to expect now; else None.
        Example: "minutes 3: this machine runs 4.2 times slower than when it was timed (0.126 s a step, not 0.030 s):
        194 steps fit now, of the 824 planned; expects 2.36 ± 0.15 bits/char now" """
        if not self.minutes or self.said_slowed or steps >= SLOWED * self.planned:
            return None
        self.said_slowed = True
        timed, expected = self.timed[self.shape], self.expected_said(steps)
        return (f"minutes {self.minutes:g}: this machine runs {self.pace / timed:.1f} times slower than when it was "
                f"timed ({self.pace:.3f} s a step, not {timed:.3f} s): {plural(steps, 'step')} fit now, of the "
                f"{self.planned:,} planned" + (f"; expects {expected} bits/char now" if expected else ""))

    def outcome(self, reached, steps):
        """The run's last words on its time: the bits/char expected for the steps planned (and for the steps it took,
        where the machine slowed) and reached, the run's best validation. "" without --minutes or an expectation.
        Example: "; --minutes 3 expected 2.00 ± 0.15 bits/char for 824 steps, 2.36 ± 0.15 for the 194 that fit,
        and reached 2.356, within its ±" """
        if not self.minutes or self.expected_said(self.planned) is None:
            return ""
        said = (f"; --minutes {self.minutes:g} expected {self.expected_said(self.planned)} bits/char for "
                f"{plural(self.planned, 'step')}")
        if self.said_slowed:
            said += f", {self.expected_said(steps)} for the {steps:,} that fit"
        bpc, measured = self.expected(self.shape, steps if self.said_slowed else self.planned)
        verdict = "" if not measured else ", within its ±" if abs(reached - bpc) <= UNCERTAINTY else ", outside its ±"
        return f"{said}, and reached {reached:.3f}{verdict}"

    def left_said(self):
        """The time left against the budget, for the progress line. Example: "1 min 10 s left of 3 min 00 s"."""
        return f"{duration(max(0.0, self.deadline - clock()))} left of {duration(60 * self.minutes)}"
