"""Kills for real: training is stopped with SIGKILL at many moments, inside saves too, and what is
left must be whole. Each run writes into its own folder, HOME/runs/<name>/, and nothing else of HOME.
After every kill: the killed run's folder holds a whole model (the earlier best, or the new one) or,
before its first save, none; no model any run saved is lost; talk.py reads a whole model, the latest
finished run's by default; and `train.py --resume` resumes the run it should, or says in one line why
it cannot. A second training of a run that is being trained refuses in one line, a new run into the
same home trains beside it, and a killed training leaves no lock behind.

Most runs here are this process forked, running the script with runpy as `python script` would: a
separate process that SIGKILL stops as it stops any other, without a second of imports at each of
the dozens of starts. One run of each script, and the refused second training, are fresh
interpreters (real=True), as a person starts them.
"""

import codecs
import collections
import contextlib
import io
import json
import os
import re
import runpy
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, tiny_args, tiny_settings, write_corpus
from engineering import checkpoint, run_log
import train

with contextlib.suppress(ImportError):  # the losses plot, imported once here rather than in every forked run
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401

# the tiny run (conftest.TINY), 6 steps long; eval_interval 1 with max_steps: a run validates at every step, and
# saves each one that improves, so a run is mostly saves, and most kills land in or near one.
SAVING = dict(max_steps=6, eval_interval=1, max_new_tokens=5)
SAVE = ["model.npz", "model.tok.json", "model.json", "resume.npz", "resume.json", "losses.csv"]  # a best step's renames


def train_args(corpus, home, **overrides):
    return tiny_args(home, corpus, **{**SAVING, **overrides})


# --- scripts in child processes ---------------------------------------------------------------

class Script:
    """`python script args` in a child process: stdin from a string, stdout read as it comes.

    real=False forks this process, which runs the script with runpy (its imports are done already);
    real=True starts a fresh interpreter. kill_after_rename=k: the forked child sends itself SIGKILL
    right after its k-th os.replace, that is, at the k-th change a save makes to what is on disk, and
    says on stderr which file that rename put in place.
    """

    def __init__(self, script, *args, stdin="", real=False, kill_after_rename=0):
        self.argv = [script, *map(str, args)]
        self.stdin, self.stderr = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        self.stdin.write(stdin.encode())
        self.stdin.seek(0)
        read_end, write_end = os.pipe()
        if real:
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            self.process = subprocess.Popen([sys.executable, *self.argv], cwd=REPO, stdin=self.stdin,
                                            stdout=write_end, stderr=self.stderr, env=env)
            self.pid = self.process.pid
        else:
            self.process, self.pid = None, os.fork()
            if self.pid == 0:
                run_forked(self.argv, self.stdin, write_end, self.stderr, kill_after_rename)
        os.close(write_end)
        self.stdout, self.out, self.returncode = read_end, "", None
        self.decoder = codecs.getincrementaldecoder("utf-8")()

    def read_some(self, timeout):
        """Read what stdout has within timeout seconds; False at its end, or when nothing came."""
        if self.stdout is None or not select.select([self.stdout], [], [], max(timeout, 0))[0]:
            return False
        data = os.read(self.stdout, 1 << 16)
        self.out += self.decoder.decode(data, final=not data)
        if not data:
            os.close(self.stdout)
            self.stdout = None
        return bool(data)

    def read_line(self, start, timeout=60):
        """The first line of stdout that starts with `start`, once it is printed."""
        deadline = time.monotonic() + timeout
        while (found := re.search(f"^{re.escape(start)}.*\n", self.out, re.M)) is None:
            assert self.read_some(deadline - time.monotonic()), \
                f"{self.argv} ended or went quiet before a line starting {start!r}:\n{self.out}{self.err()}"
        return found.group(0).rstrip("\n")

    def kill(self):
        os.kill(self.pid, signal.SIGKILL)  # not yet waited for, so the pid is still this child's

    def finish(self, timeout=60):
        """(exit status, stdout, stderr) once the script ends; a negative status is the signal that ended it."""
        deadline = time.monotonic() + timeout
        while self.stdout is not None:
            if not self.read_some(deadline - time.monotonic()) and time.monotonic() > deadline:
                self.kill()
                self.wait()
                pytest.fail(f"{self.argv} ran past {timeout} s:\n{self.out}{self.err()}")
        self.wait()
        return self.returncode, self.out, self.err()

    def wait(self):
        if self.returncode is None:
            self.returncode = (self.process.wait() if self.process else
                               os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1]))
        return self.returncode

    def err(self):
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def close(self):
        """Kill the script if it still runs: a test that failed half-way leaves nothing running."""
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.kill()
            self.wait()
        if self.stdout is not None:
            os.close(self.stdout)
            self.stdout = None


def run_forked(argv, stdin, stdout_fd, stderr, kill_after_rename):
    """In the forked child: run the script as __main__ with the given standard streams, then exit with
    its status, as the interpreter would; never returns into the tests."""
    status = 1
    try:
        for stream, fd in ((stdin.fileno(), 0), (stdout_fd, 1), (stderr.fileno(), 2)):
            os.dup2(stream, fd)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", line_buffering=True)
        os.chdir(REPO)
        sys.argv = argv
        if kill_after_rename:
            os.replace = killing_after(kill_after_rename, os.replace)
        runpy.run_path(str(REPO / argv[0]), run_name="__main__")
        status = 0
    except SystemExit as stop:
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
        status = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(status)


def killing_after(count, replace):
    """os.replace that does its rename, and at the count-th one says which file it put in place
    ("killed right after renaming model.npz") and sends this process SIGKILL."""
    done = []

    def replace_then_maybe_die(source, target):
        replace(source, target)
        done.append(target)
        if len(done) == count:
            os.write(2, f"killed right after renaming {Path(target).name}\n".encode())
            os.kill(os.getpid(), signal.SIGKILL)

    return replace_then_maybe_die


@pytest.fixture
def start():
    """start(script, *args, ...) -> a Script; whatever still runs at the test's end is killed."""
    scripts = []

    def start_script(*args, **kwargs):
        scripts.append(Script(*args, **kwargs))
        return scripts[-1]

    yield start_script
    for script in scripts:
        script.close()


# --- what a kill may leave, and what it may not -----------------------------------------------

def whole_models(home):
    """{run name: model.json} of each run of home whose model is whole: its model.npz and model.tok.json are
    the files its model.json was saved with (read by sha256, which is how loading tells a mix; loading
    them all would take half a second here). The model.json is the one loading reads: where a kill cut a
    save between its renames, the new one still under its temporary name (checkpoint.current_record)."""
    found = {}
    for folder in sorted((home / "runs").iterdir()):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            record = checkpoint.current_record(folder, "model.json", checkpoint.MODEL_FILES)
            meta = json.loads(record.read_text(encoding="utf-8"))
            if all(checkpoint.sha256_of(folder / name) == meta[key]
                   for name, key in (("model.npz", "weights_sha256"), ("model.tok.json", "tokenizer_sha256"))):
                found[folder.name] = meta
    return found


def finished(folder):
    """Whether a run's resume.json says it is done: it took its last step, or stopped improving."""
    record = checkpoint.current_record(folder, "resume.json", checkpoint.RESUME_FILES)
    with contextlib.suppress(OSError, ValueError, KeyError):
        return json.loads(record.read_text(encoding="utf-8"))["done"] is True
    return False


def resumable(folder):
    """Whether a run can be resumed: it saved a resume state, and is not done; or it saved a whole model and no
    resume state (a kill between the two saves of its first validation), and a resume takes its steps again."""
    if checkpoint.current_record(folder, "resume.json", checkpoint.RESUME_FILES).is_file():
        return not finished(folder)
    return folder.name in whole_models(folder.parent.parent)


class Home:
    """A home folder with one finished run in it, and what the tests have seen there since: the runs in
    the order they last wrote, and the best step of each run's whole model."""

    def __init__(self, folder, first_run, corpus, run_seconds):
        self.folder, self.corpus, self.run_seconds = folder, corpus, run_seconds
        self.order = [first_run]  # run names, the one that wrote last at the end
        self.best_steps = {}  # run name -> best_step of the whole model it held when last looked at

    def wrote(self, name):
        self.order = [*(other for other in self.order if other != name), name]

    def latest(self, which):
        """The name of the run that wrote last among those for which which(its folder) holds, or None."""
        return next((name for name in reversed(self.order) if which(self.folder / "runs" / name)), None)

    def check(self, start, name, moment, real=False):
        """After the run `name` was killed (or resumed): talk.py reads its model whole, or says in one line that
        it saved none yet; talk.py without a run's name reads the latest finished run; nothing but runs/ is
        in the home; and every run that held a whole model holds one still, the same or a later best of its
        own. moment: what this follows, for the messages."""
        run = self.folder / "runs" / name
        read, out, err = start("talk.py", "--checkpoint", run, stdin="/quit\n", real=real).finish(timeout=30)
        assert "Traceback" not in err, err
        if read != 0:
            assert read == 2 and err.startswith(f"error: no model in {run}/") and err.count("\n") == 1, \
                f"after {moment}: talk.py on the run {name}: {read}\n{out}{err}"
            assert name not in self.best_steps, f"after {moment}: the run {name} had a whole model, now none"
        else:
            assert out.startswith(f"model {name}: "), (moment, out)
        default = self.latest(finished)
        status, out, err = start("talk.py", "--checkpoint", self.folder, stdin="/quit\n").finish(timeout=30)
        assert status == 0 and out.startswith(f"model {default}: "), \
            f"after {moment}: talk.py should read the latest finished run, {default}:\n{out}{err}"
        assert [path.name for path in self.folder.iterdir()] == ["runs"], \
            f"after {moment}: training wrote outside runs/"
        whole = whole_models(self.folder)
        for earlier, best_step in self.best_steps.items():
            assert earlier in whole and whole[earlier]["best_step"] >= best_step, \
                (f"after {moment}: the model of the run {earlier} (best step {best_step}) is lost; "
                 f"whole models left (run, best step): {[(run, meta['best_step']) for run, meta in whole.items()]}")
        assert all(meta["run"] == run for run, meta in whole.items()), f"after {moment}: a run holds another's model"
        assert read != 0 or name in whole, f"after {moment}: talk.py read a model of {name} that is not whole"
        self.best_steps.update({run: meta["best_step"] for run, meta in whole.items()})


@pytest.fixture
def home(tmp_path):
    """A Home with one finished run, which talk.py reads until another run finishes."""
    corpus = write_corpus(tmp_path / "corpus.csv")
    folder = tmp_path / "home"
    started = time.perf_counter()
    first = train.train(tiny_settings(folder, corpus, seed=1, **SAVING))
    return Home(folder, first.name, corpus, time.perf_counter() - started)


def started_run(script):
    """The name of the run a train.py script writes, once it says so ("... writing to HOME/runs/NAME/")."""
    return re.search(r"writing to .*/runs/([^/]+)/$", script.read_line("model:"))[1]


def check_resume(start, home, name=None, real=False):
    """`train.py --resume [name]` resumes the run it should to its end (name, else the latest interrupted
    run), or, where there is none, refuses in one line; what it did, in a few words."""
    expected = home.latest(resumable) if name is None else name if resumable(home.folder / "runs" / name) else None
    resume = start("train.py", "--resume", *([name] if name else []), "--checkpoint", home.folder, real=real)
    status, out, err = resume.finish(timeout=90)
    assert "Traceback" not in err, err
    if expected is None:
        lines = err.strip().splitlines()
        assert status == 2 and len(lines) == 1 and lines[0].startswith("error: "), (name, status, out, err)
        return "refused: " + re.sub(r"/\S*", "...", lines[0])[7:60]
    assert status == 0 and f"resuming the run {expected} " in out, (expected, status, out, err)
    assert finished(home.folder / "runs" / expected), f"--resume did not finish the run {expected}"
    left = list((home.folder / "runs" / expected).glob(".*.tmp"))
    assert not left, f"the resume of {expected} left what the kill's save had written: {left}"
    home.wrote(expected)
    home.check(start, expected, f"the --resume of {expected}", real=real)
    return "resumed"


def landed(status, folder):
    """Where in its run a kill landed, as far as the run's folder says."""
    if status == 0:
        return "after the run ended"
    if any(folder.glob(".*.tmp")):
        return "inside a save"  # it left a file it had not yet renamed
    if not (folder / "model.json").exists():
        return "before its first save"
    return "between saves"


# --- the tests --------------------------------------------------------------------------------

@pytest.fixture
def without_the_plot(monkeypatch):
    """No losses.png in this process's runs and their forks (a fresh interpreter's run still draws it): where
    matplotlib is installed, drawing it is most of a run of 6 steps, so most random kills would land in the
    drawing rather than in the saves of the model. (The plot's own rename is killed after, in turn, by
    test_a_kill_right_after_any_rename_of_a_save_loses_nothing.)"""
    monkeypatch.setattr(run_log, "plot_losses", lambda folder, table: None)


def test_kills_at_any_moment_lose_no_model(without_the_plot, home, start):
    kills = 8
    rng = np.random.default_rng(14)
    # from the moment training starts to past a whole run's end (run_seconds counts reading the corpus too)
    moments = rng.permutation(np.linspace(0, 0.95, kills) + rng.uniform(0, 0.05, kills)) * home.run_seconds
    where, resumes = collections.Counter(), collections.Counter()
    for kill, moment in enumerate(moments):
        real = kill == 3  # this kill is followed by a --resume too: each script once as a person starts it
        run = start("train.py", *train_args(home.corpus, home.folder, seed=100 + kill), real=real)
        name = started_run(run)
        time.sleep(moment)
        run.kill()
        status, _, err = run.finish()
        assert status in (0, -signal.SIGKILL) and "Traceback" not in err, (status, err)
        home.wrote(name)
        where[landed(status, home.folder / "runs" / name)] += 1
        home.check(start, name, f"kill {kill} ({moment:.2f} s after 'model:')", real=real)
        if kill % 4 == 3:  # the latest interrupted run, or the killed one by its name
            resumes[check_resume(start, home, name=None if kill == 3 else name, real=real)] += 1
    print(f"\n{kills} kills at random moments, {home.run_seconds:.1f} s a whole run: landed {dict(where)}; "
          f"--resume: {dict(resumes)}")


def test_a_kill_right_after_any_rename_of_a_save_loses_nothing(home, start, monkeypatch):
    """A kill at each change a save makes on disk, in turn: the k-th run is killed right after its k-th
    rename, through the saves of its first two steps, the second over the first's model."""
    per_step = SAVE + (["losses.png"] if "matplotlib" in sys.modules else [])
    renamed, resumes = [], collections.Counter()
    for k in range(1, 2 * len(per_step) + 1):
        run = start("train.py", *train_args(home.corpus, home.folder, seed=200), kill_after_rename=k)
        name = started_run(run)
        status, _, err = run.finish()
        assert status == -signal.SIGKILL, (k, status, err)
        renamed.append(re.search(r"killed right after renaming (\S+)", err)[1])
        home.wrote(name)
        home.check(start, name, f"the kill right after rename {k} ({renamed[-1]})")
        if k % 4 == 0:
            with monkeypatch.context() as patched:  # a resumed run's drawings are not what this test kills
                patched.setattr(run_log, "plot_losses", lambda folder, table: None)
                resumes[check_resume(start, home)] += 1
    # each step is a best, saved with model.json after the files it names, and resume.json after resume.npz
    assert renamed == per_step * 2, renamed
    print(f"\nkilled right after each of the first {len(renamed)} renames; --resume: {dict(resumes)}")


def children_of(pid):
    """The pids of the processes whose parent is pid (Linux: read from /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(stat.parent.name))
    return found


def running(pid):
    """False once the process has ended (a zombie that nobody reaps has ended too)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_a_second_training_of_a_run_refuses_in_one_line_and_a_killed_one_leaves_no_lock(without_the_plot, tmp_path,
                                                                                          start):
    corpus, home = write_corpus(tmp_path / "corpus.csv"), tmp_path / "home"
    first = start("train.py", *train_args(corpus, home, seed=1, max_steps=10 ** 6, eval_interval=50, processes=2),
                  "--name", "held")
    first.read_line("step     50:")  # its first validation: a state to resume is saved, and its worker has started
    helpers = children_of(first.pid)
    assert helpers, "a run on 2 processes starts a worker"
    second = start("train.py", "--resume", "held", "--checkpoint", home, real=True)
    status, _, err = second.finish()
    assert status == 2 and err == ("error: the run held is being trained now: wait for its training to finish "
                                   "(Ctrl-C stops it, and then it resumes), or start a new run without --resume\n"), \
        (status, err)  # said before the corpus is read
    beside = start("train.py", *train_args(corpus, home, seed=2, max_steps=3), "--name", "beside")
    status, out, err = beside.finish()
    assert status == 0 and f"Its model is in {home}/runs/beside/" in out, (status, out, err)  # a new run trains
    first.read_line("step    100:")  # and the first went on, undisturbed
    first.kill()
    assert first.finish()[0] == -signal.SIGKILL
    deadline = time.monotonic() + 20
    while any(map(running, helpers)) and time.monotonic() < deadline:  # they read the end of their pipe, and stop
        time.sleep(0.05)
    assert not any(map(running, helpers)), f"the killed training's helpers {helpers} still run"
    again = start("train.py", "--resume", "held", "--checkpoint", home)
    again.read_line("resuming the run held at step ")
    again.read_line("step ")  # a validation: it is past the lock and trains
    again.kill()
    again.finish()
    assert sorted(path.name for path in home.iterdir()) == ["runs"]
