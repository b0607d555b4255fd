"""Kills for real: training is stopped with SIGKILL at many moments, inside saves too, and what is
left must be whole. After every kill, talk.py loads a whole model, the one that was there before or
one a run saved, never a mix; every earlier model is still in the home folder; and
`train.py --resume` resumes, or says in one line why it cannot. Two trainings into one folder at
once: the second refuses in one line, and a killed training leaves no lock behind.

Most runs here are this process forked, running the script with runpy as `python script` would: a
separate process that SIGKILL stops as it stops any other, without a second of imports at each of
the dozens of starts. One run of each script, and the refused second training, are fresh
interpreters (real=True), as a person starts them.
"""

import codecs
import collections
import contextlib
import io
import os
import re
import runpy
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
import pytest

import checkpoint
import train
from test_train import tiny_settings, write_corpus

REPO = Path(__file__).resolve().parent.parent
# eval_interval 1 with max_steps: a run validates at every step, and saves each one that improves,
# so a run is mostly saves, and most kills land in or near one.
TINY = dict(emb_dim=8, num_heads=2, num_layers=1, ff_dim=16, context_len=8, seq_len=8, batch_size=8, num_merges=20,
            max_steps=6, eval_interval=1, max_new_tokens=5, warmup_steps=5)


def train_args(corpus, home, **overrides):
    return ["--corpus_path", corpus, "--checkpoint", home,
            *[str(word) for name, value in {**TINY, **overrides}.items() for word in (f"--{name}", value)]]


# --- scripts in child processes ---------------------------------------------------------------

class Script:
    """`python script args` in a child process: stdin from a string, stdout read as it comes.

    real=False forks this process, which runs the script with runpy (its imports are done already);
    real=True starts a fresh interpreter. kill_after_rename=k: the forked child sends itself SIGKILL
    right after its k-th os.replace, that is, at the k-th change a save makes to what is on disk.
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
    """os.replace that does its rename, and at the count-th one sends this process SIGKILL."""
    done = []

    def replace_then_maybe_die(source, target):
        replace(source, target)
        done.append(target)
        if len(done) == count:
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
    """{folder: model.json} of each whole model under home, on top and in each run's folder: one whose
    model.npz and model.tok.json are the files its model.json was saved with (read by sha256, which is
    how loading tells a mix; loading them all would take half a second here)."""
    runs = home / "runs"
    folders = [home, *sorted(path for path in runs.iterdir() if not path.name.startswith("."))] if runs.is_dir() \
        else [home]
    found = {}
    for folder in folders:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            meta = checkpoint.read_json(folder / "model.json")
            if all(checkpoint.sha256_of(folder / name) == meta[key]
                   for name, key in (("model.npz", "weights_sha256"), ("model.tok.json", "tokenizer_sha256"))):
                found[folder] = meta
    return found


class Home:
    """A home folder with a model on top that no run of it holds, and the models seen there since."""

    def __init__(self, folder, old_meta):
        self.folder, self.old_sha = folder, old_meta["weights_sha256"]
        self.seen = {self.old_sha: old_meta}  # weights sha256 -> model.json, of each model talk.py was given

    def check(self, moment):
        """Assert that talk.py's model is whole and one that was there before or that a run of this home
        saved, and that every model talk.py was given before is still here; returns the model.
        moment: which kill this follows, for the messages."""
        model = checkpoint.load(self.folder)  # raises if no whole model is left
        meta, folder = model.meta, model.folder
        assert checkpoint.sha256_of(folder / "model.npz") == meta["weights_sha256"]
        assert checkpoint.sha256_of(folder / "model.tok.json") == meta["tokenizer_sha256"]
        assert folder == self.folder or folder.parent == self.folder / "runs", folder
        assert meta["weights_sha256"] == self.old_sha or (self.folder / "runs" / meta["run"]).is_dir(), \
            f"after {moment}: {folder}/ holds a model that no run of {self.folder}/ saved"
        self.seen[meta["weights_sha256"]] = meta
        whole = whole_models(self.folder)
        held = {saved["weights_sha256"] for saved in whole.values()}
        for sha, earlier in self.seen.items():
            assert sha in held or later_best_of_its_run(whole, self.folder, earlier), \
                (f"after {moment}: the model {sha[:12]} (run {earlier['run']}, step {earlier['best_step']}) is lost; "
                 f"whole models left (folder, run, best step): "
                 f"{[(str(f.relative_to(self.folder)), m['run'], m['best_step']) for f, m in whole.items()]}")
        return model


def later_best_of_its_run(whole, home, meta):
    """Whether the model's run folder holds, whole, a later best of that run, which replaces it."""
    kept = whole.get(home / "runs" / meta["run"])
    return kept is not None and kept["run"] == meta["run"] and kept["best_step"] > meta["best_step"]


def staged_files(home):
    """{path: modification time} of the temporary files (and earlier-model staging folders) under home."""
    return {path: path.stat().st_mtime_ns for path in home.rglob(".*.tmp")}


@pytest.fixture
def home_with_old_model(tmp_path):
    """(a Home with an old model on top that no run of it holds, the corpus, seconds a whole run takes)."""
    corpus = write_corpus(tmp_path / "corpus.csv")
    started = time.perf_counter()
    train.train(tiny_settings(tmp_path / "elsewhere", corpus, seed=1, **TINY))
    run_seconds = time.perf_counter() - started
    folder = tmp_path / "home"
    folder.mkdir()
    for name in checkpoint.MODEL_FILES:  # copied in, as a model trained elsewhere: no run of this home holds it
        shutil.copy(tmp_path / "elsewhere" / name, folder / name)
    return Home(folder, checkpoint.load(folder).meta), corpus, run_seconds


def check_talk(start, home, real=False):
    """talk.py loads the model and leaves at /quit, exit status 0."""
    status, out, err = start("talk.py", "--checkpoint", home, stdin="/quit\n", real=real).finish(timeout=30)
    assert status == 0 and out.startswith("model:"), (status, out, err)


def check_resume(start, home, real=False):
    """`train.py --resume` resumes the latest run to its end, or refuses in one line; what it did, in a few words."""
    resume = start("train.py", "--resume", "--checkpoint", home, real=real)
    status, out, err = resume.finish(timeout=60)
    assert "Traceback" not in err, err
    if status == 0:
        assert "resuming the run in" in out, out
        return "resumed"
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1, (status, out, err)
    return re.sub(r"/\S*", "...", lines[0])[:60]


def landed(status, staged_before, staged_after, run_folder):
    """Where in its run a kill landed, as far as the files say."""
    if status == 0:
        return "after the run ended"
    if any(staged_before.get(path) != changed for path, changed in staged_after.items()):
        return "inside a save"  # it left a temporary file that was not there before, or wrote one
    if not (run_folder / "model.json").exists():
        return "before its first save"
    return "between saves"


def what_talk_reads(model, home, run_folder):
    """Which model talk.py was given after a kill, in a few words."""
    if model.folder != home.folder:
        return "a run's model: the top was not whole"
    if model.meta["weights_sha256"] == home.old_sha:
        return "the old model"
    return "the killed run's model" if model.meta["run"] == run_folder.name else "an earlier run's model"


# --- the tests --------------------------------------------------------------------------------

def test_kills_at_any_moment_leave_a_whole_model_and_every_earlier_one(home_with_old_model, start):
    home, corpus, run_seconds = home_with_old_model
    kills = 16
    rng = np.random.default_rng(14)
    # from the moment training starts to past a whole run's end (run_seconds counts reading the corpus too)
    moments = rng.permutation(np.linspace(0, 0.95, kills) + rng.uniform(0, 0.05, kills)) * run_seconds
    where, reads, resumes = collections.Counter(), collections.Counter(), collections.Counter()
    for kill, moment in enumerate(moments):
        real = kill == 3  # this kill is followed by a --resume too: each script once as a person starts it
        staged_before = staged_files(home.folder)
        run = start("train.py", *train_args(corpus, home.folder, seed=100 + kill), real=real)
        run_folder = Path(re.search(r"writing to (.*)/$", run.read_line("model:"))[1])
        time.sleep(moment)
        run.kill()
        status, _, err = run.finish()
        assert status in (0, -signal.SIGKILL) and "Traceback" not in err, (status, err)
        where_it_landed = landed(status, staged_before, staged_files(home.folder), run_folder)
        where[where_it_landed] += 1
        moment_said = f"kill {kill} ({where_it_landed}, {moment:.2f} s after 'model:')"
        reads[what_talk_reads(home.check(moment_said), home, run_folder)] += 1
        check_talk(start, home.folder, real=real)
        if kill % 4 == 3:
            resumes[check_resume(start, home.folder, real=real)] += 1
            home.check(f"the --resume after {moment_said}")
            check_talk(start, home.folder)
    print(f"\n{kills} kills at random moments, {run_seconds:.1f} s a whole run: landed {dict(where)}; "
          f"then talk.py read {dict(reads)}; --resume: {dict(resumes)}")


def test_a_kill_right_after_any_rename_of_a_save_loses_nothing(home_with_old_model, start):
    """A kill at each change a save makes on disk, in turn: the k-th run is killed right after its k-th
    rename, between the renames of one save too, into the same home, one run after another."""
    home, corpus, _ = home_with_old_model
    renames = 20  # a run's first two steps of saves: model in its folder, the earlier model, top, resume, losses
    top, resumes = collections.Counter(), collections.Counter()
    for k in range(1, renames + 1):
        run = start("train.py", *train_args(corpus, home.folder, seed=200 + k), kill_after_rename=k)
        status, _, err = run.finish()
        assert status == -signal.SIGKILL, (k, status, err)
        model = home.check(f"the kill right after rename {k}")
        top["top" if model.folder == home.folder else "a run: the top was not whole"] += 1
        check_talk(start, home.folder)
        if k % 5 == 0:
            resumes[check_resume(start, home.folder)] += 1
            home.check(f"the --resume after the kill right after rename {k}")
    print(f"\nkilled right after each of the first {renames} renames: talk.py read {dict(top)}; "
          f"--resume: {dict(resumes)}")


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


def test_a_second_training_refuses_in_one_line_and_a_killed_one_leaves_no_lock(tmp_path, start):
    corpus, home = write_corpus(tmp_path / "corpus.csv"), tmp_path / "home"
    first = start("train.py", *train_args(corpus, home, seed=1, max_steps=10 ** 6, eval_interval=50, processes=2))
    first.read_line("step ")  # 50 steps done: its worker process has started too
    helpers = children_of(first.pid)
    assert helpers, "a run on 2 processes starts a worker"
    second = start("train.py", *train_args(corpus, home, seed=2), real=True)
    status, _, err = second.finish()
    assert status == 2 and len(err.strip().splitlines()) == 1, (status, err)
    assert f"another training (process {first.pid}) is writing to {home}/" in err
    first.kill()
    assert first.finish()[0] == -signal.SIGKILL
    deadline = time.monotonic() + 20
    while any(map(running, helpers)) and time.monotonic() < deadline:  # they read the end of their pipe, and stop
        time.sleep(0.05)
    assert not any(map(running, helpers)), f"the killed training's helpers {helpers} still run"
    third = start("train.py", *train_args(corpus, home, seed=3, max_steps=10 ** 6))
    third.read_line("model:")  # past the lock: it holds it now
    assert (home / ".lock").read_text() == str(third.pid)
    third.kill()
    third.finish()
