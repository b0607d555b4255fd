"""The pictures of the docs stay true: each one a page shows exists, each one in docs/figures/ is
shown, none is stale, and make_figures.py refuses bad input in one line.

docs/make_figures.py draws every picture from one checkpoint and records in docs/figures.json the
sha256 of the numbers each was drawn from; the SVG carries that sha256 and the checkpoint's
model.npz sha256 in its description. A picture is stale when either differs from figures.json, or
when the project's code, run again on the settings figures.json records, no longer gives the
numbers it was drawn from. None of this needs matplotlib or the checkpoint.
"""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
PICTURES = DOCS / "figures"
sys.path.insert(0, str(DOCS))
import make_figures  # noqa: E402

EMBED = re.compile(r"!\[([^\]]*)\]\(((?:\.\./)*figures/([\w-]+)\.svg)\)")
DESCRIPTION = re.compile(r"<dc:description>model\.npz sha256 (\w+); data sha256 (\w+)</dc:description>")


def figures_json():
    return json.loads((DOCS / "figures.json").read_text(encoding="utf-8"))


def embeds():
    """(page, line number, alt text, the path as written, picture name, the lines after it) of every picture."""
    for page in sorted(DOCS.rglob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            for match in EMBED.finditer(line):
                yield page, number, match[1], match[2], match[3], lines[number:]


def where(page, number):
    return f"{page.relative_to(DOCS)}:{number}"


def test_every_picture_a_page_shows_exists():
    found = list(embeds())
    assert found, "no page shows a picture"
    for page, number, alt, path, _, _ in found:
        assert (page.parent / path).is_file(), f"{where(page, number)} shows {path}, which is missing"
        assert alt.strip(), f"{where(page, number)}: the picture has no alt text"


def test_every_picture_is_shown_and_recorded():
    shown = {name for *_, name, _ in embeds()}
    drawn = {svg.stem for svg in PICTURES.glob("*.svg")}
    recorded = set(figures_json()["pictures"])
    assert drawn - shown == set(), f"pictures no page shows: {sorted(drawn - shown)}"
    assert drawn == recorded, f"docs/figures/ holds {sorted(drawn)}, docs/figures.json records {sorted(recorded)}"
    assert recorded == set(make_figures.PICTURES), "docs/figures.json was not written by this make_figures.py"


def test_every_picture_carries_the_checkpoint_and_the_numbers_of_figures_json():
    record = figures_json()
    model_sha256 = record["provenance"]["model.npz sha256"]
    for name, picture in record["pictures"].items():
        svg = (DOCS / picture["file"]).read_text(encoding="utf-8")
        found = DESCRIPTION.search(svg)
        assert found, f"{picture['file']} carries no provenance: draw it with python docs/make_figures.py"
        assert found[1] == model_sha256, f"{picture['file']} was drawn from another checkpoint than figures.json's"
        assert found[2] == picture["data sha256"], f"{picture['file']} was drawn from other numbers than figures.json's"
        assert f"<title>{picture['title']}</title>" in svg, f"{picture['file']}: its title is not figures.json's"
        assert "<dc:date>" not in svg, f"{picture['file']} carries a date, so redrawing it changes it"


def code_only_pictures(record):
    """The numbers of the pictures that need no checkpoint, from the project's code and the settings and
    figures that figures.json records."""
    return make_figures.code_only_data(record)


@pytest.mark.parametrize("name", make_figures.CODE_ONLY)
def test_a_picture_that_needs_no_checkpoint_shows_what_the_code_computes_now(name):
    record = figures_json()
    assert make_figures.data_sha256(code_only_pictures(record)[name]) == record["pictures"][name]["data sha256"], (
        f"the code now computes other numbers for docs/figures/{name}.svg: run python docs/make_figures.py")


def test_data_sha256_sees_a_changed_number_a_changed_shape_and_a_changed_label():
    base = {"x": np.array([1.0, 2.0]), "labels": ["a", "b"]}
    digest = make_figures.data_sha256(base)
    assert make_figures.data_sha256({**base, "x": np.array([1.0, 2.001])}) != digest
    assert make_figures.data_sha256({**base, "x": np.array([[1.0, 2.0]])}) != digest
    assert make_figures.data_sha256({**base, "labels": ["a", "c"]}) != digest
    assert make_figures.data_sha256({"x": np.array([1.0, 2.0]), "labels": ["a", "b"]}) == digest


def test_every_picture_has_a_caption_and_its_run_folded_below_it():
    # the caption says what to see; where the picture comes from (the run, an internal name) is folded
    run = figures_json()["provenance"]["run"]
    for page, number, _, path, _, after in embeds():
        caption = next((line for line in after if line.strip()), "")
        assert caption.startswith("*") and caption.rstrip().endswith("*"), (
            f"{where(page, number)}: {path} needs a caption in italics on the next paragraph")
        assert run not in caption and "figures.json" not in caption, (
            f"{where(page, number)}: the caption of {path} shows its provenance; fold it below the caption")
        folds = re.findall(r"<details.*?</details>", "\n".join(after), re.S)
        assert any(f"run {run}" in fold for fold in folds), (
            f"{where(page, number)}: a fold below {path} should say it was drawn from run {run}")


def test_a_redrawn_picture_is_byte_identical():
    pytest.importorskip("matplotlib", reason="drawing needs matplotlib (pip install -e '.[plot]')")
    data = make_figures.gelu_data()
    first, second = (make_figures.svg_bytes(make_figures.draw_gelu(data), "GELU", "m", "d") for _ in range(2))
    assert first == second
    assert b"<dc:description>model.npz sha256 m; data sha256 d</dc:description>" in first


def written_docs():
    """Every file make_figures.py writes, with its bytes, and any temporary file it left."""
    paths = [DOCS / "figures.json", *PICTURES.glob("*.svg"), *PICTURES.glob(".*"), *DOCS.glob(".figures.json*")]
    return {path: path.read_bytes() for path in paths}


def run_make_figures(folder):
    before = written_docs()
    result = subprocess.run([sys.executable, str(DOCS / "make_figures.py"), "--checkpoint", str(folder)],
                            capture_output=True, text=True, timeout=300)
    assert written_docs() == before, "make_figures.py wrote something though it failed"
    return result


def test_no_checkpoint_is_one_line_and_exit_2_and_writes_nothing(tmp_path):
    result = run_make_figures(tmp_path / "nothing-here")
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "no model in" in result.stderr and "python train.py" in result.stderr


def named_corpus(tmp_path, tiny_checkpoint, corpus):
    """A copy of the tiny checkpoint whose model.json names `corpus` as the corpus it was trained on."""
    folder = tmp_path / "model"
    shutil.copytree(tiny_checkpoint, folder)
    meta = json.loads((folder / "model.json").read_text(encoding="utf-8"))
    meta["corpus"]["path"] = str(corpus)
    (folder / "model.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def test_a_checkpoint_of_another_corpus_is_one_line_and_exit_2_and_writes_nothing(tmp_path, tiny_checkpoint):
    other = tmp_path / "other.txt"
    other.write_text("a text the model was never trained on\n", encoding="utf-8")
    result = run_make_figures(named_corpus(tmp_path, tiny_checkpoint, other))
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert f"{other} is not the corpus" in result.stderr


def test_a_checkpoint_whose_corpus_is_gone_is_one_line_and_exit_2(tmp_path, tiny_checkpoint):
    result = run_make_figures(named_corpus(tmp_path, tiny_checkpoint, tmp_path / "gone.txt"))
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "gone.txt, which is not there" in result.stderr
