"""A run as it goes: its folder's files, the progress line, Ctrl-C, and the one door the loop calls.

train.py's loop holds the algorithm (the step, the losses, the best validation, the patience rule);
this module keeps the books. `opened` is the door: around the loop it holds the run folder's lock,
Ctrl-C, the progress line, the threads or processes that share a batch, and the clean-up; the loop calls it
once a step (`stepped`), at each validation (`validated`), and asks whether to stop (`stop_asked`).
What it writes: the best model (checkpoint.save_model), the state to resume from, losses.csv and
losses.png, every file whole or not at all (files.py).
"""

import collections
import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

import numpy as np

from engineering import checkpoint, runs
from engineering.errors import InputError, os_reason, os_remedy, stdout_to_nowhere
from engineering.files import removed_on_failure, temporary_name, write_atomically
from engineering.parallel import sharing
from engineering.settings import recorded
from engineering.wording import as_path, duration, home_option, plural

LOG_SECONDS = 10  # between progress lines, where stderr is not a terminal
RATE_SECONDS = 30  # the speed and the time to go are those of about the last RATE_SECONDS of steps


@dataclass
class Run:
    """Where a run writes, and what it has done so far: what the log saves, and a resumed run starts from."""
    folder: Path  # home/runs/<name>/
    total_steps: int
    corpus: dict  # what model.json records of the corpus: path, sha256, kind, characters; val_path, val_sha256
    step: int = 0  # steps taken, as the log last heard of them
    step_losses: list = field(default_factory=list)  # the training loss of every step, the first one's first
    history: list = field(default_factory=list)  # one entry per validation: step, train_loss, val_loss, val_bpc
    done: bool = False  # it took its last step, or stopped improving (patience)
    started: float = field(default_factory=time.perf_counter)
    said_no_plot: bool = False  # that losses.png cannot be drawn, said once a run
    budget: object = None  # --minutes: the run's time (planner.Budget); None where it has no limit
    model_step: int = None  # the step of the model in its folder, None before the first is saved
    state_step: int = None  # the step of the state to resume from in its folder, None before the first is saved

    def best(self):
        return min(self.history, key=lambda entry: entry["val_loss"]) if self.history else None

    def where_the_model_is(self):
        best = self.best()
        if best is None:
            return "it had not validated a model yet, so there is none to talk to"
        return f"its best model (step {best['step']:,}) is in {self.folder}/"

    def model_meta(self, settings, slices):
        """What model.json records beside the model's shape (checkpoint.save_model)."""
        return {"settings": recorded(settings), "seed": settings.seed, "steps": self.step, "best_step": self.best()["step"],
                "run": self.folder.name, "history": self.history,
                "slices": slices,  # of each batch, on threads or processes: they decide the gradients' last bits
                "corpus": self.corpus,
                "versions": {"python": sys.version.split()[0], "numpy": np.__version__, "pandas": version("pandas")},
                "trained_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}

    def save_progress(self, params, opt, settings):
        """The resume state (weights, AdamW's moments, where training stands), then losses.csv and .png."""
        progress = {"step": self.step, "total_steps": self.total_steps, "done": self.done, "settings": recorded(settings),
                    "corpus_sha256": self.corpus["sha256"], "val_sha256": self.corpus.get("val_sha256"),
                    "step_losses": self.step_losses, "history": self.history}
        with self.saving():
            checkpoint.save_resume_state(self.folder, params, opt.state(), progress)
            self.state_step = self.step
            drawn = write_losses(self.folder, self.step_losses, self.history)
        if not drawn and not self.said_no_plot:
            print_out(NO_PLOT)
            self.said_no_plot = True

    @contextlib.contextmanager
    def saving(self):
        """Around a save: an error of the system (a full disk, a folder made read-only) becomes one line that says
        what is wrong, what of the run is kept, and what to do (an InputError); the save's temporary files are
        deleted already (files.removed_on_failure)."""
        try:
            yield
        except OSError as err:
            raise InputError(f"{os_reason(err)}, so the save at step {self.step:,} failed: {self.what_is_kept()}; "
                             f"{os_remedy(err)}, and {self.what_to_do()}") from None

    def what_is_kept(self):
        if self.model_step is None and self.state_step is None:
            return "it was the run's first save, so nothing of the run is kept"
        model = "" if self.model_step is None else f"the model of step {self.model_step:,}"
        state = "" if self.state_step is None else f"the state to resume from of step {self.state_step:,}"
        return f"{' and '.join(filter(None, [model, state]))} {'is' if not model or not state else 'are'} kept in " \
               f"{self.folder}/"

    def what_to_do(self):
        if self.model_step is None and self.state_step is None:
            return "start the run again"
        again = " (it takes its steps again from the first: the same seed, the same steps)" if \
            self.state_step is None else ""
        return f"resume with: {resume_command(self.folder)}{again}"


def resume_command(folder):
    """The command that resumes the run in folder: by its name, with its home where that is not config.py's, or by
    its folder, written as a path, for a run moved out of its home."""
    home = runs.home_of(folder)
    return f"python train.py --resume {Path(folder).name}{home_option(home)}" if home else \
        f"python train.py --resume {as_path(folder)}"


def start(settings, corpus, cfg, total_steps, resume_from, name, params, opt, budget=None):
    """A new run in a folder of its own in settings.checkpoint/runs/, or the run in resume_from taken up: its
    saved weights and AdamW state put into params and opt. budget: its time (planner.Budget), if any."""
    info = {"path": str(corpus.path), "sha256": checkpoint.sha256_of(corpus.path), "kind": corpus.kind,
            "characters": len(corpus.train_text) + len(corpus.val_text), "validation_characters": len(corpus.val_text)}
    if corpus.val_path:  # --val_path: the held-out text, a file of its own, checked at a resume as the corpus is
        info.update(val_path=str(corpus.val_path), val_sha256=checkpoint.sha256_of(corpus.val_path))
    if resume_from is None:
        given = name is not None
        name = name if given else runs.default_run_name(corpus.path, datetime.now(timezone.utc))
        return Run(runs.new_run_folder(settings.checkpoint, name, given), total_steps, info, budget=budget)
    state = checkpoint.load_resume_state(resume_from, cfg)
    if state is None:  # it saved its model, and no state to resume from: its steps are taken again
        return restarted(Path(resume_from), total_steps, info, corpus.path)
    saved_params, opt_state, progress = state  # its corpus and held-out text were checked before the tokenizer
    if total_steps <= progress["step"]:
        raise InputError(f"the run {resume_from.name} has taken {plural(progress['step'], 'step')}, and these "
                         f"settings give it {total_steps:,}: give a larger --max_steps or --epochs to train it further")
    for key in params:
        params[key][...] = saved_params[key]
    try:
        opt.load_state(opt_state)
    except ValueError as err:  # the state of another model: the optimizer's own words say so
        raise InputError(str(err)) from None
    run = Run(Path(resume_from), total_steps, info, progress["step"], progress["step_losses"], progress["history"],
              state_step=progress["step"])
    best = run.best()
    run.model_step = best and best["step"]
    if best is not None and 0 < settings.patience <= len(run.history) - 1 - run.history.index(best):
        raise InputError(f"the run {resume_from.name} stopped because {plural(settings.patience, 'validation')} "
                         f"in a row did not beat its best; resume it with a larger --patience, or --patience 0 to let "
                         f"it run to the end")
    stretched = "" if total_steps == progress["total_steps"] else \
        f" (it was to take {progress['total_steps']:,}: the learning rate follows the cosine of the new length)"
    print(f"resuming the run {resume_from.name} at step {progress['step']:,} of {total_steps:,}{stretched}")
    return run


def restarted(folder, total_steps, info, corpus_path):
    """The run in folder taken up from its first step: it saved its model (checkpoint.check_files), but no state to
    resume from (the disk was full at its first save, or a kill came between the two). The same seed takes the same
    steps, so it ends as a run never stopped would; its model stays until the first validation saves it again."""
    meta = checkpoint.check_files(folder)
    recorded = meta.get("corpus") if isinstance(meta.get("corpus"), dict) else {}
    if recorded.get("sha256") != info["sha256"]:
        raise InputError(f"the corpus {corpus_path} changed since the run {folder.name} saved its model; start a new "
                         f"run without --resume")
    best = meta.get("best_step")
    print(f"resuming the run {folder.name} from its first step: it saved its model but no state to resume from, so "
          f"its steps are taken again (the same seed takes the same steps)")
    return Run(folder, total_steps, info, model_step=best if type(best) is int else None)
def check_texts(resume_from, corpus):
    """Before the tokenizer, which other texts would change: a run is resumed on the corpus it was trained on, and on
    its held-out text (--val_path), the same bytes, as resume.json records their sha256 (a run that saved no resume
    state is taken up from its first step by restarted, which checks its corpus against model.json)."""
    if not checkpoint.current_record(Path(resume_from), "resume.json", checkpoint.RESUME_FILES).is_file():
        return
    progress = checkpoint.read_progress(resume_from)
    if progress.get("corpus_sha256") != checkpoint.sha256_of(corpus.path):
        raise InputError(f"the corpus {corpus.path} changed since the run {Path(resume_from).name} was interrupted; "
                         f"start a new run without --resume")
    if progress.get("val_sha256") != (corpus.val_path and checkpoint.sha256_of(corpus.val_path)):
        raise InputError(f"the held-out text {corpus.val_path} changed since the run {Path(resume_from).name} was "
                         f"interrupted; start a new run without --resume")


# --- the door -----------------------------------------------------------------------------------

class RunLog:
    """What the loop tells the run, and asks of it (see opened)."""

    def __init__(self, run, params, opt, cfg, tokenizer, settings, slices, loss_and_grads, stop, progress):
        self.run, self.params, self.opt, self.cfg, self.tokenizer = run, params, opt, cfg, tokenizer
        self.settings, self.slices, self.stop, self.progress = settings, slices, stop, progress
        self.loss_and_grads = loss_and_grads  # the batch's loss and gradients, in this thread or shared out

    def stepped(self, step, loss, lr):
        """A step is taken: the progress line and the budget hear of it."""
        self.run.step = step
        if self.run.budget:
            self.run.budget.stepped(step)
        self.progress.update(step, loss, lr)

    def validated(self, step, is_best, done, sample):
        """A validation, the last entry of the run's history, is taken: the model saved where it is the best,
        its line printed with a sample, and the state to resume from saved (done: the run ends here)."""
        run, entry = self.run, self.run.history[-1]
        run.step, run.done = step, done
        if is_best:
            with run.saving():
                checkpoint.save_model(run.folder, self.params, self.cfg, self.tokenizer,
                                      run.model_meta(self.settings, self.slices))
                run.model_step = step
        since = run.history[-2]["step"] if len(run.history) > 1 else 0
        # the mean of the steps' losses: losses.csv has each step's own, one batch's
        self.progress.write(f"step {step:>6,}: train {entry['train_loss']:.4f} (mean of steps {since + 1:,} to "
                            f"{step:,})  val {entry['val_loss']:.4f}  ({entry['val_bpc']:.3f} bits/char)"
                            f"{'  best, saved' if is_best else ''}\n"
                            f"              sample: {sample!r}")
        run.save_progress(self.params, self.opt, self.settings)
        if run.budget:
            run.budget.validated(step)

    def out_of_time(self):
        """--minutes: whether the time planned for the steps holds no other one (planner.Budget)."""
        spent = bool(self.run.budget) and self.run.budget.out_of_time()
        if spent:
            self.say_slowed(self.run.step)  # the run's last step, where the time ends it before its plan's
        return spent

    def steps_that_fit(self, step, total_steps):
        """--minutes: the run's last step, fitted at a validation to the pace it has kept; else total_steps."""
        if self.run.budget:
            total_steps = self.run.budget.steps_that_fit(step, total_steps, self.settings.eval_interval)
            self.run.total_steps = self.progress.total = total_steps
            self.say_slowed(total_steps)
        return total_steps

    def say_slowed(self, steps):
        """--minutes: once a run, that the steps that fit fell well below the plan's (planner.Budget.slowed)."""
        said = self.run.budget.slowed(steps)
        if said:
            self.progress.write(said)

    def stop_asked(self):
        """Whether Ctrl-C was pressed: the loop then ends after its step, and the log saves the state to resume."""
        return self.stop.requested

    def where_the_model_is(self):
        return self.run.where_the_model_is()


@contextlib.contextmanager
def opened(run, params, opt, cfg, tokenizer, settings, model_loss_and_grads):
    """The door around the loop: yields the RunLog. It holds the run folder's lock, the threads or processes that
    share each batch (--processes; a thread's slice is computed by model_loss_and_grads, the loop's), Ctrl-C and
    the progress line. A loop that ends because Ctrl-C was pressed leaves here saved, said, with exit status 130;
    a run that saved nothing leaves no folder."""
    tokens_per_step, may_stop_early = settings.batch_size * settings.seq_len, settings.patience > 0
    with finishing(run), runs.locked(run.folder), sharing(settings, cfg, model_loss_and_grads) as shared, \
            StopRequest().installed() as stop, Progress(run.total_steps, run.step, tokens_per_step,
                                                        may_stop_early, run.budget) as progress:
        checkpoint.remove_stale_temporaries(run.folder)  # what saves that a kill stopped left, now the lock is held
        # one slice: the loop calls the model's own loss_and_grads, so a traceback ends in the learner's line
        loss_and_grads = shared.loss_and_grads if shared.count > 1 else model_loss_and_grads
        yield RunLog(run, params, opt, cfg, tokenizer, settings, shared.count, loss_and_grads, stop, progress)
        if stop.requested and not run.done:
            run.save_progress(params, opt, settings)
            progress.close()
            stopped_by_ctrl_c(run, settings)


@contextlib.contextmanager
def finishing(run):
    """Around the loop: a run that saved nothing leaves no folder; a second Ctrl-C, which stops at once,
    says what was kept (one line, exit 130)."""
    try:
        yield
    except KeyboardInterrupt:
        if (run.folder / "resume.json").exists():
            said = (f"stopped at once by a second Ctrl-C at step {run.step:,}; {run.where_the_model_is()}, and the "
                    f"state last saved at a validation resumes with: {resume_command(run.folder)}")
        else:  # stopped before its first validation saved anything: its folder goes too (below)
            said = (f"stopped at once by a second Ctrl-C at step {run.step:,}, before the run's first validation: "
                    f"nothing was saved, and the run leaves no folder; start it again to train it")
        print(said, file=sys.stderr, flush=True)
        raise SystemExit(130) from None
    finally:
        if [path.name for path in run.folder.iterdir()] in ([], [".lock"]):  # the lock, let go, is all it holds
            (run.folder / ".lock").unlink(missing_ok=True)
            run.folder.rmdir()


def stopped_by_ctrl_c(run, settings):
    """Say once that the run was interrupted and how to resume it: on stderr, and in a log where stdout is one of
    its own (`> log`, `| tee log`), not the file stderr writes to as well (`> log 2>&1`); exit 130."""
    said = (f"interrupted after step {run.step:,} of {run.total_steps:,}; the state is saved in {run.folder}/. "
            f"Resume with: python train.py --resume {run.folder.name}{home_option(settings.checkpoint)}\n"
            f"{run.where_the_model_is()}")
    print(said, file=sys.stderr, flush=True)  # the Ctrl-C stops the tee of `| tee log` too
    if not sys.stdout.isatty() and not same_file(sys.stdout, sys.stderr):
        print_out(f"\n{said}")
    raise SystemExit(130)


def same_file(one, other):
    """Whether two streams write to one file or pipe (`2>&1`); a stream with no file of its own (io.StringIO) is
    the same only as itself."""
    try:
        first, second = os.fstat(one.fileno()), os.fstat(other.fileno())
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        return one is other
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


# --- losses.csv and losses.png ------------------------------------------------------------------

def write_losses(folder, step_losses, history):
    """losses.csv: one row per step (training loss), with the validation figures where they were taken; and
    losses.png. Returns whether losses.png was drawn (matplotlib may be missing)."""
    import pandas as pd  # here, where a table is written: importing train.py does not pay for pandas

    table = pd.DataFrame({"step": np.arange(1, len(step_losses) + 1), "train_loss": step_losses})
    if history:
        table = table.merge(pd.DataFrame(history)[["step", "val_loss", "val_bpc"]], on="step", how="left")
    write_atomically(folder / "losses.csv", table.to_csv(index=False).encode("utf-8"))
    return plot_losses(folder, table)


NO_PLOT = 'losses.png is not drawn: matplotlib is not installed (pip install -e ".[plot]"); losses.csv has the numbers'


def read_losses(folder):
    """losses.csv of a run as write_losses wrote it (step, train_loss; val_loss and val_bpc at the validations), or
    None where there is none to read: a run that has not saved yet, or a file that is not such a table."""
    import pandas as pd  # here, where the table is read

    try:
        table = pd.read_csv(Path(folder) / "losses.csv")
    except (OSError, ValueError):  # pandas' EmptyDataError and ParserError are ValueErrors
        return None
    columns = [column for column in ("step", "train_loss", "val_loss", "val_bpc") if column in table]
    numbers = all(pd.api.types.is_numeric_dtype(table[column]) for column in columns)
    return table if {"step", "train_loss"} <= set(columns) and numbers else None


def plot_losses(folder, table):
    """Draw losses.png, where matplotlib is installed (pip install -e ".[plot]"); False where it is not."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    figure, axes = plt.subplots(figsize=(7, 4))
    axes.plot(table["step"], table["train_loss"].rolling(50, min_periods=1).mean(), label="training (mean of 50 steps)")
    if "val_loss" in table:
        validated = table.dropna(subset=["val_loss"])
        axes.plot(validated["step"], validated["val_loss"], "o-", label="validation")
    axes.set_xlabel("step")
    axes.set_ylabel("cross-entropy (nats per token)")
    axes.legend()
    figure.tight_layout()
    with removed_on_failure(temporary_name(folder / "losses.png")) as staged:
        figure.savefig(staged, format="png")
    plt.close(figure)
    staged.replace(folder / "losses.png")
    return True


# --- the terminal -------------------------------------------------------------------------------

def print_out(text):
    """Print text on stdout; where stdout is a pipe whose reader has gone (`python train.py | tee log`,
    whose tee the same Ctrl-C stops), go on without it, so that the run still saves what it must."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        stdout_to_nowhere()


class Progress:
    """One line about training on stderr: redrawn in place on a terminal, else a new line every
    LOG_SECONDS, so that a log file holds a line a person can read, not thousands of redraws.

    Its speed, and so the time to go, is that of the last RATE_SECONDS: a machine that gets busier
    or quieter halfway changes the estimate within half a minute, where the whole run's mean would
    lag behind for the rest of the run."""

    def __init__(self, total_steps, first_step, tokens_per_step, may_stop_early=False, budget=None):
        self.total, self.tokens_per_step, self.budget = total_steps, tokens_per_step, budget
        self.at_most = "at most " if may_stop_early else ""  # patience may stop the run before its last step
        self.terminal = sys.stderr.isatty()
        self.last_drawn = time.perf_counter()
        self.recent = collections.deque([(self.last_drawn, first_step)])  # (time, step) of the last RATE_SECONDS
        self.drawn = False

    def rate(self, now, step):
        """Record that step was done at time now; the steps per second since the oldest recent step."""
        self.recent.append((now, step))
        while len(self.recent) > 2 and now - self.recent[1][0] >= RATE_SECONDS:
            self.recent.popleft()  # the next oldest still starts a span of RATE_SECONDS or more
        then, step_then = self.recent[0]
        return (step - step_then) / (now - then)

    def update(self, step, loss, lr):
        now = time.perf_counter()
        rate = self.rate(now, step)
        if now - self.last_drawn < (0.2 if self.terminal else LOG_SECONDS):
            return
        self.last_drawn = now
        to_go = (self.budget.left_said() if self.budget else
                 f"{self.at_most}{duration((self.total - step) / rate)} to go")  # --minutes: the budget's time left
        line = (f"step {step:,}/{self.total:,}  loss {loss:.3f}  lr {lr:.2e}  {rate * self.tokens_per_step:,.0f} tok/s"
                f"  {to_go}")
        if self.terminal:
            print(f"\r{line}\033[K", end="", file=sys.stderr, flush=True)
            self.drawn = True
        else:
            print(line, file=sys.stderr, flush=True)

    def write(self, text):
        """Print lines that stay, below the progress line."""
        self.close()
        print_out(text)

    def __enter__(self):
        return self

    def __exit__(self, *exc):  # however the loop ends, a second Ctrl-C included: what is said next starts a line
        self.close()

    def close(self):
        if self.drawn:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
            self.drawn = False


class StopRequest:
    """Ctrl-C while the loop runs: the step ends, what a resume needs is saved, and the run stops (exit 130).
    A second Ctrl-C stops at once; every file is written whole or not at all (files.py)."""

    def __init__(self):
        self.requested = False

    def __call__(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    @contextlib.contextmanager
    def installed(self):
        previous = signal.signal(signal.SIGINT, self)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)
