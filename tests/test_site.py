"""The docs as a site, opened in a real browser (headless Chromium): every page loads with no console
error and no request leaving the site, every formula is typeset, every picture loads, every internal
link and anchor lands, and a citation opens the source at its line. The fixtures (site, browser,
open_site_page) are in conftest.py; without mkdocs, Playwright or Chromium these tests skip, except
under CI."""

import ast
import html
import html.parser
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import site_tools

REPO = Path(__file__).resolve().parent.parent
RAW_TEX = re.compile(r"\$\$|\\\(|\\\[|\\[A-Za-z]+\{|\\(?:frac|sum|mathrm|partial|cdot|odot|sqrt|top|in)\b")


def load_hook():
    """docs/hooks/site.py as a module, to test its pure functions without a build."""
    spec = importlib.util.spec_from_file_location("site_hook", REPO / "docs" / "hooks" / "site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Ids(html.parser.HTMLParser):
    """Every id (and name) an HTML file holds: what a #fragment can land on."""

    def __init__(self, text):
        super().__init__()
        self.ids = set()
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.ids.update(value for key, value in attrs if key in ("id", "name") and value)


@pytest.fixture(scope="module")
def hook():
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip('mkdocs is not installed (pip install -e ".[docs]")')
    return load_hook()


def def_lines(path, name):
    """(def line, last line) of a module-level def of a repository file, read with ast."""
    tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
    node = next(n for n in tree.body if getattr(n, "name", None) == name)
    return node.lineno, node.end_lineno


def test_citations_become_links_to_their_line_outside_code(hook):
    first, last = def_lines("transformer.py", "linear_backward")
    dx = line_of("transformer.py", "    dx = dout @ W.T")
    title = '"linear_backward in transformer.py"'
    text = ("`dx = dout @ W.T` (transformer.py::linear_backward) and transformer.py::linear_backward, "
            "but not `transformer.py::forward`")
    assert hook.link_citations(text, [], "index.md") == (
        f"`dx = dout @ W.T` ([transformer.py:{dx}](source/transformer.py.md#L{dx} {title}){{.citation}}) and "
        f"[transformer.py:{first}-{last}](source/transformer.py.md?lines={first}-{last}#L{first} {title}){{.citation}}"
        f", but not `transformer.py::forward`")
    row = "| dx | computes it | transformer.py::linear_backward | `dx = dout @ W.T` |"
    assert hook.link_citations(row, [], "04-mlp.md") == (
        f"| dx | computes it | [transformer.py:{dx}](source/transformer.py.md#L{dx} {title}){{.citation}} | "
        f"`dx = dout @ W.T` |")
    test = "test_clip_scales_to_max_norm_when_larger"
    first, last = def_lines("tests/test_optim.py", test)
    assert hook.link_citations(f"tests/test_optim.py::{test}", [], "engineering/runs.md") == (
        f"[tests/test_optim.py:{first}-{last}](../source/tests/test_optim.py.md?lines={first}-{last}#L{first} "
        f'"{test} in tests/test_optim.py"){{.citation}}')


def test_citations_in_fenced_code_stay_text(hook):
    page = type("Page", (), {"file": type("File", (), {"src_uri": "01-x.md"})()})()
    first, last = def_lines("train.py", "clip_grad_norm")
    _, returned = def_lines("train.py", "lr_schedule")  # its last line, a return
    code = (REPO / "train.py").read_text(encoding="utf-8").splitlines()[returned - 1]
    markdown = (f"see train.py::clip_grad_norm\n\ntrain.py::lr_schedule\n```python\n{code}\n```\n\n"
                f"```python\nx = 1  # train.py::lr_schedule\n```\n")
    assert hook.on_page_markdown(markdown, page, None, None) == (
        f'see [train.py:{first}-{last}](source/train.py.md?lines={first}-{last}#L{first} "clip_grad_norm in train.py")'
        f'{{.citation}}\n\n[train.py:{returned}](source/train.py.md#L{returned} "lr_schedule in train.py"){{.citation}}'
        f"\n```python\n{code}\n```\n\n```python\nx = 1  # train.py::lr_schedule\n```\n")


def test_a_citation_that_does_not_resolve_stays_text_and_is_a_warning(hook, caplog):
    missing = "see transformer.py::no_such_function"
    assert hook.link_citations(missing, [], "index.md") == missing
    assert ("index.md: the citation transformer.py::no_such_function does not resolve: transformer.py defines no "
            "no_such_function") in caplog.text
    block = ["```python", "    dx = dout @ W.T + 1", "```"]
    quote = "transformer.py::linear_backward"
    assert hook.link_citations(quote, block, "04-mlp.md") == quote
    assert "the code block's line 1, `dx = dout @ W.T + 1`, is not in linear_backward" in caplog.text


def test_highlighted_lines_keep_the_files_lines(hook):
    code = 'x = """a\n\nb"""\n\ny = 2  # two\n'
    lines = hook.highlighted_lines(code)
    assert len(lines) == 5
    assert [html.unescape(re.sub("<[^>]+>", "", line)) for line in lines] == ['x = """a', "", 'b"""', "", "y = 2  # two"]


def test_a_broken_anchor_fails_the_strict_build(tmp_path):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip('mkdocs or mkdocs-material is not installed (pip install -e ".[docs]")')
    shutil.copytree(REPO, tmp_path / "repo", ignore=shutil.ignore_patterns(".git", "checkpoints", "data", "site", "*venv", "__pycache__", ".*_cache"))
    page = tmp_path / "repo" / "docs" / "index.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [nowhere](01-embeddings.md#no-such-heading).\n",
                    encoding="utf-8")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "out")],
                           capture_output=True, text=True, cwd=tmp_path / "repo",
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode != 0
    assert "does not contain an anchor '#no-such-heading'" in built.stderr


VISIBLE_TEXT = """() => {
    const body = document.querySelector("article") || document.body;
    const copy = body.cloneNode(true);
    copy.querySelectorAll("pre, code, script, style, mjx-container").forEach(e => e.remove());
    return copy.textContent;
}"""

MATH = """() => [...document.querySelectorAll(".arithmatex")].map(e => ({
    tex: e.textContent.slice(0, 80),
    typeset: e.querySelector("mjx-container") !== null,
    error: e.querySelector("mjx-merror") !== null,
}))"""

IMAGES = """async () => Promise.all([...document.images].map(async img => {
    img.loading = "eager";
    try { await img.decode(); } catch (error) {}
    return {src: img.getAttribute("src"), width: img.naturalWidth};
}))"""

LINKS = "() => [...document.querySelectorAll('a[href]')].map(a => a.href)"

SOURCE_LINES = """() => [...document.querySelectorAll(".source-line")].map(e => {
    const copy = e.cloneNode(true);
    copy.querySelector(".source-lineno").remove();
    return [e.id, copy.textContent.replace(/\\n$/, "")];
})"""


@pytest.fixture(scope="module")
def tour(site, open_site_page):
    """Every page of the site opened once: {path: what the checks below read from it}."""
    seen = {}
    for path in site.pages():
        visit = open_site_page(path)
        seen[path] = {"errors": visit.errors, "foreign": visit.foreign_requests, "math": visit.page.evaluate(MATH),
                      "text": visit.page.evaluate(VISIBLE_TEXT), "images": visit.page.evaluate(IMAGES),
                      "links": visit.page.evaluate(LINKS), "source lines": visit.page.evaluate(SOURCE_LINES)}
        visit.page.close()
    print(f"{len(seen)} pages, built in {site.build_seconds:.1f} s")
    return seen


def test_every_page_loads_with_no_console_error_and_nothing_from_outside(tour):
    problems = {path: {"console errors": page["errors"], "requests leaving the site": page["foreign"]}
                for path, page in tour.items() if page["errors"] or page["foreign"]}
    assert not problems, problems
    assert "01-embeddings/" in tour and "source/transformer.py/" in tour


def test_every_formula_is_typeset_and_none_left_as_tex(tour):
    problems = {}
    for path, page in tour.items():
        untypeset = [m["tex"] for m in page["math"] if not m["typeset"] or m["error"]]
        raw = [] if path.startswith("source/") else sorted({m[0] for m in RAW_TEX.finditer(page["text"])})
        if untypeset or raw:
            problems[path] = {"formulas not typeset or in error": untypeset, "TeX left in the text": raw}
    assert not problems, problems
    formulas = sum(len(page["math"]) for page in tour.values())
    assert formulas > 100, f"only {formulas} formulas in the whole site: is arithmatex still marking them?"


def test_every_picture_loads(tour):
    broken = {path: bad for path, page in tour.items() if (bad := [i["src"] for i in page["images"] if i["width"] == 0])}
    assert not broken, broken


def test_every_internal_link_and_anchor_resolves(site, tour):
    broken, checked, ids = {}, 0, {}
    for path, page in tour.items():
        for href in page["links"]:
            if not href.startswith(site.origin + "/"):
                continue  # a link out of the site is a link, not a request, and there is no network to check it
            target = site.file(href)
            fragment = href.split("#", 1)[1] if "#" in href else ""
            if target is not None and target.suffix == ".html" and fragment and target not in ids:
                ids[target] = Ids(target.read_text(encoding="utf-8")).ids
            if target is None or (fragment and target.suffix == ".html" and fragment not in ids[target]):
                broken.setdefault(path, []).append(href[len(site.origin):])
            checked += 1
    assert not broken, broken
    assert checked > 1000, f"only {checked} internal links: are the citations still links?"


def test_every_rendered_source_line_is_the_files_line(tour):
    sources = [path for path in tour if path.startswith("source/")]
    assert "source/transformer.py/" in sources
    for path in sources:
        lines = (REPO / path[len("source/"):].rstrip("/")).read_text(encoding="utf-8").splitlines()
        assert tour[path]["source lines"] == [[f"L{n}", line] for n, line in enumerate(lines, 1)], path


def line_of(path, text):
    """The number of the first line of a repository file that starts with `text`."""
    lines = (REPO / path).read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.startswith(text))


def test_a_citation_opens_the_source_at_its_line_with_its_range_lit(open_site_page):
    first, last = def_lines("transformer.py", "embed_forward")  # the page quotes it whole
    visit = open_site_page("01-embeddings/")
    citation = visit.page.locator(f"a.citation[title='embed_forward in transformer.py']"
                                  f":text-is('transformer.py:{first}-{last}')").first
    citation.click()
    visit.page.wait_for_url(f"**/source/transformer.py/?lines={first}-{last}#L{first}")
    target = visit.page.locator(":target")
    assert target.get_attribute("id") == f"L{first}"
    assert "def embed_forward(" in target.inner_text()
    top = target.evaluate("e => e.getBoundingClientRect().top")
    assert 0 <= top < visit.page.viewport_size["height"], "the cited line is not on the screen"
    lit = visit.page.evaluate("""() => [...document.querySelectorAll(".source-line")]
        .filter(e => getComputedStyle(e).backgroundColor !== "rgba(0, 0, 0, 0)").map(e => e.id)""")
    assert lit == [f"L{n}" for n in range(first, last + 1)]
    visit.page.close()


def expected_numbering(site, paths):
    """From the built pages' HTML, in order: how many display equations, and the numbers each
    'Where is it used?' should name (those since the previous one on the same page)."""
    count, notes = 0, []
    for path in paths:
        html_text = (site.root / path / "index.html").read_text(encoding="utf-8")
        article = html_text[html_text.index("<article"): html_text.index("</article>")]
        covered = []
        for match in re.finditer(r'<div class="arithmatex">|<h3 id="[^"]*">Where is it used\?', article):
            if match[0].startswith("<div"):
                count += 1
                covered.append(count)
            else:
                notes.append(covered)
                covered = []
    return count, notes


BOOK_LINKS = """() => [...document.querySelectorAll(".pdf-book a[href^='#']")]
    .map(a => a.getAttribute("href")).filter(href => !document.getElementById(href.slice(1)))"""
EQUATION_LABELS = """() => [...document.querySelectorAll("mjx-container[display=true]")]
    .map(e => e.querySelector("mjx-labels mjx-mtd")?.id)"""


def test_the_pdf_numbers_every_equation_and_each_where_is_it_used_names_its_own(site, open_site_page, tmp_path):
    from mkdocs.config import load_config

    import make_pdf

    paths = make_pdf.learners_path(load_config(str(REPO / "mkdocs.yml")).nav)
    assert paths[:2] == ["", "01-embeddings/"] and "11-pytorch/" in paths
    assert not [path for path in paths if path.startswith(("engineering/", "source/"))]
    equations, notes = expected_numbering(site, paths)
    visit = open_site_page("")
    book = make_pdf.assemble(visit.page, paths)
    assert book["errors"] == [] and book["equations"] == equations > 100
    assert [where["equations"] for where in book["whereUsed"]] == notes and len(notes) > 20
    assert visit.page.evaluate(EQUATION_LABELS) == [f"mjx-eqn:{n}" for n in range(1, equations + 1)]
    for note, numbers in zip(visit.page.locator(".pdf-equations").all_inner_texts(), notes):
        assert f"({numbers[0]})" in note and f"({numbers[-1]})" in note if numbers else note == "No numbered equation."
    assert visit.page.evaluate(BOOK_LINKS) == [], "links inside the PDF that land nowhere"
    make_pdf.print_pdf(visit.page, tmp_path / "book.pdf")
    pdf = (tmp_path / "book.pdf").read_bytes()
    assert pdf.startswith(b"%PDF-") and len(re.findall(rb"/Type\s*/Page\b", pdf)) > 5 * len(paths)
    assert visit.errors == [] and visit.foreign_requests == []
    visit.page.close()


def test_make_pdf_refuses_a_folder_that_is_not_there_in_one_line(tmp_path):
    ran = subprocess.run([sys.executable, str(REPO / "docs" / "make_pdf.py"), "--out", str(tmp_path / "no" / "x.pdf")],
                         capture_output=True, text=True)
    assert ran.returncode == 2 and ran.stdout == ""
    assert ran.stderr == f"error: --out {tmp_path}/no/x.pdf: there is no folder {tmp_path}/no to write the PDF in\n"


def test_a_missing_tool_skips_with_its_reason_and_fails_under_ci(monkeypatch):
    from conftest import missing

    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="^no Chromium at /nowhere$"):
        missing("no Chromium at /nowhere")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true: the browser tests must run"):
        missing("no Chromium at /nowhere")


# A picture's smallest label as the screen shows it: the SVG is loaded inline at the width its <img> is
# drawn at, and each <text>'s font size is scaled by (drawn width / viewBox width).
SMALLEST_LABELS = """async () => Promise.all([...document.querySelectorAll("article img[src$='.svg']")].map(async img => {
    img.loading = "eager";
    await img.decode().catch(() => {});
    const svg = new DOMParser().parseFromString(await (await fetch(img.src)).text(), "image/svg+xml").documentElement;
    const drawn = img.getBoundingClientRect().width;
    const inline = document.body.appendChild(document.importNode(svg, true));
    const scale = drawn / inline.viewBox.baseVal.width;
    const sizes = [...inline.querySelectorAll("text")].map(t => parseFloat(getComputedStyle(t).fontSize) * scale);
    inline.remove();
    const link = img.closest("a");
    return {src: img.getAttribute("src"), smallest: Math.min(...sizes), labels: sizes.length,
            link: link ? new URL(link.getAttribute("href"), location.href).href === img.src : false};
}))"""


@pytest.mark.parametrize("width", [1280, 400])
def test_every_pictures_labels_read_at_10_px_and_it_opens_full_size(site, browser, width):
    seen, small = {}, {}
    for path in site.pages():
        if path.startswith("source/"):
            continue
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.goto(site.url(path), wait_until="load")
        site_tools.typeset(page)
        for picture in page.evaluate(SMALLEST_LABELS):
            seen[picture["src"].rsplit("/", 1)[-1]] = round(picture["smallest"], 1)
            assert picture["labels"] > 0 and picture["link"], f"{path}: {picture['src']} is not a link to itself"
            if picture["smallest"] < 10 - 1e-3:  # a viewBox is read as 32-bit floats
                small[picture["src"]] = round(picture["smallest"], 1)
        assert page.evaluate("document.scrollingElement.scrollWidth") <= width + 2, f"{path}: a picture widens the page"
        page.close()
    print(f"smallest label per picture at {width} px: {seen}")
    assert {"model.svg", "attention.svg", "block.svg", "next_token.svg"} <= set(seen), seen
    assert not small, f"labels under 10 px on screen: {small}"


TOC_AND_FOLDS = """() => ({
    toc: [...document.querySelectorAll("nav.md-nav--secondary a.md-nav__link")].map(a => a.hash.slice(1)),
    folded: [...document.querySelectorAll("article details :is(h2, h3, h4)[id]")].map(h => h.id),
    sections: [...document.querySelectorAll("article > h2[id]")].map(h => h.id),
})"""


def test_the_table_of_contents_leaves_out_the_headings_inside_folds(open_site_page):
    for path in ("01-embeddings/", "03-attention/"):
        visit = open_site_page(path)
        seen = visit.page.evaluate(TOC_AND_FOLDS)
        assert len(seen["folded"]) > 5, "no headings inside <details> left to check"
        assert not set(seen["toc"]) & set(seen["folded"]), f"{path}: folded headings in the table of contents"
        assert set(seen["sections"]) <= set(seen["toc"]), f"{path}: a section is missing from the table of contents"
        visit.page.goto(visit.page.url.split("#")[0] + "#" + seen["folded"][0])  # a folded heading's anchor still lands
        assert visit.page.evaluate(f"document.getElementById({seen['folded'][0]!r}) !== null")
        visit.page.close()


# the words a learner reads on a page, as Chromium shows it: the article's text with the folded <details> closed
# (only their summaries show), without code blocks and formulas
VISIBLE_WORDS = """() => { const article = document.querySelector("article").cloneNode(true);
  article.querySelectorAll("pre, .arithmatex, mjx-container, script, style, .headerlink").forEach(e => e.remove());
  article.querySelectorAll("details").forEach(d => [...d.children].forEach(c => c.tagName !== "SUMMARY" && c.remove()));
  return article.textContent.split(/\\s+/).filter(word => word.length).length; }"""
LESSONS = ["01-embeddings/", "02-layernorm/", "03-attention/", "04-mlp/", "05-block/", "06-output/", "07-model/"]


def test_the_lessons_are_read_in_at_most_20000_words_and_the_start_page_in_2500(open_site_page):
    words = {}
    for path in ["", *LESSONS]:
        visit = open_site_page(path)
        words[path or "index"] = visit.page.evaluate(VISIBLE_WORDS)
        visit.page.close()
    print(f"\nvisible words: {words}, pages 1-7: {sum(words[p] for p in LESSONS):,}")
    assert sum(words[path] for path in LESSONS) <= 20_000, words
    assert words["index"] <= 2_500, words
