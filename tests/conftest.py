"""What the tests share: where the repository is, the one recipe of a tiny training run, the one way to
run a script (in this process, or as a person starts it), a tiny model small enough to check every entry
of every gradient, two tiny trained checkpoints, and the docs site in a real browser.

Tests import the helpers by name (`from conftest import REPO, tiny_settings`): tests/ is on the path."""

import contextlib
import csv
import importlib
import io
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

import config
from engineering import checkpoint, errors, prompting, settings
import gradcheck
import transformer

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "docs"))
import site_tools  # noqa: E402  docs/site_tools.py: build, serve and open the site, as docs/make_pdf.py does


# The math first and the docs last: a learner who breaks a backward and runs `pytest -x` stops at
# the check of the math that broke, not at a page that quotes the line they changed.
MATH_FIRST = ("test_gradcheck.py", "test_transformer.py", "test_examples_layers.py", "test_examples_model.py",
              "test_torch_parity.py")
DOCS_LAST = ("test_docs.py", "test_figures.py", "test_widgets.py", "test_site.py")


def pytest_collection_modifyitems(items):
    def part(item):
        name = item.path.name
        return 0 if name in MATH_FIRST else 2 if name in DOCS_LAST else 1
    items.sort(key=lambda item: (part(item), MATH_FIRST.index(item.path.name) if part(item) == 0 else 0))


# PyTorch: the checks against it skip with this one reason where it is not installed
NO_TORCH = "PyTorch is not installed: pip install torch==2.13.0 to run the checks against PyTorch"


def torch_or_skip():
    """The torch module, or the calling test (or module) skipped with NO_TORCH."""
    return pytest.importorskip("torch", reason=NO_TORCH)


# --- the tiny model of the gradient checks ------------------------------------------------------

@pytest.fixture
def tiny_cfg():
    return gradcheck.TINY


@pytest.fixture
def tiny_params():
    """gradcheck's tiny model: float64, every tensor random, so no path hides at 0 or 1."""
    return gradcheck.tiny_model()[1]


@pytest.fixture
def tiny_batch():
    """ids and targets of shape (B, T) = (3, 5), with a repeated id so np.add.at has work to do."""
    return gradcheck.tiny_model()[2:]


# --- the one tiny training run -------------------------------------------------------------------

# config.py's settings shrunk so that a whole run takes a second or less: every test that trains starts from these
TINY = dict(emb_dim=8, num_heads=2, num_layers=1, ff_dim=16, context_len=8, seq_len=8, batch_size=8, epochs=2,
            num_merges=20, max_rows=300, max_new_tokens=10, warmup_steps=5)
WORDS = "the a cat dog bird sat ran flew on under over mat tree house red small big old new happy".split()


def tiny_settings(home, corpus, **overrides):
    """The settings of a tiny run on corpus into the home folder `home`, checked as the scripts check them."""
    s = types.SimpleNamespace(**{**settings.defaults(config), "corpus_path": str(corpus), "checkpoint": str(home),
                                 **TINY, **overrides})
    settings.check(s, config.RECIPES)
    return s


def tiny_args(home, corpus, **overrides):
    """The same tiny run as a command line: ["--corpus_path", corpus, "--checkpoint", home, "--emb_dim", "8", ...]."""
    chosen = {"corpus_path": corpus, "checkpoint": home, **TINY, **overrides}
    return [word for name, value in chosen.items() for word in (f"--{name}", str(value))]


def write_corpus(path, rows=40, seed=0):
    """A CSV of `rows` short sentences of random words (columns id, text): 40 rows are about 75 steps an epoch
    of the tiny run."""
    rng = np.random.default_rng(seed)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "text"])
        for i in range(rows):
            writer.writerow([i, " ".join(rng.choice(WORDS, size=6)).capitalize() + "."])
    return path


@pytest.fixture
def corpus(tmp_path):
    """tmp_path/corpus.csv, 40 rows of random words (write_corpus)."""
    return write_corpus(tmp_path / "corpus.csv")


def tiny_corpus_rows():
    """300 short rows from a little grammar: 6 subjects x 5 verbs x 5 objects, twice over."""
    subjects = ["the cat", "the dog", "a bird", "my friend", "the old man", "a small fox"]
    verbs = ["sat on", "ran to", "looked at", "jumped over", "slept near"]
    objects = ["the mat.", "the tree.", "a red ball.", "the river.", "the house."]
    rows = [f"{s} {v} {o}" for s in subjects for v in verbs for o in objects]
    return rows * 2


def tiny_play():
    """A little play of this project's own, 90 speeches: each a speaker's name on a line of its own,
    a couplet of verse (five in turn), and a blank line after it, as a play's text has them."""
    speakers = ["ROMEO:", "JULIET:", "NURSE:"]
    couplets = [("the moon is high tonight,", "o stay a while with me;"),
                ("the night is cold and long,", "my heart is full of song."),
                ("good night, good night, my dear!", "the morning comes too soon."),
                ("what bird sings at the door?", "it is the lark, and day is near."),
                ("go now, and come again", "when all the house is still.")]
    speeches = [f"{speakers[i % 3]}\n{couplets[i % 5][0]}\n{couplets[i % 5][1]}\n" for i in range(90)]
    return "\n".join(speeches)


def train_tiny(folder, corpus_name, text, **overrides):
    """The run folder of a tiny run on text, saved as folder/corpus_name, into the home folder/checkpoint."""
    import train
    corpus = folder / corpus_name
    corpus.write_text(text, encoding="utf-8")
    return train.train(tiny_settings(folder / "checkpoint", corpus, **overrides))


# Wider than TINY and longer, so that the model learns its rows: greedy continuations end at a row's end
LEARNS_ITS_ROWS = dict(emb_dim=16, ff_dim=32, batch_size=16, stride=2, epochs=3, num_merges=30, warmup_steps=10,
                       lr_max=1e-2)


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory):
    """The run folder of a model of a CSV's rows (tiny_corpus_rows), trained once per test run."""
    rows = "text\n" + "\n".join(tiny_corpus_rows()) + "\n"  # a header, then one row a line: no row has a comma
    return train_tiny(tmp_path_factory.mktemp("tiny-model"), "corpus.csv", rows, **LEARNS_ITS_ROWS)


@pytest.fixture(scope="session")
def tiny_play_checkpoint(tmp_path_factory):
    """The run folder of a model of one running text, tiny_play, trained once per test run; its 16 tokens
    of context hold a whole speech, so it learns where speeches end."""
    return train_tiny(tmp_path_factory.mktemp("tiny-play"), "play.txt", tiny_play(),
                      **{**LEARNS_ITS_ROWS, "context_len": 16, "seq_len": 16, "num_merges": 60, "stride": 1,
                         "epochs": 4})


def greedy_text(folder, prompt, max_new_tokens):
    """The prompt and all max_new_tokens of its greedy continuation, from generate() itself, at the
    window the checkpoint was trained with, the prompt's last token taken back as the scripts do."""
    model = checkpoint.load(folder)
    prompt_ids, first_allowed = prompting.heal_prompt(model.tokenizer, model.tokenizer.encode(prompt))
    new_ids = transformer.generate(model.params, model.cfg, prompt_ids, max_new_tokens,
                                model.meta["settings"]["seq_len"], transformer.Sampling(0, 0, 1.0),
                                np.random.default_rng(0), first_allowed=first_allowed)
    return model.tokenizer.decode(prompt_ids) + model.tokenizer.decode(list(new_ids))


# --- running a script --------------------------------------------------------------------------------
# In this process (run_main), as `python script.py args` runs it but for the interpreter's start: the
# script's main(argv) inside errors.run_script, as its `if __name__ == "__main__":` calls it, with the
# script's name as the program's, stdin from a string, stdout and stderr captured. As a person starts it
# (run_script, started): a fresh interpreter, kept for what only a process shows (a real signal, a pipe
# whose reader has gone, the exit status as the shell sees it); one test per script does that.

def run_main(script, *args, stdin="", cwd=None):
    """run_main("train.py", *args, stdin="", cwd=None) -> CompletedProcess(args, returncode, stdout, stderr).

    A bug (any exception but a person's bad input and Ctrl-C) is raised here, with its traceback."""
    argv = [str(arg) for arg in args]
    main = importlib.import_module(script.removesuffix(".py")).main
    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv, sys.stdin, os.getcwd()
    sys.argv, sys.stdin = [script, *argv], io.StringIO(stdin)  # argparse names the program after argv[0]
    try:
        os.chdir(cwd or saved[2])
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                errors.run_script(lambda: main(argv))
                status = 0
            except SystemExit as stop:
                status = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
    finally:
        sys.argv, sys.stdin = saved[:2]
        os.chdir(saved[2])
    return subprocess.CompletedProcess([script, *argv], status, out.getvalue(), err.getvalue())


def run_script(script, *args, cwd=REPO, stdin="", env=None):
    """`python script args` in a fresh interpreter, run from cwd, stdin from a string: CompletedProcess."""
    return subprocess.run([sys.executable, str(REPO / script), *map(str, args)], cwd=cwd, input=stdin,
                          capture_output=True, encoding="utf-8", timeout=120,
                          env={**os.environ, "PYTHONIOENCODING": "utf-8", **(env or {})})


def one_line_error(result):
    """The one line a script said on stderr when it refused bad input (exit status 2, no traceback)."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@contextlib.contextmanager
def started(script, *args, env=None):
    """`python script args` started as a person starts it, its stdout and stderr piped (unbuffered); killed
    at the end if it still runs."""
    process = subprocess.Popen([sys.executable, str(REPO / script), *map(str, args)], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8",
                               env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stdout.close()
        process.stderr.close()


# The docs site in a real browser, for tests/test_site.py and tests/test_widgets.py. `site` builds
# the site once with `mkdocs build --strict` and serves it on 127.0.0.1; `browser` is the system's
# Chromium driven by Playwright; `open_site_page("01-embeddings/")` opens a page and records its
# console errors and every request that leaves the site. Without mkdocs, Playwright or Chromium
# these tests skip with the reason, except under CI (CI=true), where they must run.


def missing(reason):
    """Skip for want of a tool, or fail under CI, where every test must run."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the browser tests must run)")
    pytest.skip(reason)


class Site:
    """The built site in `root`, served at `origin`. Example: Site(...).url("01-embeddings/")"""

    def __init__(self, root, origin, build_seconds):
        self.root, self.origin, self.build_seconds = root, origin, build_seconds

    def url(self, path=""):
        return f"{self.origin}/{path}"

    def serves(self, url):
        """True for a URL on this server, or one that never leaves the page (data:, blob:, about:)."""
        return url.startswith((self.origin + "/", "data:", "blob:", "about:"))

    def pages(self):
        """Each HTML page of the site as the path to open. Example: '01-embeddings/', 'source/transformer.py/'"""
        found = []
        for file in sorted(self.root.rglob("*.html")):
            path = file.relative_to(self.root).as_posix()
            found.append(path[: -len("index.html")] if path.endswith("index.html") else path)
        return found

    def file(self, url):
        """The file behind a URL of the site, or None. Example: origin + '/01-embeddings/#x' -> root/01-embeddings/index.html"""
        path = url[len(self.origin):].split("#")[0].split("?")[0].lstrip("/")
        file = self.root / path
        return file / "index.html" if file.is_dir() else file if file.is_file() else None


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    if problem := site_tools.missing_tool():
        missing(problem)
    root = tmp_path_factory.mktemp("site")
    started = time.perf_counter()
    failure = site_tools.build(root)
    assert failure is None, f"mkdocs build --strict failed:\n{failure}"
    with site_tools.serve(root) as origin:
        yield Site(root, origin, time.perf_counter() - started)


@pytest.fixture(scope="session")
def browser():
    if problem := site_tools.missing_tool():
        missing(problem)
    with site_tools.chromium() as chromium:
        yield chromium


class Visit:
    """An open page of the site with what it said on the console and the requests that left the site."""

    def __init__(self, page, errors, foreign_requests):
        self.page, self.errors, self.foreign_requests = page, errors, foreign_requests


@pytest.fixture(scope="session")
def site_pages(site, browser):
    """{(path, width): what the tests read from it}: every page of the site opened once at 1280 px, and
    every learner's page once more at 400 px (tests/site_reading.py), so that no test opens a page again
    to read what another already read."""
    import site_reading

    return site_reading.read_site(browser, site)


@pytest.fixture(scope="session")
def open_site_page(site, browser):
    """open_site_page(path) -> Visit, once the page has loaded and MathJax has typeset it.

    Close visit.page when done with it; any left open are closed at the end of the run."""
    opened = []

    def open_page(path):
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        opened.append(page)
        visit = Visit(page, [], [])
        page.on("console", lambda message: visit.errors.append(f"{message.text} ({message.location['url']})")
                if message.type == "error" else None)
        page.on("pageerror", lambda error: visit.errors.append(str(error)))
        page.on("request", lambda request: None if site.serves(request.url) else visit.foreign_requests.append(request.url))
        page.goto(site.url(path), wait_until="load")
        site_tools.typeset(page)
        return visit

    yield open_page
    for page in opened:
        if not page.is_closed():
            page.close()
