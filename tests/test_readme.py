"""The README tells the truth: its figures are those the default run prints, its commands are CI's, and its
Layout table is the tree."""

import math
import re
import subprocess

import pytest

import config
from conftest import REPO
import train
from engineering.settings import SettingsParser
from engineering.corpus import SAMPLE_CORPUS, read_corpus, read_rows
from transformer import ModelConfig, param_shapes

README = (REPO / "README.md").read_text(encoding="utf-8")


def said(text):
    """README's text with its line breaks as spaces, as a reader reads a paragraph."""
    return re.sub(r"\s+", " ", text)


def test_the_default_runs_figures_are_those_it_prints():
    p = SettingsParser(config, "test")
    s = p.settings(p.parse([]))
    corpus = read_corpus(SAMPLE_CORPUS, s.corpus_column, s.max_rows, s.val_fraction, s.seed)
    params, cfg, tokenizer = train.start_model(corpus, s)
    inputs = train.prepare_data(corpus, tokenizer, s).inputs
    steps_per_epoch = -(-len(inputs) // s.batch_size)
    parameters = sum(p.size for p in params.values())
    _, total_rows, _ = read_rows(SAMPLE_CORPUS, s.corpus_column, 0)
    text = said(README)
    assert f"the first {s.max_rows:,} of the sample's {total_rows:,} rows" in text
    assert f"learns {s.num_merges} merges on its {len(tokenizer.alphabet)} characters ({cfg.vocab_size} tokens)" in text
    assert f"a model of {parameters:,} parameters for up to {s.epochs} epochs of {steps_per_epoch:,} steps" in text
    assert f"the sample's {cfg.vocab_size} tokens, is {len(params)} tensors and {parameters:,} parameters" in text
    reference = param_shapes(ModelConfig(575, 32, 32, 2, 2, 128, 1e-5))  # the reference page's vocabulary
    assert f"with V = 575, {sum(math.prod(shape) for shape in reference.values()):,}" in text
    assert f"(`patience`, {s.patience})" in text


def test_the_two_commands_are_there_and_ci_runs_the_tests_as_the_readme_says():
    assert "python -m venv .venv && . .venv/bin/activate && pip install -e . && python train.py" in README
    assert 'pip install -e ".[test]" && python -m pytest' in README
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "python -m pytest" in ci and "-e \".[test" in ci


def test_the_layout_table_lists_the_tree():
    listed = set(re.findall(r"^\| `([^`]+)` \|", README, re.M))
    try:
        listing = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    except FileNotFoundError:
        listing = None
    if listing is None or listing.returncode != 0:  # a downloaded archive: only git knows the project's files
        pytest.skip("not a git checkout, so the tracked files are unknown (clone the repository to run this test)")
    tracked = listing.stdout.split()
    top = {path.split("/")[0] + ("/" if "/" in path else "") for path in tracked if not path.startswith(".")}
    top -= {"README.md", "pyproject.toml", "mkdocs.yml"}
    assert top <= listed, f"not in README's Layout table: {sorted(top - listed)}"
    assert listed <= top | {"checkpoints/"}, f"in README's Layout table but not in the tree: {sorted(listed - top)}"


def test_it_says_what_ctrl_c_does_in_each_script():
    paragraph = README[README.index("What Ctrl-C does"):].split("\n\n")[0]
    for script in ("train.py", "generate.py", "talk.py"):
        assert f"In `{script}`" in paragraph, script
